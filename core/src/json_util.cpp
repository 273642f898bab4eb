#include "poseidon/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace poseidon {

InputError::InputError(std::vector<Problem> problems)
    : std::runtime_error(problems.empty() ? std::string("invalid input") : problems.front().line()),
      problems_(std::move(problems)) {}

InputError::InputError(std::string path, std::string message)
    : InputError(std::vector<Problem>{{std::move(path), std::move(message)}}) {}

namespace {

std::string type_name(const Json& v) {
    switch (v.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::boolean: return "a boolean";
        case Json::value_t::string: return "a string";
        case Json::value_t::array: return "an array";
        case Json::value_t::object: return "an object";
        case Json::value_t::binary: return "binary";
        case Json::value_t::discarded: return "nothing";
        default: return "a number";
    }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// 2^53: beyond it a JSON number read by JavaScript (the page) is no longer exact.
constexpr double max_exact_integer = 9007199254740992.0;

}  // namespace

std::string show(const Json& value) {
    std::string s;
    try {
        s = value.dump(-1, ' ', false, Json::error_handler_t::replace);
    } catch (...) {
        s = "<unprintable>";
    }
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}

std::string did_you_mean(std::string_view word, std::initializer_list<std::string_view> candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (auto c : candidates) {
        std::size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = std::string(c);
        }
    }
    return best;
}

Json parse_json(std::string_view text, const std::string& what) {
    if (text.size() > max_json_bytes)
        throw InputError(what, std::to_string(text.size()) + " bytes is too large; at most " +
                                   std::to_string(max_json_bytes) + " bytes are accepted");
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw InputError(what, "empty input; expected a JSON object");

    // The parser callback sees every key; one set of keys per open object finds duplicates, which
    // nlohmann would otherwise resolve silently by keeping the last.
    std::vector<std::set<std::string>> open_objects;
    std::vector<Problem> problems;
    auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
        if (depth > max_json_depth)
            throw InputError(what, "nesting deeper than " + std::to_string(max_json_depth) + " levels");
        switch (event) {
            case Json::parse_event_t::object_start: open_objects.emplace_back(); break;
            case Json::parse_event_t::object_end:
                if (!open_objects.empty()) open_objects.pop_back();
                break;
            case Json::parse_event_t::key:
                if (!open_objects.empty() && parsed.is_string()) {
                    const auto& key = parsed.get_ref<const std::string&>();
                    if (!open_objects.back().insert(key).second && problems.size() < 20)
                        problems.push_back({what, "duplicated key \"" + key + "\"; each key may appear once per object"});
                }
                break;
            case Json::parse_event_t::value:
                if (parsed.is_number_float() && !std::isfinite(parsed.get<double>()))
                    problems.push_back({what, "a number overflows a double; numbers must be finite"});
                break;
            default: break;
        }
        return true;
    };
    Json j;
    try {
        j = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    } catch (const Json::parse_error& e) {
        std::string msg = e.what();
        // nlohmann's messages start with "[json.exception.parse_error.101] "; keep the useful part.
        if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
        throw InputError(what, "is not valid JSON: " + msg);
    } catch (const Json::exception& e) {
        throw InputError(what, std::string("is not valid JSON: ") + e.what());
    }
    if (!problems.empty()) throw InputError(problems);
    return j;
}

ObjectReader::ObjectReader(const Json& object, std::string path, Problems& problems)
    : object_(object), path_(std::move(path)), problems_(problems), is_object_(object.is_object()) {
    if (!is_object_) problems_.add(path_, show(object) + " is " + type_name(object) + "; expected an object");
}

bool ObjectReader::has(const char* key) const { return is_object_ && object_.contains(key); }

const Json* ObjectReader::get(const char* key) const {
    if (!is_object_) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
}

