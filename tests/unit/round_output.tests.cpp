#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>

#include "poseidon/estimate.hpp"

using namespace poseidon;

namespace {

// The definition round_output had before the integer/Clinger version: the reference.
double printf_round(double x) {
    if (x == 0 || !std::isfinite(x)) return x;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", x);
    return std::strtod(buf, nullptr);
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Counts the values where round_output differs from the printf reference or is not idempotent.
struct Tally {
    long n = 0, differ = 0, not_idempotent = 0;
    double first_differ = 0;
    void check(double x) {
        ++n;
        const double r = round_output(x);
        if (!same_bits(r, printf_round(x))) {
            if (differ++ == 0) first_differ = x;
        }
        if (!same_bits(round_output(r), r)) ++not_idempotent;
    }
};

}  // namespace

TEST_CASE("round_output equals printf(%.12g) + strtod on the magnitudes of the output", "[round_output]") {
    std::mt19937_64 rng(20240601);
    std::uniform_real_distribution<double> exp10(-9.0, 16.0);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    Tally t;
    for (int i = 0; i < 400000; ++i) {
        const double x = std::pow(10.0, exp10(rng));  // log-uniform 1e-9..1e16
        t.check(x);
        t.check(-x);
        // a 12-digit decimal, and values a few ulps around it and around its rounding midpoint
        const double d = round_output(x);
        t.check(d);
        t.check(std::nextafter(d, 0.0));
        t.check(std::nextafter(d, 1e300));
    }
    // products and quotients like the model's (seconds, GiB, tokens/s)
    for (int i = 0; i < 100000; ++i) {
        const double a = unit(rng) * 1e3, b = unit(rng) * 1e12 + 1;
        t.check(a / b);
        t.check(a * b);
        t.check(b / 3.0);
    }
    INFO("values: " << t.n << ", differ: " << t.differ << " (first " << t.first_differ << "), not idempotent: " << t.not_idempotent);
    CHECK(t.differ == 0);
    CHECK(t.not_idempotent == 0);
}

TEST_CASE("round_output on every exponent, ties, powers of ten and special values", "[round_output]") {
    std::mt19937_64 rng(7);
    Tally t;
    // random bit patterns over the whole double range (including subnormals and the printf fallback)
    for (int i = 0; i < 200000; ++i) {
        const double x = std::bit_cast<double>(rng());
        if (std::isfinite(x)) t.check(x);
    }
    // exact ties of the 12th digit: (M + 0.5) * 10^q representable in a double
    for (std::uint64_t m : {100000000000ULL, 123456789012ULL, 123456789013ULL, 999999999999ULL, 500000000001ULL}) {
        for (int shift = 0; shift <= 10; ++shift) {
            const double x = (static_cast<double>(m) + 0.5) * std::ldexp(1.0, shift);  // exact
            t.check(x);
            t.check(std::nextafter(x, 0.0));
            t.check(std::nextafter(x, 1e300));
        }
        t.check(static_cast<double>(m) + 0.5);
        t.check((static_cast<double>(m) + 0.5) * 10.0);  // 10 * (M + 0.5) is exact: tie one digit up
        t.check((static_cast<double>(m) + 0.5) / 1024.0);
    }
    // exact ties at every decimal exponent the fast path covers: x = (2M + 1) / 2 * 10^q with
    // 10^11 <= M < 10^12 is a double when q >= 0 and x < 2^53, or when 5^-q divides 2M + 1
    // (then x = (2M + 1) / 5^-q * 2^(q - 1))
    long ties = 0;
    for (int q = -22; q <= 4; ++q) {
        std::uint64_t p5 = 1;
        for (int i = 0; i < -q; ++i) p5 *= 5;
        for (int i = 0; i < 200; ++i) {
            const std::uint64_t m = 100000000000ULL + rng() % 900000000000ULL;
            std::uint64_t odd = 2 * m + 1;
            double x;
            if (q >= 0) {
                std::uint64_t p10 = 1;
                for (int j = 0; j < q; ++j) p10 *= 10;
                x = std::ldexp(static_cast<double>(odd * p10), -1);  // exact below 2^53
                if (odd * p10 >= (std::uint64_t{1} << 53)) continue;
            } else {
                odd -= odd % p5;  // a multiple of 5^-q, still odd when p5 is odd: adjust
                if (odd % 2 == 0) odd += p5;
                if (odd / 2 < 100000000000ULL || odd / 2 >= 1000000000000ULL) continue;
                x = std::ldexp(static_cast<double>(odd / p5), q - 1);
            }
            ++ties;
            t.check(x);
            t.check(-x);
            t.check(std::nextafter(x, 0.0));
            t.check(std::nextafter(x, 1e300));
        }
    }
    CHECK(ties > 2000);
    // powers of ten and their neighbours (decimal exponent boundaries, carries to 10^12)
    for (int k = -300; k <= 300; ++k) {
        const double p = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
        for (double x : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e308), p * 0.9999999999995, p * 0.99999999999949, p * 0.99999999999951})
            t.check(x);
    }
    for (double x : {std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
                     std::numeric_limits<double>::epsilon(), 1.0, -1.0, 0.1, 1.0 / 3.0, 2.0 / 3.0, 999999999999.5, 999999999998.5})
        t.check(x);
    INFO("values: " << t.n << ", differ: " << t.differ << " (first " << t.first_differ << "), not idempotent: " << t.not_idempotent);
    CHECK(t.differ == 0);
    CHECK(t.not_idempotent == 0);

    CHECK(same_bits(round_output(0.0), 0.0));
    CHECK(same_bits(round_output(-0.0), -0.0));
    CHECK(std::isnan(round_output(std::numeric_limits<double>::quiet_NaN())));
    CHECK(round_output(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
    CHECK(round_output(-std::numeric_limits<double>::infinity()) == -std::numeric_limits<double>::infinity());
    CHECK(round_output(0.1 + 0.2) == 0.3);
    CHECK(round_output(123456789012.5) == 123456789012.0);  // tie to even
    CHECK(round_output(123456789013.5) == 123456789014.0);
}
