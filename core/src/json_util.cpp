#include "poseidon/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if it is not one (overlong
// forms, surrogates and code points beyond U+10FFFF are invalid).
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) return 1;
    std::size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (i + n > s.size()) return 0;
    if (b(i + 1) < lo || b(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
    return n;
}

bool is_identifier(std::string_view k) {
    if (k.empty() || k.size() > 64) return false;
    for (std::size_t i = 0; i < k.size(); ++i) {
        const char c = k[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (!alpha && !(i > 0 && (digit || c == '-'))) return false;
    }
    return true;
}

// Builds the document from nlohmann's SAX events without recursion, tracking the JSON path of the
// value being read, so that every problem (duplicate key, huge integer, overflow, syntax error)
// names where it is. Linear in the input: nlohmann's callback parser rescans the parent container
// on every object end, which is quadratic on [{},{},...].
class StrictReader {
public:
    StrictReader(Json& root, const std::string& what, std::vector<Problem>& problems) : root_(root), what_(what), problems_(problems) {}

    bool null() { return value(Json(nullptr)) != nullptr; }
    bool boolean(bool b) { return value(Json(b)) != nullptr; }
    bool number_integer(Json::number_integer_t v) {
        if (v < -static_cast<Json::number_integer_t>(max_exact_integer)) add(here(), std::to_string(v) + " is beyond -2^53; integers must be within +-9007199254740992");
        return value(Json(v)) != nullptr;
    }
    bool number_unsigned(Json::number_unsigned_t v) {
        if (v > static_cast<Json::number_unsigned_t>(max_exact_integer))
            add(here(), std::to_string(v) + " is beyond 2^53; integers must be within +-9007199254740992 (exact in a double)");
        return value(Json(v)) != nullptr;
    }
    bool number_float(Json::number_float_t v, const std::string& text) {
        if (!std::isfinite(v)) add(here(), printable(text, 40) + " is not a finite number; numbers must be finite");
        return value(Json(v)) != nullptr;
    }
    bool string(std::string& s) {
        if (s.size() > max_json_string_bytes) {
            add(here(), "a string of " + std::to_string(s.size()) + " bytes is too long; at most " + std::to_string(max_json_string_bytes) + " bytes");
            return value(Json("")) != nullptr;
        }
        return value(Json(std::move(s))) != nullptr;
    }
    bool binary(Json::binary_t&) { return false; }  // never produced by the JSON reader

    bool start_object(std::size_t) { return open(Json::object()); }
    bool start_array(std::size_t) { return open(Json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(std::string& k) {
        Frame& f = stack_.back();
        f.key = k;
        f.key_pending = true;
        if (k.size() > max_json_key_bytes) {
            add(here(), "a key of " + std::to_string(k.size()) + " bytes is too long; at most " + std::to_string(max_json_key_bytes) + " bytes");
        } else if (f.node->contains(k)) {
            add(here(), "duplicated key; each key may appear once per object");
        }
        return true;
    }

    bool parse_error(std::size_t, const std::string& last_token, const Json::exception& ex) {
        std::string msg = ex.what();
        if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
        if (ex.id == 406) {  // out_of_range.406: number overflow
            add(here(), printable(last_token, 40) + " overflows a double; numbers must be finite (magnitude below 1.8e308)");
        } else {
            if (msg.rfind("parse error ", 0) == 0) msg = msg.substr(12);  // "at line L, column C: ..."
            if (auto p = msg.find("; last read: '"); p != std::string::npos) msg = msg.substr(0, p) + "; last read: '" + printable(last_token, 40) + "'";
            std::string hint;
            // a string still open at the end reads as a missing quote
            const bool cut_short = msg.find("unexpected end of input") != std::string::npos || msg.find("missing closing quote") != std::string::npos;
            if (msg.find("UTF-8") != std::string::npos)
                hint = " (text must be UTF-8)";
            else if (cut_short)
                hint = " (the document ends early: a brace, bracket or string is not closed)";
            else if (msg.find("expected end of input") != std::string::npos)
                hint = " (one JSON value per document; nothing may follow it)";
            else if (msg.find("invalid literal") != std::string::npos)
                hint = " (JSON has no NaN, Infinity, comments or unquoted words)";
            // cut short, the value that is not closed is the one to name, not the slot after it
            add(here(cut_short), "is not valid JSON " + printable(msg, 300) + hint);
        }
        return false;
    }

private:
    struct Frame {
        Json* node;
        std::string key;
        bool key_pending = false;
    };

    void add(std::string path, std::string message) {
        if (problems_.size() < 20) problems_.push_back({std::move(path), std::move(message)});
    }

    // The path of the value being read now (`open`: of the innermost open object or array).
    std::string here(bool open = false) const {
        std::string p = what_;
        for (std::size_t i = 0; i < stack_.size(); ++i) {
            const Frame& f = stack_[i];
            const bool top = i + 1 == stack_.size();
            if (top && open) break;
            if (f.node->is_array()) {
                std::size_t n = f.node->size();
                p += '[';
                p += std::to_string(top ? n : n - 1);
                p += ']';
            } else if (!top || f.key_pending) {
                p = key_path(p, f.key);
            }
        }
        if (p.size() > 160) p = p.substr(0, 100) + "..." + p.substr(p.size() - 40);
        return p;
    }

    Json* value(Json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Frame& f = stack_.back();
        if (f.node->is_array()) {
            f.node->push_back(std::move(v));
            return &f.node->back();
        }
        f.key_pending = false;
        Json& slot = (*f.node)[f.key];
        slot = std::move(v);
        return &slot;
    }

    bool open(Json&& container) {
        if (stack_.size() >= static_cast<std::size_t>(max_json_depth)) {
            add(here(), "nesting deeper than " + std::to_string(max_json_depth) + " levels; at most " + std::to_string(max_json_depth) + " nested arrays and objects");
            return false;
        }
        // The container is inserted before its contents; while it is open, here() names it by
        // its parent's last key (or index).
        Json* node = value(std::move(container));
        stack_.push_back({node, {}, false});
        return true;
    }

    bool close() {
        if (!stack_.empty()) stack_.pop_back();
        return true;
    }

    Json& root_;
    const std::string& what_;
    std::vector<Problem>& problems_;
    std::vector<Frame> stack_;
};

}  // namespace

std::string describe(const Json& v) { return v.is_null() ? std::string("is null") : show(v) + " is " + type_name(v); }

std::string printable(std::string_view s, std::size_t max_bytes) {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
        if (out.size() >= max_bytes) {
            out += "...";
            break;
        }
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            ++i;
            continue;
        }
        std::size_t n = utf8_length(s, i);
        if (n == 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
            ++i;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string key_path(const std::string& base, std::string_view key) {
    if (is_identifier(key)) return base.empty() ? std::string(key) : base + "." + std::string(key);
    std::string k = printable(key, 40);
    std::string quoted;
    for (char c : k) {
        if (c == '"') quoted += '\\';
        quoted += c;
    }
    return base + "[\"" + quoted + "\"]";
}

std::string number_text(double x) {
    std::string t = Json(x).dump();
    if (t.size() > 2 && t.compare(t.size() - 2, 2, ".0") == 0) t.resize(t.size() - 2);
    return t;
}

std::string fixed_text(double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return buf;
}

std::string show(const Json& value) {
    std::string s;
    try {
        if (value.is_string()) {
            s = Json(printable(value.get_ref<const std::string&>(), 57)).dump();
        } else if (value.is_structured() && value.size() > 64) {
            s = value.is_array() ? "[<" + std::to_string(value.size()) + " elements>]" : "{<" + std::to_string(value.size()) + " keys>}";
        } else {
            s = value.dump(-1, ' ', false, Json::error_handler_t::replace);
        }
    } catch (...) {
        s = "<unprintable>";
    }
    return printable(s, 60);
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    if (word.size() > 100) return best;
    std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (const auto& c : candidates) {
        std::size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    // A truncated id ("h100-sxm5" for "h100-sxm5-80gb"): the shortest candidate it begins.
    if (best.empty() && word.size() >= 3)
        for (const auto& c : candidates)
            if (c.size() > word.size() && c.compare(0, word.size(), word) == 0 && (best.empty() || c.size() < best.size())) best = c;
    return best;
}

std::string did_you_mean(std::string_view word, std::initializer_list<std::string_view> candidates) {
    std::vector<std::string> c(candidates.begin(), candidates.end());
    return did_you_mean(word, c);
}

Json parse_json(std::string_view text, const std::string& what) {
    if (text.size() > max_json_bytes)
        throw InputError(what, std::to_string(text.size()) + " bytes is too large; at most " + std::to_string(max_json_bytes) + " bytes (4 MiB) are accepted");
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF")
        throw InputError(what, "starts with a UTF-8 byte-order mark; expected plain UTF-8 JSON without a BOM (re-save the file without it)");
    if (text.size() >= 2 && (text.substr(0, 2) == "\xFF\xFE" || text.substr(0, 2) == "\xFE\xFF"))
        throw InputError(what, "starts with a UTF-16 byte-order mark; expected UTF-8 JSON");
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw InputError(what, "empty input; expected a JSON object");

    Json root;
    std::vector<Problem> problems;
    StrictReader reader(root, what, problems);
    bool ok = false;
    try {
        ok = Json::sax_parse(text.begin(), text.end(), &reader, nlohmann::detail::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false);
    } catch (const Json::exception& e) {
        problems.push_back({what, "is not valid JSON: " + printable(e.what(), 200)});
    }
    if (!problems.empty()) throw InputError(problems);
    if (!ok) throw InputError(what, "is not valid JSON");
    return root;
}

}  // namespace poseidon
