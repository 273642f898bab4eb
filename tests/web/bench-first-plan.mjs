// Time to first plan (issue 36 item 11; prints figures, not a test): headless Chromium opens the
// default page in a fresh context (no cache, no service worker) N times and prints, from
// navigation start, when the page's script ran, when the engine was ready (worker started, module
// fetched and compiled, presets back), when the first best plan was on screen, and the search's
// own time; plus the bytes transferred (compressed when the server compresses: web/serve.mjs).
//   POSEIDON_BUILD_WASM=build-wasm node tests/web/bench-first-plan.mjs [RUNS=5] [--br | --no-compress] [--throttle=MBIT]
// --throttle emulates a network of MBIT Mbit/s down (and 20 ms latency) through the DevTools protocol.
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { siteDir } from './load-module.mjs';

const args = process.argv.slice(2);
const runs = Number(args.find((a) => /^\d+$/.test(a)) ?? 5);
const compress = args.includes('--no-compress') ? false : args.includes('--br') ? 'br' : 'gzip';
const throttle = Number(args.find((a) => a.startsWith('--throttle='))?.split('=')[1] ?? 0);
const site = await serve(siteDir(), { csp: true, compress });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'] });
const rows = [];
for (let i = 0; i < runs; i++) {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await ctx.newPage();
  let bytes = 0;
  page.on('response', async (r) => { bytes += Number((await r.allHeaders())['content-length'] ?? 0); });
  if (throttle > 0) {
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: throttle * 125000, uploadThroughput: throttle * 125000 });
  }
  await page.goto(`${site.url}index.html?nosw`);
  await page.waitForFunction(() => window.__poseidon?.firstBestMs > 0 && /^Done/.test(document.querySelector('[data-testid=progress]')?.textContent ?? ''), null, { timeout: 60000 });
  const p = await page.evaluate(() => {
    const r = window.__poseidon;
    const res = r.result().result;
    return { script: r.scriptMs, ready: r.readyMs, first: r.firstBestMs, result: r.lastResultMs, searchS: res?.stats?.elapsed_s, workers: res?.stats?.workers ?? 1,
      spawned: r.whatif?.().pool?.spawned ?? null };
  });
  rows.push({ ...p, bytes });
  console.log(`run ${i + 1}: script ${p.script.toFixed(0)} ms · engine ready ${p.ready.toFixed(0)} ms · first plan ${p.first.toFixed(0)} ms`
    + ` · result ${p.result.toFixed(0)} ms (search ${(1000 * (p.searchS ?? 0)).toFixed(0)} ms on ${p.workers} worker${p.workers === 1 ? '' : 's'}`
    + `${p.spawned !== null ? `; pool workers started: ${p.spawned}` : ''}) · ${(bytes / 1024).toFixed(0)} KiB transferred`);
  await ctx.close();
}
const med = (k) => { const v = rows.map((r) => r[k]).sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
console.log(`median of ${runs}: engine ready ${med('ready').toFixed(0)} ms, first plan ${med('first').toFixed(0)} ms after navigation`
  + ` (${compress ? `${compress} assets` : 'uncompressed assets'}${throttle ? `, ${throttle} Mbit/s` : ', localhost'}; ${await (await browser.newPage()).evaluate(() => navigator.hardwareConcurrency)} cores seen by the page)`);
await browser.close();
site.server.close();
