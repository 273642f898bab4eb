// Web performance figures (docs/web.md, "Performance"):
//   POSEIDON_BUILD_WASM=build-wasm POSEIDON_CLI=build/core/poseidon node tests/web/bench.mjs [SCENARIO.json]
// 1. gzipped transfer size of the module (poseidon.js + poseidon.wasm) and of the whole page;
// 2. the same search in wasm (node) and natively, POSEIDON_BENCH_REPS runs each (default 5): ratio
//    of the searches' own elapsed_s, best run against best run (V8 compiles the hot functions with
//    TurboFan in the background during the first runs, longer on a busy machine) and first run;
// 3. estimate of the example plan in wasm (ms per call).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { siteDir, loadModule } from './load-module.mjs';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const dir = siteDir();
const gz = (f) => zlib.gzipSync(fs.readFileSync(f), { level: 9 }).length;
const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
const moduleGz = gz(path.join(dir, 'poseidon.js')) + gz(path.join(dir, 'poseidon.wasm'));
const pageFiles = walk(dir).filter((f) => /\.(js|css|html|wasm|svg|webmanifest)$/.test(f));
const pageGz = pageFiles.reduce((a, f) => a + gz(f), 0);
console.log(`module gzip -9: ${(moduleGz / 1024).toFixed(1)} KiB (poseidon.js + poseidon.wasm; raw ${((fs.statSync(path.join(dir, 'poseidon.wasm')).size + fs.statSync(path.join(dir, 'poseidon.js')).size) / 1024).toFixed(1)} KiB)`);
console.log(`page gzip -9:   ${(pageGz / 1024).toFixed(1)} KiB (${pageFiles.length} files: module, page, worker, styles; presets come from the module)`);

const M = await loadModule();
// default: a search that takes about half a second natively and completes (the demo takes ~5 ms,
// too short to compare); pass a scenario file to measure another one
const DEFAULT_SCENARIO = { model: 'gpt3-7.5b', training: { global_batch_size: 512 }, cluster: 'mixed-h100-a100-4090' };
const scenarioFile = process.argv[2] ?? path.join(os.tmpdir(), 'poseidon-bench-scenario.json');
if (!process.argv[2]) fs.writeFileSync(scenarioFile, JSON.stringify(DEFAULT_SCENARIO));
const scenario = fs.readFileSync(scenarioFile, 'utf8');
const options = { top: 3, exhaustive: false, time_limit_s: 60 };
const CLI = process.env.POSEIDON_CLI;
const REPS = Math.max(2, Number(process.env.POSEIDON_BENCH_REPS ?? 5));

const wasmRuns = [];
let w;
for (let i = 0; i < REPS; i++) {
  w = JSON.parse(M.plan(scenario, JSON.stringify(options)));
  if (w.error) break;
  wasmRuns.push(w.stats.elapsed_s);
}
const label = process.argv[2] ? path.relative(ROOT, scenarioFile) : JSON.stringify(DEFAULT_SCENARIO);
if (w.error) {
  console.log(`search: wasm returned an error (${w.error.message}); no search figures`);
} else {
  const fmtRuns = (r) => r.map((x) => x.toFixed(3)).join(', ');
  console.log(`search ${label}: ${w.stats.evaluated} evaluated, complete ${w.stats.complete}`);
  console.log(`  wasm (node) elapsed_s per run: ${fmtRuns(wasmRuns)} (the first includes tier-up compilation)`);
  if (CLI) {
    const nativeRuns = [];
    for (let i = 0; i < REPS; i++) {
      const r = spawnSync(CLI, ['plan', scenarioFile, '--top', '3', '--time-limit', '60', '--threads', '1', '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
      nativeRuns.push(JSON.parse(r.stdout).stats.elapsed_s);
    }
    const best = (r) => Math.min(...r);
    console.log(`  native elapsed_s per run:      ${fmtRuns(nativeRuns)}`);
    console.log(`  ratio wasm/native: best ${(best(wasmRuns) / best(nativeRuns)).toFixed(2)}x, first run ${(wasmRuns[0] / best(nativeRuns)).toFixed(2)}x`);
  } else {
    console.log('  set POSEIDON_CLI for the native figures');
  }
}

const planFile = path.join(ROOT, 'docs/examples/demo.plan.json');
if (fs.existsSync(planFile)) {
  const demo = fs.readFileSync(path.join(ROOT, 'docs/examples/demo.scenario.json'), 'utf8');
  const plan = fs.readFileSync(planFile, 'utf8');
  const reps = 200;
  M.estimate(demo, plan);
  const e0 = performance.now();
  for (let i = 0; i < reps; i++) M.estimate(demo, plan);
  const perW = (performance.now() - e0) / reps;
  console.log(`estimate (demo plan, JSON in and out): wasm ${perW.toFixed(2)} ms per call`);
}
