#!/usr/bin/env bash
# Node tests of the wasm module and the page's modules, then browser tests of the built site.
#   tests/web/run.sh BUILD_WASM_DIR        (POSEIDON_CLI=build/core/poseidon to compare with the CLI)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: tests/web/run.sh BUILD_WASM_DIR}" && pwd)"
[ -f "$build/site/index.html" ] && [ -f "$build/site/poseidon.wasm" ] || { echo "no site in $build/site: build the wasm target first"; exit 1; }
if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -d "$here/node_modules/axe-core" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
export POSEIDON_BUILD_WASM="$build"
[ -n "${POSEIDON_CLI:-}" ] || echo "note: POSEIDON_CLI is not set; the comparison with the native CLI is skipped"
cd "$here"
node --test --test-concurrency=1 module.test.mjs pure.test.mjs timeline-pure.test.mjs hf-moe.test.mjs json-text.test.mjs workbench-pure.test.mjs share.test.mjs whatif-pure.test.mjs split-search.test.mjs megatron.test.mjs megatron-interleaved.test.mjs megatron-flags.test.mjs megatron-names.test.mjs timeline.test.mjs browser.test.mjs inputs.test.mjs inputs-stack.test.mjs pool-search.test.mjs workbench.test.mjs workbench-fields.test.mjs results.test.mjs whatif.test.mjs a11y.test.mjs glance.test.mjs glance-inputs.test.mjs glance-phone.test.mjs first-view.test.mjs choices.test.mjs layout-review.test.mjs layout-shift.test.mjs
