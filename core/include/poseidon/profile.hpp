// Measured-profile mode (docs/formats.md, "Profile"; docs/model.md, "Measured profiles"): parsing
// and the lookup that the cost model uses in place of its analytic estimate.
#pragma once

#include <optional>
#include <string>

#include "poseidon/error.hpp"
#include "poseidon/json_fwd.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// Limits of a profile (docs/formats.md, "Profile").
inline constexpr std::size_t max_profile_devices = 64;
inline constexpr std::size_t max_profile_points = 4096;

// Validates `j` strictly against docs/formats.md and reports every problem with its path. Device
// names must be a device preset id or the id/name of a device in `cluster`.
// `model` (null when it is not valid) lets the points be checked against the cluster devices'
// peak rates: a layer faster than its matrix products at peak is refused.
Profile parse_profile(const Json& j, const std::string& path, const Cluster& cluster, Problems& problems, const ModelSpec* model = nullptr);
Json to_json(const Profile& p);

// Where a number came from. Ordered from least to most measured.
enum class CostSource : std::uint8_t { analytic, interpolated, profile };
const char* to_string(CostSource s);

// The profile entry for a device (matched by preset id, then by name), or null.
const DeviceProfile* find_device_profile(const Profile* profile, const Device& d);

struct ProfiledValue {
    double value_s = 0;
    CostSource source = CostSource::analytic;  // analytic: no usable point, value_s is 0
};

enum class ProfileField : std::uint8_t { layer_forward, layer_backward, embedding_forward, embedding_backward, head_forward, head_backward };

// The measured value at (tp, samples): exact point -> profile; between the two nearest points of
// the same tp that carry the field -> linear interpolation in samples; otherwise analytic.
ProfiledValue profile_lookup(const DeviceProfile* dp, ProfileField field, int tp, int samples);

}  // namespace poseidon
