#include "poseidon/json_util.hpp"
#include "poseidon/profile.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "poseidon/cost_model.hpp"
#include "poseidon/presets.hpp"

namespace poseidon {

namespace {

constexpr double max_seconds = 1e6;
constexpr double max_bw_GBps = 1e6;

std::optional<double> get_field(const ProfilePoint& p, ProfileField f) {
    switch (f) {
        case ProfileField::layer_forward: return p.layer_forward_s;
        case ProfileField::layer_backward: return p.layer_backward_s;
        case ProfileField::embedding_forward: return p.embedding_forward_s;
        case ProfileField::embedding_backward: return p.embedding_backward_s;
        case ProfileField::head_forward: return p.head_forward_s;
        default: return p.head_backward_s;
    }
}

}  // namespace

const char* to_string(CostSource s) {
    switch (s) {
        case CostSource::profile: return "profile";
        case CostSource::interpolated: return "interpolated";
        default: return "analytic";
    }
}

namespace {
// A measured layer cannot beat its matrix products at the device's dense peak (the attention
// scores are left out: causal kernels skip up to half of them). Checked for the cluster's devices,
// the only ones a plan uses.
void check_point(const ModelSpec& m, const Cluster& cluster, const std::string& device, const ProfilePoint& pt, const ObjectReader& p, Problems& problems) {
    const Device* d = nullptr;
    for (const auto& g : cluster.groups)
        if (g.device.id == device || g.device.name == device) d = &g.device;
    if (!d || d->peak_tflops <= 0) return;
    const double least_s = layer_matmul_flops(m, pt.samples) / pt.tp / (d->peak_tflops * 1e12);
    const auto g3 = [](double x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", x);
        return std::string(buf);
    };
    const auto check = [&](const char* key, double t, double factor) {
        if (t >= factor * least_s) return;
        problems.add(p.path_of(key), show(Json(t)) + " s is faster than the device can compute: one layer's matrix products for " + std::to_string(pt.samples) +
                                         (pt.samples == 1 ? " sample" : " samples") + " at tp " + std::to_string(pt.tp) + " take at least " +
                                         g3(factor * least_s) + " s at " + device + "'s peak of " + g3(d->peak_tflops) +
                                         " TFLOP/s; expected a measured time");
    };
    check("layer_forward_s", pt.layer_forward_s, 1);
    check("layer_backward_s", pt.layer_backward_s, 2);
}
}  // namespace

Profile parse_profile(const Json& j, const std::string& path, const Cluster& cluster, Problems& problems, const ModelSpec* model) {
    Profile prof;
    if (j.is_string()) {
        // A profile preset (presets/profiles/<id>.json).
        const auto& id = j.get_ref<const std::string&>();
        const Json* preset = find_preset("profiles", id);
        if (!preset) {
            std::string ids;
            for (const auto& k : preset_ids("profiles")) ids += (ids.empty() ? "" : ", ") + k;
            problems.add(path, show(j) + " is not a profile preset; expected an inline profile object or one of: " + (ids.empty() ? "(none)" : ids));
            return prof;
        }
        return parse_profile(*preset, path, cluster, problems, model);
    }
    if (!j.is_object()) {
        problems.add(path, show(j) + " is not an object; expected a measured profile (docs/formats.md, Profile) or a profile preset id");
        return prof;
    }
    ObjectReader r(j, path, problems);
    if (!r.ok()) return prof;
    r.reject_unknown({"id", "name", "source", "notes", "devices"});
    if (auto v = r.string("name", false)) prof.name = *v;
    if (auto v = r.string("source", false)) prof.source = *v;
    if (auto v = r.string("notes", false)) prof.notes = *v;
    const Json* devices = r.get("devices");
    if (!devices) {
        problems.add(r.path_of("devices"), "is missing; expected an array of 1 to " + std::to_string(max_profile_devices) + " device profiles");
        return prof;
    }
    if (!devices->is_array() || devices->empty() || devices->size() > max_profile_devices) {
        problems.add(r.path_of("devices"), show(*devices) + " is not allowed; expected an array of 1 to " + std::to_string(max_profile_devices) + " device profiles");
        return prof;
    }
    // Names a profile may use: device preset ids, and the ids and names of the cluster's devices.
    std::set<std::string, std::less<>> known;
    for (const auto& id : preset_ids("devices")) known.insert(id);
    for (const auto& g : cluster.groups) {
        if (!g.device.id.empty()) known.insert(g.device.id);
        if (!g.device.name.empty()) known.insert(g.device.name);
    }
    std::set<std::string, std::less<>> seen_devices;
    std::size_t total_points = 0;
    for (std::size_t i = 0; i < devices->size(); ++i) {
        const std::string dpath = r.path_of("devices") + "[" + std::to_string(i) + "]";
        ObjectReader d((*devices)[i], dpath, problems);
        if (!d.ok()) continue;
        d.reject_unknown({"device", "points", "optimizer_s_per_billion_params", "intra_node_bw_GBps", "inter_node_bw_GBps", "notes"});
        DeviceProfile dp;
        if (auto v = d.string("device", true)) {
            dp.device = *v;
            if (!known.contains(*v))
                problems.add(d.path_of("device"), show(Json(*v)) + " is not a device preset id nor the id or name of a device in the cluster; expected one of those");
            else if (!seen_devices.insert(*v).second)
                problems.add(d.path_of("device"), show(Json(*v)) + " is profiled twice; expected one entry per device type");
        }
        if (auto v = d.number("optimizer_s_per_billion_params", false, 0, false, max_seconds)) dp.optimizer_s_per_billion_params = *v;
        if (auto v = d.number("intra_node_bw_GBps", false, 0, false, max_bw_GBps)) dp.intra_node_bw_GBps = *v;
        if (auto v = d.number("inter_node_bw_GBps", false, 0, false, max_bw_GBps)) dp.inter_node_bw_GBps = *v;
        const Json* points = d.get("points");
        if (points) {
            if (!points->is_array() || points->size() > max_profile_points) {
                problems.add(d.path_of("points"), show(*points) + " is not allowed; expected an array of at most " + std::to_string(max_profile_points) + " points");
                points = nullptr;
            }
        }
        if (points && points->empty() && !dp.optimizer_s_per_billion_params && !dp.intra_node_bw_GBps && !dp.inter_node_bw_GBps)
            problems.add(d.path_of("points"), "is empty; a device profile needs points, optimizer_s_per_billion_params or a measured bandwidth");
        if (!points && !dp.optimizer_s_per_billion_params && !dp.intra_node_bw_GBps && !dp.inter_node_bw_GBps && d.get("points") == nullptr)
            problems.add(d.path_of("points"), "is missing; a device profile needs points, optimizer_s_per_billion_params or a measured bandwidth");
        if (points) {
            std::set<std::pair<int, int>> seen;
            for (std::size_t k = 0; k < points->size(); ++k) {
                const std::string ppath = d.path_of("points") + "[" + std::to_string(k) + "]";
                if (++total_points > max_profile_points) {
                    problems.add(ppath, "is one point too many; at most " + std::to_string(max_profile_points) + " points in a profile");
                    break;
                }
                ObjectReader p((*points)[k], ppath, problems);
                if (!p.ok()) continue;
                p.reject_unknown({"tp", "samples", "layer_forward_s", "layer_backward_s", "embedding_forward_s", "embedding_backward_s", "head_forward_s", "head_backward_s"});
                ProfilePoint pt;
                auto tp = p.integer("tp", true, 1, 1024);
                auto samples = p.integer("samples", true, 1, 1'000'000);
                auto lf = p.number("layer_forward_s", true, 0, false, max_seconds);
                auto lb = p.number("layer_backward_s", true, 0, false, max_seconds);
                pt.embedding_forward_s = p.number("embedding_forward_s", false, 0, true, max_seconds);
                pt.embedding_backward_s = p.number("embedding_backward_s", false, 0, true, max_seconds);
                pt.head_forward_s = p.number("head_forward_s", false, 0, true, max_seconds);
                pt.head_backward_s = p.number("head_backward_s", false, 0, true, max_seconds);
                if (!tp || !samples || !lf || !lb) continue;
                pt.tp = static_cast<int>(*tp);
                pt.samples = static_cast<int>(*samples);
                pt.layer_forward_s = *lf;
                pt.layer_backward_s = *lb;
                if (model) check_point(*model, cluster, dp.device, pt, p, problems);
                if (!seen.insert({pt.tp, pt.samples}).second) {
                    problems.add(ppath, "repeats tp " + std::to_string(pt.tp) + " and samples " + std::to_string(pt.samples) + "; expected one point per (tp, samples)");
                    continue;
                }
                dp.points.push_back(pt);
            }
        }
        std::sort(dp.points.begin(), dp.points.end(), [](const ProfilePoint& a, const ProfilePoint& b) { return a.tp != b.tp ? a.tp < b.tp : a.samples < b.samples; });
        prof.devices.push_back(std::move(dp));
    }
    return prof;
}

Json to_json(const Profile& p) {
    Json devices = Json::array();
    for (const auto& d : p.devices) {
        Json points = Json::array();
        for (const auto& pt : d.points) {
            Json o = {{"tp", pt.tp}, {"samples", pt.samples}, {"layer_forward_s", pt.layer_forward_s}, {"layer_backward_s", pt.layer_backward_s}};
            if (pt.embedding_forward_s) o["embedding_forward_s"] = *pt.embedding_forward_s;
            if (pt.embedding_backward_s) o["embedding_backward_s"] = *pt.embedding_backward_s;
            if (pt.head_forward_s) o["head_forward_s"] = *pt.head_forward_s;
            if (pt.head_backward_s) o["head_backward_s"] = *pt.head_backward_s;
            points.push_back(std::move(o));
        }
        Json o = {{"device", d.device}, {"points", points}};
        if (d.optimizer_s_per_billion_params) o["optimizer_s_per_billion_params"] = *d.optimizer_s_per_billion_params;
        if (d.intra_node_bw_GBps) o["intra_node_bw_GBps"] = *d.intra_node_bw_GBps;
        if (d.inter_node_bw_GBps) o["inter_node_bw_GBps"] = *d.inter_node_bw_GBps;
        devices.push_back(std::move(o));
    }
    Json j = {{"devices", devices}};
    if (!p.name.empty()) j["name"] = p.name;
    if (!p.source.empty()) j["source"] = p.source;
    if (!p.notes.empty()) j["notes"] = p.notes;
    return j;
}

const DeviceProfile* find_device_profile(const Profile* profile, const Device& d) {
    if (!profile) return nullptr;
    if (!d.id.empty())
        for (const auto& dp : profile->devices)
            if (dp.device == d.id) return &dp;
    for (const auto& dp : profile->devices)
        if (dp.device == d.name) return &dp;
    // a device derived from a preset ({"base": id, ...}: the same GPU, e.g. calibrated) takes its profile
    if (!d.base_id.empty())
        for (const auto& dp : profile->devices)
            if (dp.device == d.base_id) return &dp;
    return nullptr;
}

ProfiledValue profile_lookup(const DeviceProfile* dp, ProfileField field, int tp, int samples) {
    if (!dp) return {};
    const ProfilePoint* below = nullptr;
    const ProfilePoint* above = nullptr;
    for (const auto& p : dp->points) {  // sorted by (tp, samples)
        if (p.tp != tp || !get_field(p, field)) continue;
        if (p.samples == samples) return {*get_field(p, field), CostSource::profile};
        if (p.samples < samples) below = &p;
        if (p.samples > samples && !above) above = &p;
    }
    if (below && above) {
        const double x0 = below->samples, x1 = above->samples, y0 = *get_field(*below, field), y1 = *get_field(*above, field);
        return {y0 + (y1 - y0) * (samples - x0) / (x1 - x0), CostSource::interpolated};
    }
    return {};
}

}  // namespace poseidon
