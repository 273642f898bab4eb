// The CLI's input: files (bounded, standard input once), option values, usage errors.
#pragma once

#include <string>
#include <vector>

#include "poseidon/json_fwd.hpp"

namespace poseidon_cli {

// A usage error: printed with the usage text, exit 2.
struct Usage {
    std::string message;
};

// A whole input file, or standard input for "-", as text; refuses what is not a readable regular
// file or stream, or is over max_json_bytes, with an InputError naming `what` ("scenario", "plan").
std::string read_file(const std::string& path, const std::string& what);
// Standard input can be read once.
void check_stdin_once(const std::vector<std::string>& paths);
// The value after an option, or a usage error naming the option.
const std::string& option_value(const std::vector<std::string>& args, std::size_t& i);
// A decimal number (no hex, inf or nan), or a usage error naming the flag.
double parse_double(const std::string& s, const std::string& flag);
// An option's value as JSON: a whole number typed without a point or exponent stays an integer, so
// a message about it echoes what was typed ("2000000", not "2000000.0").
poseidon::Json option_number(const std::string& s, const std::string& flag);
// "a,b,c" as a JSON array of its parts, as strings or, with numbers, as option_number reads each
// (a list option: --precision, --recompute, --recompute-num-layers).
poseidon::Json comma_list(const std::string& s, bool numbers, const std::string& flag);
// "--option=value" as "--option", "value", for every verb and option; a switch given a value is a
// usage error.
std::vector<std::string> split_option_values(const std::vector<std::string>& args);

}  // namespace poseidon_cli
