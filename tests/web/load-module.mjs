// Loads the built wasm module (the exact artifact the page serves) in node.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

export function siteDir() {
  const build = process.env.POSEIDON_BUILD_WASM || path.resolve(process.cwd(), 'build-wasm');
  const dir = path.join(build, 'site');
  if (!fs.existsSync(path.join(dir, 'poseidon.js'))) {
    throw new Error(`${dir}/poseidon.js not found: build it with emcmake cmake -S . -B build-wasm && cmake --build build-wasm (or set POSEIDON_BUILD_WASM)`);
  }
  return dir;
}

let modP = null;
export function loadModule() {
  modP ??= (async () => {
    const dir = siteDir();
    // the EXPORT_ES6 glue's node branch uses require and __dirname
    globalThis.require ??= createRequire(import.meta.url);
    globalThis.__dirname ??= dir;
    const { default: create } = await import(pathToFileURL(path.join(dir, 'poseidon.js')).href);
    return create({ wasmBinary: fs.readFileSync(path.join(dir, 'poseidon.wasm')) });
  })();
  return modP;
}
