// Robustness of the one validator that the CLI, the wasm module and the page share: every hostile
// input of tests/cli/hostile_cases.json through the core and the wasm-facing api (estimate_json +
// error_json), the JSON reader's paths and limits, and single-line valid UTF-8 messages (split from
// robustness.tests.cpp, which has the malformed scenarios and plans with their exact messages).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "poseidon/api.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

std::string read_source_file(const std::string& rel) {
    std::ifstream in(std::string(POSEIDON_SOURCE_DIR) + "/" + rel, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Code points U+0000..U+00FF of a JSON string, one byte each (hostile_cases.json "*_bytes").
std::string latin1_bytes(const std::string& utf8) {
    std::string out;
    for (std::size_t i = 0; i < utf8.size(); ++i) {
        auto c = static_cast<unsigned char>(utf8[i]);
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            auto c2 = static_cast<unsigned char>(utf8[++i]);
            out += static_cast<char>(((c & 0x1F) << 6) | (c2 & 0x3F));
        }
    }
    return out;
}

bool is_valid_utf8(const std::string& s) {
    try {
        (void)Json(s).dump();  // the strict handler throws on invalid UTF-8
        return true;
    } catch (...) {
        return false;
    }
}

}  // namespace

TEST_CASE("every hostile input of hostile_cases.json is refused by the core and the wasm api with its path", "[robustness][hostile]") {
    const Json cases = Json::parse(read_source_file("tests/cli/hostile_cases.json"));
    REQUIRE(cases.size() >= 60);
    for (const auto& c : cases) {
        const std::string name = c.at("name");
        const std::string sc = c.contains("scenario_bytes") ? latin1_bytes(c["scenario_bytes"]) : c.at("scenario").get<std::string>();
        const std::string pl = c.contains("plan_bytes") ? latin1_bytes(c["plan_bytes"]) : c.at("plan").get<std::string>();
        const std::string path_sub = c.at("expect_path_substring");
        const std::string msg_sub = c.value("expect_message_substring", "");
        INFO("case: " << name);
        auto t0 = std::chrono::steady_clock::now();
        std::string error;
        bool threw = false;
        try {
            (void)estimate_json(sc, pl);  // what the wasm module's estimate() calls
        } catch (...) {
            threw = true;
            error = error_json(std::current_exception());
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        REQUIRE(threw);
        CHECK(seconds < 1.0);
        REQUIRE(is_valid_utf8(error));
        const Json e = Json::parse(error).at("error");
        CHECK(e.at("message").get<std::string>().find("internal error") == std::string::npos);
        bool found = false;
        std::string all;
        for (const auto& p : e.at("problems")) {
            const std::string path = p.at("path"), message = p.at("message");
            all += path + ": " + message + "\n";
            if (path.find(path_sub) != std::string::npos) found = true;
            CHECK(path.find('\n') == std::string::npos);
            CHECK(message.find('\n') == std::string::npos);
        }
        INFO(all);
        CHECK(found);
        CHECK(all.find(msg_sub) != std::string::npos);
    }
}

TEST_CASE("the JSON reader reports paths inside arrays and escapes odd keys", "[robustness][json]") {
    auto first = [](const std::string& text) {
        try {
            parse_json(text, "doc");
        } catch (const InputError& e) {
            return e.problems().front().line();
        }
        return std::string("no error");
    };
    CHECK(first(R"({"a":[{"b":1},{"b":1,"b":2}]})") == "doc.a[1].b: duplicated key; each key may appear once per object");
    CHECK(first(R"({"a":[1,2,9007199254740993]})") == "doc.a[2]: 9007199254740993 is beyond 2^53; integers must be within +-9007199254740992 (exact in a double)");
    CHECK(first("{\"odd key\\n\":1,\"odd key\\n\":2}") == "doc[\"odd key\\u000a\"]: duplicated key; each key may appear once per object");
    CHECK(first("{\"a\":[1,2,]}") ==
          "doc.a[2]: is not valid JSON at line 1, column 11: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal");
    // 64 levels are accepted, 65 are not.
    CHECK_NOTHROW(parse_json(std::string(64, '[') + std::string(64, ']'), "doc"));
    CHECK_THROWS_AS(parse_json(std::string(65, '[') + std::string(65, ']'), "doc"), InputError);
    // Large and deep inputs are linear: 1 MiB of empty objects (quadratic with nlohmann's callback
    // parser: minutes) or a 4-million-deep nesting are quick, even under the sanitizers.
    std::string many = "[";
    while (many.size() < (1u << 20) - 8) many += "{},";
    many += "{}]";
    auto t0 = std::chrono::steady_clock::now();
    CHECK(parse_json(many, "doc").size() > 300'000);
    CHECK_THROWS_AS(parse_json(std::string(max_json_bytes, '['), "doc"), InputError);
    CHECK_THROWS_WITH(parse_json(std::string(max_json_bytes + 1, ' '), "doc"), Catch::Matchers::Contains("at most 4194304 bytes"));
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 20.0);
}

TEST_CASE("messages are single-line valid UTF-8 whatever the input", "[robustness][json]") {
    CHECK(printable("a\nb\xff\xc3\xa9") == "a\\u000ab\\xFF\xc3\xa9");
    CHECK(printable("\xe0\x80\x80") == "\\xE0\\x80\\x80");  // overlong
    CHECK(printable("\xed\xa0\x80") == "\\xED\\xA0\\x80");  // surrogate
    // Truncation never splits a character.
    std::string accents;
    for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
    CHECK(is_valid_utf8(printable(accents, 61)));
    CHECK(is_valid_utf8(show(Json(accents))));
    CHECK(show(Json(accents)).size() < 80);
    CHECK(key_path("a", "b") == "a.b");
    CHECK(key_path("a", "has space") == "a[\"has space\"]");
    CHECK(key_path("a", "q\"uote") == "a[\"q\\\"uote\"]");
    CHECK(did_you_mean("h100-sxm5", std::vector<std::string>{"h100-sxm5-80gb", "h100-pcie-80gb"}) == "h100-sxm5-80gb");
    CHECK(did_you_mean(std::string(1000, 'x'), {"model"}).empty());
}

TEST_CASE("names with control characters are escaped in messages and in the text output", "[robustness][json]") {
    const Scenario sc = parse_scenario_text(
        "{\"model\": {\"base\": \"gpt3-1.7b\", \"name\": \"m\\u001b[31m\"}, \"training\": {\"global_batch_size\": 64}, \"cluster\": {\"name\": \"c\\r\", \"groups\": "
        "[{\"device\": {\"base\": \"a100-sxm4-80gb\", \"name\": \"x\\ny\"}, \"nodes\": 1, \"gpus_per_node\": 8, \"inter_node_bw_GBps\": 25}]}}");
    REQUIRE(sc.cluster.groups[0].device.name == "x\ny");
    const std::string text = to_text(sc, estimate(sc, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})", sc)));
    CHECK(std::none_of(text.begin(), text.end(), [](char ch) { return ch != '\n' && static_cast<unsigned char>(ch) < 0x20; }));
    CHECK(text.find("x\\u000ay") != std::string::npos);
    CHECK(text.find("m\\u001b[31m") != std::string::npos);
    CHECK(text.find("c\\u000d") != std::string::npos);
    try {
        (void)parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 2, "dp": 8}]})", sc);
        FAIL("16 GPUs of 8 accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("(x\\u000ay) but it has 8") != std::string::npos);
        CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
}