std::string ObjectReader::path_of(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

std::optional<std::int64_t> ObjectReader::integer(const char* key, bool required, std::int64_t min, std::int64_t max) {
    const Json* v = get(key);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        return std::nullopt;
    }
    auto range = "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    double d;
    if (v->is_number_integer()) {
        if (v->is_number_unsigned()) {
            auto u = v->get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(max_exact_integer)) {
                problems_.add(path_of(key), show(*v) + " is beyond 2^53; " + range);
                return std::nullopt;
            }
            d = static_cast<double>(u);
        } else {
            d = static_cast<double>(v->get<std::int64_t>());
        }
    } else if (v->is_number_float()) {
        d = v->get<double>();
        if (!std::isfinite(d) || std::floor(d) != d) {
            problems_.add(path_of(key), show(*v) + " is not an integer; " + range);
            return std::nullopt;
        }
    } else {
        problems_.add(path_of(key), show(*v) + " is " + type_name(*v) + "; " + range);
        return std::nullopt;
    }
    if (std::fabs(d) > max_exact_integer) {
        problems_.add(path_of(key), show(*v) + " is beyond 2^53; " + range);
        return std::nullopt;
    }
    if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
        problems_.add(path_of(key), show(*v) + " is out of range; " + range);
        return std::nullopt;
    }
    return static_cast<std::int64_t>(d);
}

std::optional<double> ObjectReader::number(const char* key, bool required, double min, bool min_inclusive, double max) {
    const Json* v = get(key);
    auto fmt = [](double x) {
        std::string s = Json(x).dump();
        return s;
    };
    auto range = std::string("expected a finite number ") + (min_inclusive ? ">= " : "> ") + fmt(min) + " and <= " + fmt(max);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; " + range);
        return std::nullopt;
    }
    if (!v->is_number()) {
        problems_.add(path_of(key), show(*v) + " is " + type_name(*v) + "; " + range);
        return std::nullopt;
    }
    double d = v->get<double>();
    if (!std::isfinite(d) || (min_inclusive ? d < min : d <= min) || d > max) {
        problems_.add(path_of(key), show(*v) + " is out of range; " + range);
        return std::nullopt;
    }
    return d;
}

std::optional<bool> ObjectReader::boolean(const char* key, bool required) {
    const Json* v = get(key);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; expected true or false");
        return std::nullopt;
    }
    if (!v->is_boolean()) {
        problems_.add(path_of(key), show(*v) + " is " + type_name(*v) + "; expected true or false");
        return std::nullopt;
    }
    return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(const char* key, bool required) {
    const Json* v = get(key);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; expected a string");
        return std::nullopt;
    }
    if (!v->is_string()) {
        problems_.add(path_of(key), show(*v) + " is " + type_name(*v) + "; expected a string");
        return std::nullopt;
    }
    auto s = v->get<std::string>();
    if (s.size() > 4096) {
        problems_.add(path_of(key), "a string of " + std::to_string(s.size()) + " bytes is too long; at most 4096");
        return std::nullopt;
    }
    return s;
}

std::optional<std::string> ObjectReader::choice(const char* key, bool required, std::initializer_list<std::string_view> allowed) {
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
    const Json* v = get(key);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; expected one of " + list);
        return std::nullopt;
    }
    if (!v->is_string()) {
        problems_.add(path_of(key), show(*v) + " is " + type_name(*v) + "; expected one of " + list);
        return std::nullopt;
    }
    auto s = v->get<std::string>();
    for (auto a : allowed)
        if (a == s) return s;
    auto hint = did_you_mean(s, allowed);
    problems_.add(path_of(key), show(*v) + " is not allowed; expected one of " + list + (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    return std::nullopt;
}

void ObjectReader::reject_unknown(std::initializer_list<std::string_view> allowed) {
    if (!is_object_) return;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
        bool known = std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end();
        if (known) continue;
        auto hint = did_you_mean(it.key(), allowed);
        problems_.add(path_of(it.key().c_str()), "unknown key" + (hint.empty() ? std::string("") : " (did you mean \"" + hint + "\"?)") +
                                                     "; allowed keys are documented in docs/formats.md");
    }
}

}  // namespace poseidon
