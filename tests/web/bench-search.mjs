// Main-search benchmark (prints figures, not a test): the page's search of preset scenarios in
// headless Chromium on 1 worker (the single search) and on the pool (?workers=N: the search in
// 2 N slices, web/split-search.js), wall time from "Find plans" to the result on screen, best of
// 3 runs; and whether both found the same plans.
//   POSEIDON_BUILD_WASM=build-wasm node tests/web/bench-search.mjs [WORKERS...]   (default: 1 2 4)
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { encodeShare } from '../../web/share.js';
import { siteDir } from './load-module.mjs';

const workers = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [1, 2, 4];
const CASES = [
  { m: 'gpt3-7.5b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 512 } },
  { m: 'gpt3-7.5b', c: 'mixed-a100-a10-t4', t: { global_batch_size: 128 }, o: { tp_per_stage: true } },
  { m: 'opt-350m', c: 'sailor-mit-mix', t: { global_batch_size: 64 }, o: { tp_per_stage: true } },
  { m: 'opt-350m', c: 'mixed-a100-v100', t: { global_batch_size: 1024, global_batch_tolerance: 0.02 } },
  { m: 'llama3-70b', c: 'megatron-a100-3072', t: { global_batch_size: 1536 } },
];
const site = await serve(siteDir(), { csp: true });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const done = (page) => page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 300000 });
const cores = await (await browser.newPage()).evaluate(() => navigator.hardwareConcurrency);
console.log(`page search, time limit 60 s, top 5; ${cores} cores seen by the page; best of 3 runs (wall s)`);
for (const c of CASES) {
  const o = { top: 5, time_limit_s: 60, ...c.o };
  const row = [];
  let first = null;
  for (const n of workers) {
    const page = await browser.newPage();
    await page.goto(`${site.url}index.html?workers=${n}#${await encodeShare({ ...c, o })}`);
    await page.waitForFunction(() => window.__poseidonReady === true);
    await done(page);
    const times = [];
    let res;
    for (let r = 0; r < 3; r++) {
      const t0 = await page.evaluate(() => performance.now());
      await page.click('[data-testid=run]');
      await page.waitForFunction((t) => window.__poseidon.lastResultMs > t, t0, { timeout: 300000 });
      await done(page);
      times.push((await page.evaluate(() => window.__poseidon.lastResultMs) - t0) / 1000);
      res = (await page.evaluate(() => window.__poseidon.result())).result;
    }
    const plans = JSON.stringify(res.plans.map((p) => p.plan));
    first ??= plans;
    row.push(`${n} worker${n > 1 ? 's' : ''} ${Math.min(...times).toFixed(2)} s${res.stats.complete ? '' : ' (incomplete)'}${plans === first ? '' : ' (OTHER PLANS)'}`);
    await page.close();
  }
  console.log(`${c.m}, batch ${c.t.global_batch_size}${c.t.global_batch_tolerance ? ` ±${c.t.global_batch_tolerance}` : ''}, ${c.c}${c.o?.tp_per_stage ? ', TP per stage' : ''}: ${row.join(' · ')}`);
}
await browser.close();
site.server.close();
