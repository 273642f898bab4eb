#include <catch2/catch.hpp>
#include "poseidon/presets.hpp"
TEST_CASE("presets are embedded", "[presets]") { REQUIRE(!poseidon::preset_ids("devices").empty()); }
