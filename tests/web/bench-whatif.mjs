// What-if benchmark (prints figures, not a test): the what-if of a scenario in headless Chromium
// with 1, 2, … workers in the pool (?workers=N), wall time from "Compute what-if" to the last
// variant, 3 runs each, and the sum of the variants' own search times.
//   POSEIDON_BUILD_WASM=build-wasm node tests/web/bench-whatif.mjs [CLUSTER_PRESET] [MODEL] [BATCH] [WORKERS...]
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { siteDir } from './load-module.mjs';

const [cluster = 'mixed-h100-a100-4090', model = 'gpt3-1.7b', batch = '256', ...w] = process.argv.slice(2);
const workers = w.length ? w.map(Number) : [1, 2];
const site = await serve(siteDir(), { csp: true });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const done = (page) => page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent)
  && !document.querySelector('#results').classList.contains('stale'), null, { timeout: 120000 });
console.log(`what-if of ${model}, global batch ${batch}, on ${cluster}; cores seen by the page: see below`);
for (const n of workers) {
  const page = await browser.newPage();
  await page.goto(`${site.url}index.html?workers=${n}`);
  await page.waitForFunction(() => window.__poseidonReady === true);
  await done(page);
  await page.selectOption('#model-preset', model);
  await page.selectOption('#cluster-preset', cluster);
  await page.fill('[data-path="training.global_batch_size"]', batch);
  await page.waitForTimeout(500);
  await done(page);
  const times = [];
  let info;
  await page.evaluate(() => { const d = document.querySelector('#whatif-sec'); if (d) d.open = true; }); // folded below the plan
  for (let r = 0; r < 3; r++) {
    await page.click('[data-testid=whatif-run]');
    await page.waitForFunction(() => { const x = window.__poseidon.whatif(); return x.on && !x.running && x.total > 0 && x.done === x.total; }, null, { timeout: 600000 });
    info = await page.evaluate(() => ({ ...window.__poseidon.whatif(), cores: navigator.hardwareConcurrency }));
    times.push(info.elapsed_s);
  }
  console.log(`${n} worker(s) (pool size ${info.pool.size}, ${info.cores} cores): ${info.total} variants, ${times.map((t) => t.toFixed(2)).join(' / ')} s`);
  await page.close();
}
await browser.close();
site.server.close();
