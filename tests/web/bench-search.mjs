// Main-search benchmark (prints figures, not a test): the page's search of preset scenarios in
// headless Chromium on 1 worker (the single search) and on the pool (?workers=N: the search whole
// for 0.5 s, then in 2 N slices, web/split-search.js; N:0 splits at once, ?probe=0), wall time
// from "Find plans" to the result on screen, best of 3 runs; and whether all found the same plans.
//   POSEIDON_BUILD_WASM=build-wasm node tests/web/bench-search.mjs [WORKERS[:PROBE_S]...]   (default: 1 2 2:0 4:0)
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { encodeShare } from '../../web/share.js';
import { siteDir } from './load-module.mjs';

const configs = process.argv.length > 2 ? process.argv.slice(2) : ['1', '2', '2:0', '4:0'];
const CASES = [
  { m: 'gpt3-7.5b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 512 } },
  { m: 'gpt3-18.4b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 512 } },
  { m: 'gpt3-18.4b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 512 }, o: { node_counts: 'all' } },
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
  for (const config of configs) {
    const [n, probe] = config.split(':').map(Number);
    const page = await browser.newPage();
    await page.goto(`${site.url}index.html?workers=${n}${probe === undefined ? '' : `&probe=${probe}`}#${await encodeShare({ ...c, o })}`);
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
    const how = n > 1 ? `${n} workers${probe === undefined ? '' : `, probe ${probe} s`} (${res.stats.slices} slice${res.stats.slices > 1 ? 's' : ''})` : '1 worker';
    row.push(`${how} ${Math.min(...times).toFixed(2)} s${res.stats.complete ? '' : ' (incomplete)'}${plans === first ? '' : ' (OTHER PLANS)'}`);
    await page.close();
  }
  console.log(`${c.m}, batch ${c.t.global_batch_size}${c.t.global_batch_tolerance ? ` ±${c.t.global_batch_tolerance}` : ''}, ${c.c}${c.o?.tp_per_stage ? ', TP per stage' : ''}${c.o?.node_counts ? ', every node count' : ''}: ${row.join(' · ')}`);
}
await browser.close();
site.server.close();
