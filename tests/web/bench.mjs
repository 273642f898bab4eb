// Web performance figures (docs/web.md, "Performance"):
//   POSEIDON_BUILD_WASM=build-wasm POSEIDON_CLI=build/core/poseidon node tests/web/bench.mjs [SCENARIO.json]
// 1. gzipped transfer size of the module (poseidon.js + poseidon.wasm) and of the whole page;
// 2. the same search in wasm (node) and natively: ratio of the searches' own elapsed_s;
// 3. estimate of the example plan: wasm in node vs native (in-process loop vs CLI's elapsed).
import fs from 'node:fs';
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
const scenarioFile = process.argv[2] ?? path.join(ROOT, 'docs/examples/demo.scenario.json');
const scenario = fs.readFileSync(scenarioFile, 'utf8');
const options = { top: 3, exhaustive: false, time_limit_s: 60 };
const CLI = process.env.POSEIDON_CLI;

const t0 = performance.now();
const w = JSON.parse(M.plan(scenario, JSON.stringify(options)));
const wallW = (performance.now() - t0) / 1000;
if (w.error) {
  console.log(`search: wasm returned an error (${w.error.message}); no search figures`);
} else if (!CLI) {
  console.log(`search (${path.relative(ROOT, scenarioFile)}): wasm ${w.stats.elapsed_s.toFixed(3)} s (wall ${wallW.toFixed(3)} s); set POSEIDON_CLI for the native figure`);
} else {
  const r = spawnSync(CLI, ['plan', scenarioFile, '--top', '3', '--time-limit', '60', '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const n = JSON.parse(r.stdout);
  console.log(`search (${path.relative(ROOT, scenarioFile)}, ${w.stats.evaluated} evaluated, complete ${w.stats.complete}/${n.stats.complete}): `
    + `wasm ${w.stats.elapsed_s.toFixed(3)} s, native ${n.stats.elapsed_s.toFixed(3)} s, ratio ${(w.stats.elapsed_s / n.stats.elapsed_s).toFixed(2)}x`);
}

const planFile = path.join(ROOT, 'docs/examples/demo.plan.json');
if (scenarioFile.endsWith('demo.scenario.json') && fs.existsSync(planFile)) {
  const plan = fs.readFileSync(planFile, 'utf8');
  const reps = 200;
  M.estimate(scenario, plan);
  const e0 = performance.now();
  for (let i = 0; i < reps; i++) M.estimate(scenario, plan);
  const perW = (performance.now() - e0) / reps;
  console.log(`estimate (demo plan, JSON in and out): wasm ${perW.toFixed(2)} ms per call`);
}
