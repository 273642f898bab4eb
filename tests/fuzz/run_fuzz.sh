#!/bin/sh
# Builds the libFuzzer target in build-fuzz (clang, ASan + UBSan) and fuzzes for SECONDS (default 60).
#   tests/fuzz/run_fuzz.sh 60        # the short run of the test command
#   tests/fuzz/run_fuzz.sh 3600      # a longer run (docs/robustness.md, "Fuzzing")
# Seeds: tests/fuzz/corpus (read-only) and tests/fuzz/regressions; new inputs go to
# build-fuzz/fuzz-corpus, crashes to build-fuzz/fuzz-artifacts/. A crash fails the script; copy the
# artifact into tests/fuzz/regressions/ so that the replay test keeps it (docs/robustness.md).
# Environment: POSEIDON_FUZZ_BUILD (build directory), FUZZ_JOBS (parallel fuzzing processes, 1).
set -eu
budget=${1:-${FUZZ_SECONDS:-60}}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${POSEIDON_FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-1}
command -v clang++ >/dev/null || { echo "run_fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOSEIDON_FUZZ=ON -DPOSEIDON_SANITIZE=ON >/dev/null
fi
cmake --build "$build" --target fuzz_inputs -j "$(nproc 2>/dev/null || echo 2)"
fuzzer=$(find "$build" -name fuzz_inputs -type f -perm -u+x | head -n 1)
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
# Regressions first: each crash ever found must still run clean.
if ls "$root/tests/fuzz/regressions/"* >/dev/null 2>&1; then
  "$fuzzer" -runs=1 "$root/tests/fuzz/regressions/"* >/dev/null 2>&1 || { echo "run_fuzz.sh: a regression input fails again" >&2; "$fuzzer" -runs=1 "$root/tests/fuzz/regressions/"*; exit 1; }
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzzing for ${budget} s ($jobs job(s)); corpus $build/fuzz-corpus"
parallel=""
[ "$jobs" -gt 1 ] && parallel="-fork=$jobs"
cd "$build"
"$fuzzer" -max_total_time="$budget" -timeout=10 -rss_limit_mb=3072 -max_len=65536 $parallel -print_final_stats=1 \
  -dict="$root/tests/fuzz/json.dict" -artifact_prefix="$build/fuzz-artifacts/" \
  "$build/fuzz-corpus" "$root/tests/fuzz/corpus" "$root/tests/fuzz/regressions" 2>"$build/fuzz.log" || {
  tail -n 60 "$build/fuzz.log" >&2
  echo "run_fuzz.sh: the fuzzer found a crash; inputs in $build/fuzz-artifacts/" >&2
  exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done" "$build/fuzz.log" || true
echo "run_fuzz.sh: no crash in ${budget} s"
