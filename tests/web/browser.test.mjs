// The page in headless Debian Chromium (playwright-core, no browser download), served with the
// strict CSP header on 127.0.0.1.   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/browser.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { encodeShare, SHARE_VERSION } from '../../web/share.js';
import { loadModule } from './load-module.mjs';
import { useBrowser, assertClean, demoScenario, demoPlan, pageScenario } from './harness.mjs';

let site;
let searchWorks = true;
let searchSkipReason = '';
const env = useBrowser({ ready: (e) => { ({ site, searchWorks, searchSkipReason } = e); } });

/** A fresh page (1300 x 900) that records console errors, page errors and CSP violations. */
const open = (t, url, options = {}) => env.open(t, url, options);
const demoLink = () => env.demoLink();

test('the page loads under the strict CSP header and shows the presets', async (t) => {
  const { page, problems } = await open(t, `${site.url}index.html`);
  const csp = await page.evaluate(async () => (await fetch('index.html')).headers.get('content-security-policy'));
  assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/);
  assert.ok(await page.locator('#model-preset option').count() > 5);
  assert.equal(await page.inputValue('#model-preset'), pageScenario.model);
  assert.equal(await page.inputValue('#cluster-preset'), pageScenario.cluster);
  assert.ok(await page.isEnabled('[data-testid=run]'));
  // the sections' titles say what they hold (a folded one too: the phone's Inputs tab)
  assert.match(await page.textContent('[data-testid=sec-model-state]'), /Qwen3/);
  assert.match(await page.textContent('[data-testid=sec-cluster-state]'), /64 × H100.*GB200/);
  assert.match(await page.textContent('[data-testid=sec-training-state]'), /^global batch 1,024 · bf16/);
  await page.fill('[data-path="training.global_batch_size"]', '512');
  await page.waitForFunction(() => /^global batch 512\b/.test(document.querySelector('[data-testid=sec-training-state]').textContent));
  await assertClean(page, problems);
});

test('run the default scenario and see a best plan with its tokens/s', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.fill('[data-path="options.time_limit_s"]', '2');
  await page.click('[data-testid=run]');
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 })
    .catch(async (e) => { throw new Error(`${e.message}; progress: ${await page.textContent('[data-testid=progress]')}; error: ${await page.textContent('[data-testid=error]')}`); });
  assert.match(await page.textContent('[data-testid=best-plan]'), /Best plan: [\d,]+ tokens\/s/);
  assert.ok(await page.locator('[data-testid=top-plans] tbody tr').count() >= 1);
  assert.ok(await page.locator('#timeline svg rect.tl-ev').count() > 0);
  const firstBest = await page.evaluate(() => window.__poseidon.firstBestMs);
  t.diagnostic(`page load to first best plan: ${Math.round(firstBest)} ms`);
  await assertClean(page, problems);
});

