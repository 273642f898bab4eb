#include "cli_args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <stdexcept>

#include "poseidon/error.hpp"
#include "poseidon/json_util.hpp"

namespace poseidon_cli {

namespace {

// Never more than max_json_bytes + 1 bytes, so /dev/zero, a FIFO or an endless pipe cannot exhaust
// memory (parse_json then reports the size).
std::string read_bounded(std::istream& in) {
    std::string data;
    char buf[1 << 16];
    const std::size_t cap = poseidon::max_json_bytes + 1;
    while (data.size() < cap && in) {
        in.read(buf, static_cast<std::streamsize>(std::min(sizeof buf, cap - data.size())));
        data.append(buf, static_cast<std::size_t>(in.gcount()));
    }
    return data;
}

}  // namespace

std::string read_file(const std::string& path, const std::string& what) {
    const std::string shown = "\"" + poseidon::printable(path, 200) + "\"";
    if (path == "-") {
        std::string data = read_bounded(std::cin);
        if (std::cin.bad()) throw poseidon::InputError(what, "cannot read standard input");
        if (data.size() > poseidon::max_json_bytes)
            throw poseidon::InputError(what, "standard input is over " + std::to_string(poseidon::max_json_bytes) + " bytes; at most " +
                                                 std::to_string(poseidon::max_json_bytes) + " bytes (4 MiB) are accepted");
        return data;
    }
    if (path.empty()) throw poseidon::InputError(what, "an empty file name; expected a path to a JSON file or \"-\" for standard input");
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        throw poseidon::InputError(what, "cannot read file " + shown + ": " + (ec ? ec.message() : std::string("no such file or directory")));
    if (std::filesystem::is_directory(st)) throw poseidon::InputError(what, shown + " is a directory; expected a JSON file");
    if (std::filesystem::is_regular_file(st)) {
        const auto size = std::filesystem::file_size(path, ec);
        if (!ec && size > poseidon::max_json_bytes)
            throw poseidon::InputError(what, "file " + shown + " is " + std::to_string(size) + " bytes; at most " + std::to_string(poseidon::max_json_bytes) +
                                                 " bytes (4 MiB) are accepted");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw poseidon::InputError(what, "cannot read file " + shown + ": " + std::strerror(errno));
    std::string data = read_bounded(in);
    if (in.bad()) throw poseidon::InputError(what, "cannot read file " + shown + ": " + std::strerror(errno));
    if (data.size() > poseidon::max_json_bytes)
        throw poseidon::InputError(what, "file " + shown + " is over " + std::to_string(poseidon::max_json_bytes) + " bytes; at most " +
                                             std::to_string(poseidon::max_json_bytes) + " bytes (4 MiB) are accepted");
    return data;
}

void check_stdin_once(const std::vector<std::string>& paths) {
    int n = 0;
    for (const auto& p : paths) n += p == "-";
    if (n > 1) throw Usage{"\"-\" (standard input) may be given for one file only"};
}

const std::string& option_value(const std::vector<std::string>& args, std::size_t& i) {
    if (i + 1 >= args.size()) throw Usage{args[i] + " needs a value"};
    return args[++i];
}

double parse_double(const std::string& s, const std::string& flag) {
    // decimal only: std::stod also reads hex ("0x10"), inf and nan
    static const std::regex decimal(R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
    if (s.size() > 64 || !std::regex_match(s, decimal)) throw Usage{flag + ": \"" + poseidon::printable(s, 60) + "\" is not a decimal number"};
    try {
        std::size_t n = 0;
        double v = std::stod(s, &n);
        if (n != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
        return v;
    } catch (...) {
        throw Usage{flag + ": \"" + poseidon::printable(s, 60) + "\" is not a finite number"};
    }
}

poseidon::Json option_number(const std::string& s, const std::string& flag) {
    const double v = parse_double(s, flag);
    static const std::regex whole(R"([+-]?[0-9]{1,15})");
    if (std::regex_match(s, whole)) return static_cast<std::int64_t>(v);
    return v;
}

poseidon::Json comma_list(const std::string& s, bool numbers, const std::string& flag) {
    poseidon::Json list = poseidon::Json::array();
    for (std::size_t at = 0;;) {
        const std::size_t comma = s.find(',', at);
        const std::string part = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        list.push_back(numbers ? option_number(part, flag) : poseidon::Json(part));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return list;
}

std::vector<std::string> split_option_values(const std::vector<std::string>& args) {
    static const std::set<std::string> switches = {"--json", "--exhaustive", "--tp-per-stage", "--split-nodes", "--empty-stages", "--mixed-stages"};
    std::vector<std::string> out;
    for (const std::string& a : args) {
        const std::size_t eq = a.find('=');
        if (a.rfind("--", 0) == 0 && eq != std::string::npos && eq > 2) {
            if (switches.count(a.substr(0, eq))) throw Usage{a.substr(0, eq) + " takes no value"};
            out.push_back(a.substr(0, eq));
            out.push_back(a.substr(eq + 1));
        } else {
            out.push_back(a);
        }
    }
    return out;
}

}  // namespace poseidon_cli
