#!/usr/bin/env node
// Writes SITE/first-view.json: the page's default inputs (state.js's applyDefaults, scenario and
// searchOptions, run here on the built site's own copies) and the result of searching them with
// the built module, so that a plain visit shows its first plan before the engine has loaded
// (engine.js's loadFirstView; issue 36 item 11). Run by the wasm build (wasm/CMakeLists.txt):
//   node web/first-view.mjs SITE_DIR
// It writes nothing when the search does not complete (a time-limited result is not the one the
// page would find), and the page then simply waits for its engine.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const site = path.resolve(process.argv[2] ?? '.');
const out = path.join(site, 'first-view.json');
// state.js reads the page's address and marks the document at load
globalThis.location = { search: '', hash: '' };
globalThis.document = { documentElement: { classList: { add() {} } } };
globalThis.window = globalThis;
const { applyDefaults, scenario, searchOptions } = await import(pathToFileURL(path.join(site, 'state.js')).href);
// (the module's glue would take a window for a browser)
delete globalThis.window;
delete globalThis.document;
globalThis.require ??= createRequire(import.meta.url);
globalThis.__dirname ??= site;
const { default: create } = await import(pathToFileURL(path.join(site, 'poseidon.js')).href);
const M = await create({ wasmBinary: fs.readFileSync(path.join(site, 'poseidon.wasm')) });

const presets = JSON.parse(M.presets());
applyDefaults(presets);
const sc = scenario();
const options = searchOptions();
const result = JSON.parse(M.plan(JSON.stringify(sc), JSON.stringify(options), () => true));
fs.rmSync(out, { force: true });
if (result.error || !result.stats?.complete || !result.plans?.length) {
  console.log(`first-view.mjs: the default search did not complete (${result.error?.message ?? 'time limit'}); no first view`);
} else {
  fs.writeFileSync(out, JSON.stringify({ format: 1, version: M.version(), presets, scenario: sc, options, result }));
  console.log(`first-view.mjs: ${path.relative(process.cwd(), out)} (${result.plans.length} plans, ${(fs.statSync(out).size / 1024).toFixed(0)} KiB)`);
}
