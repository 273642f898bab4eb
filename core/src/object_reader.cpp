// ObjectReader (poseidon/json_util.hpp): typed, range-checked reads of one JSON object's keys,
// each problem recorded with its path, the value and what is allowed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "poseidon/json_util.hpp"

namespace poseidon {

ObjectReader::ObjectReader(const Json& object, std::string path, Problems& problems)
    : object_(object), path_(std::move(path)), problems_(problems), is_object_(object.is_object()) {
    if (!is_object_) problems_.add(path_, describe(object) + "; expected an object");
}

bool ObjectReader::has(const char* key) const { return is_object_ && object_.contains(key); }

const Json* ObjectReader::get(const char* key) const {
    if (!is_object_) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
}

std::string ObjectReader::path_of(const char* key) const { return key_path(path_, key); }

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
        problems_.add(path_of(key), describe(*v) + "; " + range);
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
    // "<= 1000000", not "<= 1000000.0"
    auto range = std::string("expected a finite number ") + (min_inclusive ? ">= " : "> ") + number_text(min) + " and <= " + number_text(max);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; " + range);
        return std::nullopt;
    }
    if (!v->is_number()) {
        problems_.add(path_of(key), describe(*v) + "; " + range);
        return std::nullopt;
    }
    double d = v->get<double>();
    if (!std::isfinite(d) || (min_inclusive ? d < min : d <= min) || d > max) {
        problems_.add(path_of(key), show(*v) + " is out of range; " + range);
        return std::nullopt;
    }
    // Every key that must be > 0 is a rate, a time, a size or a fraction that the model divides by:
    // 1e-320 TFLOP/s passed "> 0" and gave an iteration of inf s (and null in JSON). Nothing physical
    // is below 1e-9 in the units the keys carry, and at 1e-9 the arithmetic stays finite.
    if (min == 0 && !min_inclusive && d < kSmallestPositive) {
        problems_.add(path_of(key), show(*v) + " is out of range; " + range + ", and at least " + number_text(kSmallestPositive) +
                                        " (a smaller rate, time or fraction is not physical, and the model's arithmetic would overflow)");
        return std::nullopt;
    }
    return d + 0.0;  // -0.0 (allowed only where >= 0 is) becomes +0.0
}

std::optional<bool> ObjectReader::boolean(const char* key, bool required) {
    const Json* v = get(key);
    if (!v) {
        if (required && is_object_) problems_.add(path_of(key), "is missing; expected true or false");
        return std::nullopt;
    }
    if (!v->is_boolean()) {
        problems_.add(path_of(key), describe(*v) + "; expected true or false");
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
        problems_.add(path_of(key), describe(*v) + "; expected a string");
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
        problems_.add(path_of(key), describe(*v) + "; expected one of " + list);
        return std::nullopt;
    }
    auto s = v->get<std::string>();
    for (auto a : allowed)
        if (a == s) return s;
    auto hint = did_you_mean(s, allowed);
    problems_.add(path_of(key), show(*v) + " is not allowed; expected one of " + list + (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    return std::nullopt;
}

void ObjectReader::reject_unknown(std::initializer_list<std::string_view> allowed) { reject_unknown(std::vector<std::string_view>(allowed)); }

void ObjectReader::reject_unknown(const std::vector<std::string_view>& allowed) {
    if (!is_object_) return;
    std::size_t reported = 0, unknown = 0;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
        bool known = std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end();
        if (known) continue;
        if (++unknown > 10) continue;
        ++reported;
        auto hint = did_you_mean(it.key(), std::vector<std::string>(allowed.begin(), allowed.end()));
        problems_.add(key_path(path_, it.key()), "unknown key" + (hint.empty() ? std::string("") : " (did you mean \"" + hint + "\"?)") +
                                                     "; allowed keys are documented in docs/formats.md");
    }
    if (unknown > reported)
        problems_.add(path_, std::to_string(unknown - reported) + " more unknown keys; allowed keys are documented in docs/formats.md");
}

}  // namespace poseidon
