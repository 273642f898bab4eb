#!/usr/bin/env bash
# Runs every test: native unit/CLI/validation tests, the wasm module in node, the page in
# headless Chromium, the sanitizer build and a short fuzzing run. Prints one summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash .ci/install_deps || { echo "dependency installation failed"; exit 1; }
export NODE_PATH=/usr/share/nodejs
jobs=$(nproc 2>/dev/null || echo 2)
passed=0; failed=0; failures=()
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "=== $name: ok ($((SECONDS - t0)) s)";
  else failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
}
# Every target a test runs, not the benchmarks (tests/bench: no test runs them, ~25 s of a 2-core
# build; `cmake --build build` builds them too, and web/serve.sh does).
native_build() { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j"$jobs" --target poseidon poseidon_cli_driver poseidon_tests poseidon_validation_tests validation_report; }
native_tests() { (cd build && ctest --output-on-failure -j"$jobs"); }
wasm_build() { emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-wasm -j"$jobs"; }
web_tests() { POSEIDON_CLI="$PWD/build/core/poseidon" bash tests/web/run.sh "$PWD/build-wasm"; }
# The differential search test (200 scenarios, pruned vs exhaustive) already ran natively; under
# the sanitizers it alone would take minutes, so it is skipped there, and so are the tests that
# assert what a search does within a wall-clock limit of milliseconds (ASan makes the first plan
# slower than the limit; they ran natively above), and the tests that repeat whole searches to
# compare them (merged slices, 1/2/4 threads: about 3 minutes under the sanitizers; native above),
# and three that search whole preset clusters over code the other tests run under the sanitizers too
# (the same search twice for determinism; the 1024-GPU sweep shape's evaluation count: 13 and 15 s;
# the plateau of exact ties on 1,008 GPUs: 4 s native, over 60 s under them).
# The fuzzer runs 30 s on 2 processes (-fork=2): the CPU time of 60 s on one, in half the wall time.
# (ctest reads one regular expression: "." stands for a space)
skip="exhaustive|time.limit|merged.slices|threads|the.search.is.deterministic|the.sweep.s.3.types.x.1024.GPUs|a.plateau.of.116,000.exact.ties"
robustness() { CTEST_ARGS="-E $skip" FUZZ_SECONDS=${FUZZ_SECONDS:-30} FUZZ_JOBS=${FUZZ_JOBS:-2} sh tests/robustness.sh; }

step "native build" native_build
step "native tests (unit, CLI, validation, search)" native_tests
step "wasm build and static site" wasm_build
if [ -f tests/web/run.sh ]; then step "wasm in node + browser tests" web_tests; fi
if [ -f tests/robustness.sh ]; then step "sanitizers + fuzzing" robustness; fi

echo
[ ${#failures[@]} -gt 0 ] && echo "failed steps: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
