#!/usr/bin/env bash
# Builds everything (native CLI and the wasm static site) and serves the planner on
# http://localhost:${PORT:-8080}. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install_deps
export NODE_PATH=/usr/share/nodejs
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-wasm -j"$jobs"
echo "example: build/core/poseidon plan docs/examples/demo.scenario.json"
echo "serving build-wasm/site on http://localhost:${PORT:-8080} (Ctrl-C to stop)"
exec node web/serve.mjs build-wasm/site "${PORT:-8080}"