test('an invalid field shows the core message next to the field and in the error region', async (t) => {
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.fill('[data-path="training.global_batch_size"]', '0');
  await page.waitForSelector('[data-testid=error]:not([hidden])');
  const field = await page.textContent('[data-error-for="training.global_batch_size"]');
  assert.ok(field.length > 0, 'message next to the field');
  assert.equal(await page.getAttribute('[data-path="training.global_batch_size"]', 'aria-invalid'), 'true');
  assert.match(await page.textContent('[data-testid=error]'), /training\.global_batch_size/);
  // the model field: text that is not a number goes to the core, which names it
  await page.fill('[data-path="training.global_batch_size"]', '64');
  await page.fill('[data-path="model.hidden_size"]', 'abc');
  await page.waitForFunction(() => document.querySelector('[data-error-for="model.hidden_size"]').textContent.length > 0);
  assert.equal(await page.inputValue('[data-path="model.hidden_size"]'), 'abc', 'the input is kept');
  if (searchWorks) {
    await page.click('[data-testid=run]');
    await page.waitForFunction(() => /fix the inputs/.test(document.querySelector('[data-testid=progress]').textContent));
    assert.match(await page.textContent('[data-testid=error]'), /model\.hidden_size/);
  }
  await page.fill('[data-path="model.hidden_size"]', '2304');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden);
  // the search time limit: a value the core refuses is sent as typed; the field shows the core's
  // range message naming it, and no cut-short search says "No feasible plan"
  if (searchWorks) {
    // in words first, the core's line (path and words) after it (issue 36 item 9)
    for (const [typed, re] of [['0', /^0 is too small\. Enter a number above 0 and at most 86,400\. \(options\.time_limit_s: 0 is out of range; expected a finite number > 0/],
      ['-1', /^-1 is too small\. .*\(options\.time_limit_s: -1 is out of range/], ['abc', /^"abc" is not a number\. .*\(options\.time_limit_s: "abc" is a string; expected a finite number/]]) {
      await page.fill('[data-path="options.time_limit_s"]', typed);
      await page.click('[data-testid=run]');
      await page.waitForFunction(() => /fix the inputs/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
      assert.match(await page.textContent('[data-error-for="options.time_limit_s"]'), re, typed);
      assert.match(await page.textContent('[data-testid=error]'), /options\.time_limit_s/);
      assert.doesNotMatch(await page.textContent('[data-testid=best-plan]'), /No feasible plan/);
    }
    await page.fill('[data-path="options.time_limit_s"]', '2');
    await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden);
  }
  await assertClean(page, problems);
});

test('share link round trip: a fresh page shows the same plan', async (t) => {
  const { page, problems } = await open(t, await demoLink());
  await page.waitForFunction(() => /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent));
  const best = await page.textContent('[data-testid=best-plan]');
  assert.match(best, /Shared plan: [\d,]+ tokens\/s/);
  await page.click('[data-testid=copy-link]');
  await page.waitForFunction(() => document.querySelector('#share-url').value.includes('#v=1&s='));
  const link = await page.inputValue('#share-url');
  const { page: fresh, problems: p2 } = await open(t, link);
  await fresh.waitForFunction(() => /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent));
  assert.equal(await fresh.textContent('[data-testid=best-plan]'), best);
  await assertClean(page, problems);
  await assertClean(fresh, p2);
});

test("the search's notes are listed with its counts (a setting that changes nothing)", async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.check('[data-path="training.tf32"]');
  await page.fill('[data-path="options.time_limit_s"]', '2');
  await page.click('[data-testid=run]');
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
  await page.waitForSelector('[data-testid=search-notes]', { state: 'attached' });
  assert.match(await page.textContent('[data-testid=search-notes]'), /training\.tf32 changes nothing with precision bf16/);
  await assertClean(page, problems);
});

test('a search result round-trips through its share link', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page } = await open(t, `${site.url}index.html`);
  await page.fill('[data-path="options.time_limit_s"]', '1');
  await page.click('[data-testid=run]');
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 })
    .catch(async (e) => { throw new Error(`${e.message}; progress: ${await page.textContent('[data-testid=progress]')}; error: ${await page.textContent('[data-testid=error]')}`); });
  const tps = (await page.textContent('[data-testid=best-tokens]')).trim();
  await page.click('[data-testid=copy-link]');
  // the lowest format that holds it: 5, the default's MoE model preset (share.js's V5_PRESETS)
  await page.waitForFunction(() => document.querySelector('#share-url').value.includes('#v=5&s='));
  const { page: fresh } = await open(t, await page.inputValue('#share-url'));
  await fresh.waitForFunction(() => document.querySelector('[data-testid=best-tokens]'));
  assert.equal((await fresh.textContent('[data-testid=best-tokens]')).trim(), tps);
});

test('broken and future-version links show a message; the page stays usable and inputs are kept', async (t) => {
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.fill('[data-path="training.global_batch_size"]', '128');
  const good = (await demoLink()).split('#')[1];
  for (const [frag, re] of [[good.slice(0, good.length - 12), /truncated|corrupted/], [good.replace('v=1', `v=${SHARE_VERSION + 1}`), /newer version/],
    ['v=1&s=@@@', /characters/], [`v=1&s=${'A'.repeat(80000)}`, /characters long/]]) {
    await page.evaluate((f) => { location.hash = f; }, frag);
    await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid=error]').textContent), re.source);
    assert.equal(await page.isHidden('[data-testid=error]'), false);
    assert.equal(await page.inputValue('[data-path="training.global_batch_size"]'), '128', 'inputs kept');
  }
  assert.ok(await page.isEnabled('[data-testid=run]'));
  // a broken link on a fresh load: defaults plus the message
  const { page: fresh } = await open(t, `${site.url}index.html#v=1&s=AAAA`);
  await fresh.waitForSelector('[data-testid=error]:not([hidden])');
  assert.ok(await fresh.isEnabled('[data-testid=run]'));
  await assertClean(page, problems);
});

