#include "poseidon/json_util.hpp"
#include "poseidon/presets.hpp"

#include <map>
#include <mutex>

namespace poseidon {

namespace {

struct Parsed {
    std::map<std::string, std::map<std::string, Json, std::less<>>, std::less<>> by_kind;
};

const Parsed& parsed() {
    static const Parsed p = [] {
        Parsed out;
        for (const auto& e : embedded_presets()) {
            Json j = parse_json(e.json_text, "presets/" + std::string(e.kind) + "/" + std::string(e.id) + ".json");
            if (j.is_object()) j["id"] = std::string(e.id);
            out.by_kind[std::string(e.kind)][std::string(e.id)] = std::move(j);
        }
        return out;
    }();
    return p;
}

}  // namespace

const Json* find_preset(std::string_view kind, std::string_view id) {
    const auto& p = parsed();
    auto k = p.by_kind.find(kind);
    if (k == p.by_kind.end()) return nullptr;
    auto it = k->second.find(id);
    return it == k->second.end() ? nullptr : &it->second;
}

std::vector<std::string> preset_ids(std::string_view kind) {
    std::vector<std::string> ids;
    const auto& p = parsed();
    if (auto k = p.by_kind.find(kind); k != p.by_kind.end())
        for (const auto& [id, _] : k->second) ids.push_back(id);
    return ids;
}

Json presets_as_json() {
    Json out = Json::object();
    for (const char* kind : {"devices", "models", "clusters", "stacks", "profiles"}) {
        Json arr = Json::array();
        for (const auto& id : preset_ids(kind)) {
            Json p = *find_preset(kind, id);
            if (p.is_object() && !p.contains("id")) p["id"] = id;  // profile files carry no id
            arr.push_back(std::move(p));
        }
        out[kind] = std::move(arr);
    }
    return out;
}

}  // namespace poseidon
