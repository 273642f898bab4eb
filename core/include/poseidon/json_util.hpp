// Strict JSON reading: size and depth limits, duplicate keys, and typed field readers that report
// the JSON path, the value and what is allowed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "poseidon/error.hpp"
#include "poseidon/json_fwd.hpp"

namespace poseidon {

// Limits documented in docs/formats.md ("Limits").
inline constexpr std::size_t max_json_bytes = 4u << 20;
inline constexpr int max_json_depth = 64;                 // nested arrays/objects
inline constexpr std::size_t max_json_string_bytes = 65536;  // any string value
inline constexpr std::size_t max_json_key_bytes = 256;       // any object key
// 2^53: beyond it an integer read by JavaScript (the page) is no longer exact.
inline constexpr double max_exact_integer = 9007199254740992.0;

// Parses `text` as one JSON value with a strict, non-recursive SAX reader (linear time, bounded
// depth). `what` names the document in messages ("scenario", "plan") and starts every path.
// Rejects, each with an InputError naming the JSON path: empty input, input over max_json_bytes,
// a byte-order mark, nesting deeper than max_json_depth, duplicated keys, integers beyond 2^53,
// numbers that overflow a double (1e999), strings or keys over their limits, and everything
// nlohmann's strict parser rejects (NaN/Infinity literals, invalid UTF-8, comments, trailing
// garbage).
Json parse_json(std::string_view text, const std::string& what);

// Short rendering of a value for messages (at most ~60 bytes, always valid UTF-8).
std::string show(const Json& value);
// A number as JSON writes it (shortest round trip), without the ".0" of a whole one: "1000", "12.5".
std::string number_text(double x);
// A number with `digits` decimals, for text tables and messages: fixed_text(14.6, 2) = "14.60".
std::string fixed_text(double x, int digits);
// "<value> is <type>" for a value of the wrong type; a null is just "is null".
std::string describe(const Json& value);

// `s` made safe for a one-line message: valid UTF-8, control characters and invalid bytes
// escaped, cut (at a character boundary, with "...") to at most about `max_bytes`.
std::string printable(std::string_view s, std::size_t max_bytes = 60);

// `base.key`, or `base["key"]` when the key is not a plain identifier (escaped, shortened).
std::string key_path(const std::string& base, std::string_view key);

// Closest candidate by edit distance, or empty if nothing is close.
std::string did_you_mean(std::string_view word, std::initializer_list<std::string_view> candidates);
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Field readers. Each reports into `problems` and returns std::nullopt on a problem or absence;
// a missing required field is a problem, a missing optional one is not.
class ObjectReader {
public:
    ObjectReader(const Json& object, std::string path, Problems& problems);

    bool ok() const noexcept { return is_object_; }
    bool has(const char* key) const;
    const Json* get(const char* key) const;
    std::string path_of(const char* key) const;

    std::optional<std::int64_t> integer(const char* key, bool required, std::int64_t min, std::int64_t max);
    // A range "> 0" (min 0, exclusive) also refuses values below kSmallestPositive.
    static constexpr double kSmallestPositive = 1e-9;
    std::optional<double> number(const char* key, bool required, double min, bool min_inclusive, double max);
    std::optional<bool> boolean(const char* key, bool required);
    std::optional<std::string> string(const char* key, bool required);
    std::optional<std::string> choice(const char* key, bool required, std::initializer_list<std::string_view> allowed);

    // Reports every key not in `allowed`, with a "did you mean" suggestion.
    void reject_unknown(std::initializer_list<std::string_view> allowed);
    void reject_unknown(const std::vector<std::string_view>& allowed);  // a list assembled from parts

private:
    const Json& object_;
    std::string path_;
    Problems& problems_;
    bool is_object_;
};

}  // namespace poseidon