test('embed mode renders one plan, links back, and posts its height', async (t) => {
  const link = (await demoLink()).split('#')[1];
  const { page, problems } = await open(t, `${site.url}embed.html#${link}`);
  await page.waitForFunction(() => /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent));
  assert.ok(await page.evaluate(() => document.documentElement.classList.contains('embed')));
  assert.equal(await page.isHidden('#inputs'), true);
  assert.ok(await page.locator('#timeline svg').count() === 1);
  assert.match(await page.getAttribute('#full-planner', 'href'), /index\.html#v=1&s=/);
  // it has no inputs and no Find plans: its progress line points to the full planner
  await page.waitForFunction(() => /estimated/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.match(await page.textContent('[data-testid=progress]'), /open it in the full planner/);
  await assertClean(page, problems);
  // inside an iframe: the parent receives poseidon:resize
  const host = await page.context().newPage();
  await host.goto(`${site.url}index.html?nosw`);
  const height = await host.evaluate(async (src) => {
    document.body.textContent = '';
    const got = new Promise((resolve) => addEventListener('message', (e) => { if (e.data?.type === 'poseidon:resize') resolve(e.data.height); }));
    const f = document.createElement('iframe');
    f.src = src;
    document.body.append(f);
    return got;
  }, `${site.url}embed.html#${link}`);
  assert.ok(height > 100, `height ${height}`);
});

test('embed mode: a corrupted or newer link shows its message in place of the plan, and plans nothing', async (t) => {
  for (const frag of ['v=1&s=AAAA', 'v=9&s=abc']) {
    const { page, problems } = await open(t, `${site.url}embed.html#${frag}`);
    await page.waitForFunction(() => document.querySelector('[data-testid=best-plan]').dataset.refused === 'true');
    const text = await page.textContent('[data-testid=best-plan]');
    assert.match(text, /^This embedded plan cannot be shown: /);
    assert.ok(text.includes(frag), text);
    await page.waitForTimeout(500);
    assert.doesNotMatch(await page.textContent('[data-testid=best-plan]'), /tokens\/s/, 'no other plan is shown as the embedded one');
    assert.equal(await page.locator('#timeline svg rect.tl-ev').count(), 0);
    await assertClean(page, problems);
  }
});

test('exports download valid files', async (t) => {
  const { page, problems } = await open(t, await demoLink());
  await page.waitForFunction(() => !document.querySelector('#export-trace').disabled);
  const grab = async (id) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(id)]);
    return { name: dl.suggestedFilename(), body: fs.readFileSync(await dl.path()) };
  };
  const plan = await grab('#export-plan');
  assert.deepStrictEqual(JSON.parse(plan.body).stages, demoPlan.stages);
  const csv = (await grab('#export-csv')).body.toString();
  assert.match(csv.split('\n')[0], /^rank,iteration_time_s,tokens_per_s/);
  assert.equal(csv.trim().split('\n').length, 2);
  const svg = (await grab('#export-svg')).body.toString();
  assert.match(svg, /^<\?xml[^>]*>\s*<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok((svg.match(/<rect/g) || []).length > 20);
  const png = (await grab('#export-png')).body;
  assert.deepStrictEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const trace = JSON.parse((await grab('#export-trace')).body);
  const xs = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.ok(xs.length > 10);
  assert.ok(xs.some((e) => e.tid >= 100) && xs.some((e) => e.tid < 100), 'compute and comm tracks');
  await page.click('#export-megatron');
  assert.match(await page.textContent('#megatron'), /cannot be expressed|tensor-model-parallel-size/);
  // the plan file loads back into the page
  await page.setInputFiles('#plan-file', { name: 'plan.json', mimeType: 'application/json', buffer: plan.body });
  await page.waitForFunction(() => /Loaded plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  await page.setInputFiles('#plan-file', { name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}') });
  await page.waitForFunction(() => /not a plan file/.test(document.querySelector('[data-testid=error]').textContent));
  await assertClean(page, problems);
});

test('the main thread stays responsive during a long search, and cancel works', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.selectOption('#model-preset', 'gpt3-175b').catch(() => {});
  await page.selectOption('#cluster-preset', 'mixed-h100-a100-4090').catch(() => {});
  await page.fill('[data-path="training.global_batch_size"]', '1536');
  await page.fill('[data-path="options.time_limit_s"]', '30');
  await page.check('[data-path="options.exhaustive"]');
  await page.click('[data-testid=run]');
  const maxGap = await page.evaluate(() => new Promise((resolve) => {
    let last = performance.now();
    let max = 0;
    const end = last + 2000;
    const tick = () => {
      const now = performance.now();
      max = Math.max(max, now - last);
      last = now;
      if (now < end) setTimeout(tick, 10); else resolve(max);
    };
    setTimeout(tick, 10);
  }));
  t.diagnostic(`longest main-thread gap while searching: ${Math.round(maxGap)} ms`);
  // A search on the main thread would block the whole 2 s window; 1 s tells that apart from the
  // scheduling gaps of a 2-core CI machine whose cores the pool's workers fill (250 ms was the bound
  // until 2026-12; CI saw 282-438 ms, and 35-72 ms alone)
  assert.ok(maxGap < 1000, `main thread blocked for ${maxGap} ms`);
  assert.match(await page.textContent('[data-testid=progress]'), /evaluated/);
  await page.click('#cancel');
  await page.waitForFunction(() => /^Cancelled/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.ok(await page.isEnabled('[data-testid=run]'));
  // the respawned worker works
  await page.fill('[data-path="options.time_limit_s"]', '1');
  await page.uncheck('[data-path="options.exhaustive"]');
  await page.click('[data-testid=run]');
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 })
    .catch(async (e) => { throw new Error(`${e.message}; progress: ${await page.textContent('[data-testid=progress]')}; error: ${await page.textContent('[data-testid=error]')}`); });
  await assertClean(page, problems);
});

