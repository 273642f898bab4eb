// The Json type for headers that only name it in declarations. They include this, not
// json_util.hpp: nlohmann's full header costs every translation unit that parses it about 2.5 s
// of compile time, and most of the core and its tests never touch a Json value
// (docs/performance.md, "Build time").
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace poseidon {

using Json = nlohmann::json;

}  // namespace poseidon
