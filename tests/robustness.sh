#!/bin/sh
# Robustness checks (docs/robustness.md): the unit and CLI tests under AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan, then the libFuzzer target for FUZZ_SECONDS.
#   tests/robustness.sh                      # sanitizer build + ctest, 60 s of fuzzing
#   FUZZ_SECONDS=0 tests/robustness.sh       # sanitizers only
#   FUZZ_SECONDS=3600 tests/robustness.sh    # a longer fuzzing run
# RelWithDebInfo keeps the sanitizers but runs several times faster than Debug (ASAN_BUILD_TYPE overrides).
# Environment: FUZZ_SECONDS (60), ASAN_BUILD (build-asan), CTEST_ARGS (extra ctest arguments, e.g.
# "-LE slow" or "-E search" to skip tests too slow under the sanitizers), JOBS (parallel jobs).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz_seconds=${FUZZ_SECONDS:-60}
build=${ASAN_BUILD:-$root/build-asan}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

echo "== sanitizers: build with -DPOSEIDON_SANITIZE=ON in $build"
# With clang, one tree serves the tests and the fuzzer (-DPOSEIDON_FUZZ=ON): the library is
# compiled once, not twice, which is most of this step's time on a 2-core machine. A tree
# configured before (with g++) is kept as it is; the fuzzer then builds its own in build-fuzz.
# The tree is compiled at -O1 with line tables only (AddressSanitizer's own recommendation; reports
# keep function, file and line) and without the benchmarks, which no test runs: the build is most of
# this step (docs/performance.md, "Build time"). The test programs' own files at -O0 (the core they
# test stays at -O1): half their compile time, ~100 s less build for ~40 s more test time.
if [ ! -f "$build/CMakeCache.txt" ] && command -v clang++ >/dev/null; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=${ASAN_BUILD_TYPE:-RelWithDebInfo} -DPOSEIDON_SANITIZE=ON -DPOSEIDON_FUZZ=ON \
    -DPOSEIDON_BENCH=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DPOSEIDON_TESTS_OPT=-O0 >/dev/null
else
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=${ASAN_BUILD_TYPE:-RelWithDebInfo} -DPOSEIDON_SANITIZE=ON -DPOSEIDON_BENCH=OFF -DPOSEIDON_TESTS_OPT=-O0 >/dev/null
fi
if grep -q '^POSEIDON_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  export POSEIDON_FUZZ_BUILD="${POSEIDON_FUZZ_BUILD:-$build}"
fi
cmake --build "$build" -j "$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# shellcheck disable=SC2086
(cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 900 ${CTEST_ARGS:-})

if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing for $fuzz_seconds s"
  "$root/tests/fuzz/run_fuzz.sh" "$fuzz_seconds"
fi
echo "robustness: all clean"