test('keyboard: run is reachable with Tab and the theme toggles', async (t) => {
  const { page } = await open(t, `${site.url}index.html`);
  await page.focus('#theme');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  let reached = false;
  for (let i = 0; i < 80 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.dataset?.testid === 'run');
  }
  assert.ok(reached, 'the run button is reachable by keyboard');
});

test('a large plan\'s timeline is aggregated: bounded elements, complete Chrome trace', async (t) => {
  const m = 2700; // 8 stages x 2,700 micro-batches: about 81,000 events
  const plan = { micro_batch_size: 1, num_micro_batches: m, schedule: '1f1b', stages: Array.from({ length: 8 }, () => ({ group: 0, num_layers: 1, tp: 1, dp: 1 })) };
  const M = await loadModule();
  const events = JSON.parse(M.estimate(JSON.stringify({ model: 'tiny-8l', training: { global_batch_size: m }, cluster: 'dgx-a100-1' }), JSON.stringify(plan))).timeline.length;
  assert.ok(events > 80000, `${events} events`);
  const link = `${site.url}index.html#${await encodeShare({ m: 'tiny-8l', c: 'dgx-a100-1', t: { global_batch_size: m }, p: plan })}`;
  const { page, problems } = await open(t, link);
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
  await page.waitForSelector('#timeline svg');
  const svg = await page.$eval('#timeline svg', (el) => ({ all: el.querySelectorAll('*').length, bars: el.querySelectorAll('rect.tl-ev').length, events: Number(el.dataset.events) }));
  t.diagnostic(`${events} events → ${svg.bars} bars, ${svg.all} SVG elements`);
  assert.equal(svg.events, events);
  assert.ok(svg.bars > 0 && svg.bars <= 3000, `${svg.bars} bars`);
  assert.ok(svg.all < 8000, `${svg.all} SVG elements`);
  assert.match(await page.textContent('[data-testid=timeline-note]'), /events drawn as [\d,]+ bars/);
  assert.equal(await page.locator('[data-testid=timeline-table] tbody tr').count(), 8, 'one table row per stage');
  const grab = async (id) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(id)]);
    return fs.readFileSync(await dl.path());
  };
  const exported = (await grab('#export-svg')).toString();
  assert.ok((exported.match(/<rect/g) || []).length < 4000, 'the SVG export is aggregated too');
  assert.match(exported, /events drawn as/);
  const png = await grab('#export-png');
  assert.deepStrictEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const trace = JSON.parse(await grab('#export-trace'));
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, events, 'the Chrome trace has every event');
  await assertClean(page, problems);
});
