// The page as a planning workbench (issue 12) in headless Chromium, strict CSP header: errors,
// live planning and links, explanations, advice, timelines and exports of every listed plan, zoom,
// Perfetto (search and training fields, the NVLink domain, config and scenario files:
// workbench-fields.test.mjs; layout, cost, units and the top plans' folding: results.test.mjs;
// keyboard and colour schemes: a11y.test.mjs).   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/workbench.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { workbenchHelpers } from './workbench-helpers.mjs';
import { useBrowser, assertClean, ROOT, demoScenario, demoPlan, pageScenario, DESKTOP, PHONE } from './harness.mjs';

let site;
let M;
let searchWorks = true;
let searchSkipReason = '';
const env = useBrowser({ viewport: DESKTOP, ready: (e) => { ({ site, M, searchWorks, searchSkipReason } = e); } });

const { open, link, tokensOf, settled, hashPayload } = workbenchHelpers(env);

test('an error never moves the results; errors are next to the field and in the summary above the inputs', async (t) => {
  for (const viewport of [DESKTOP, PHONE]) {
    const { page, problems } = await open(t, `${site.url}index.html`, viewport);
    if (searchWorks) await settled(page);
    const phone = viewport.width < 900;
    // a phone shows the inputs or the results, one at a time, under tabs (web/phone-tabs.js)
    const tabs = await page.isVisible('[data-testid=phone-tabs]');
    assert.equal(tabs, viewport.width <= 700, `tabs at ${viewport.width} px`);
    const layout = await page.evaluate(() => ({
      resultsTop: document.querySelector('#results').getBoundingClientRect().top + scrollY,
      bodyTop: document.querySelector('#results-body').getBoundingClientRect().top + scrollY,
      inputsTop: document.querySelector('#inputs').getBoundingClientRect().top + scrollY,
      inputsShown: document.querySelector('#inputs').checkVisibility(),
      open: [...document.querySelectorAll('details.sec')].map((d) => d.open),
    }));
    if (phone) {
      if (tabs) assert.equal(layout.inputsShown, false, 'the Results tab first on a phone');
      else assert.ok(layout.resultsTop < layout.inputsTop, 'results first on a phone');
      assert.ok(layout.open.every((o) => !o), 'the input sections start collapsed on a phone');
      if (tabs) await page.click('[data-testid=tab-inputs]');
      await page.click('#sec-training > summary');
    } else {
      assert.ok(layout.open.every((o) => o), 'every section open on a wide screen');
    }
    await page.fill('[data-path="training.global_batch_size"]', '0');
    await page.waitForSelector('[data-testid=error]:not([hidden])');
    await page.waitForFunction(() => document.querySelector('[data-error-for="training.global_batch_size"]').textContent.length > 0);
    if (tabs) await page.click('[data-testid=tab-results]');
    const after = await page.evaluate(() => ({ resultsTop: document.querySelector('#results').getBoundingClientRect().top + scrollY,
      bodyTop: document.querySelector('#results-body').getBoundingClientRect().top + scrollY }));
    assert.equal(after.resultsTop, layout.resultsTop, `the results did not move at ${viewport.width} px`);
    assert.equal(after.bodyTop, layout.bodyTop, `the results under the summary did not move at ${viewport.width} px`);
    assert.ok(await page.evaluate(() => document.querySelector('#inputs').contains(document.querySelector('[data-testid=error]'))), 'the summary is in the inputs');
    assert.equal(await page.isVisible('#error-jump'), true, 'the sticky summary points to the problems');
    // following it moves the focus to the list (on a phone, on the Inputs tab) and leaves the address bar's link as it was
    const hashBefore = await page.evaluate(() => location.hash);
    await page.focus('#error-jump');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'error', 'the focus is on the problems');
    assert.equal(await page.isVisible('[data-testid=error]'), true, 'the problems are on screen');
    assert.equal(await page.evaluate(() => location.hash), hashBefore, 'no #error in the address bar');
    await page.focus('a.skip[href="#results"]');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'results');
    assert.equal(await page.isVisible('[data-testid=best-plan]'), true, 'the results are on screen');
    assert.equal(await page.evaluate(() => location.hash), hashBefore, 'no #results in the address bar');
    if (searchWorks) assert.ok((await page.textContent('[data-testid=best-tokens]')).length > 0, 'the last result stays visible');
    // a broken link on a fresh page: the message, and the default plan under it
    const { page: broken } = await open(t, `${site.url}index.html#v=1&s=AAAA`, viewport);
    // (on a phone's Results tab the message waits on the Inputs tab, pointed to by the summary)
    await broken.waitForSelector('[data-testid=error]:not([hidden])', { state: tabs ? 'attached' : 'visible' });
    if (searchWorks) {
      await settled(broken);
      assert.match(await broken.textContent('[data-testid=error]'), /share link/, 'the link message stays after the search');
      assert.match(await broken.textContent('[data-testid=error]'), /The link's fragment: #v=1&s=AAAA\n/, 'the refused link stays readable');
    }
    await assertClean(page, problems);
  }
});

test('live planning: planned on load, re-planned within 1 s of an edit, stale meanwhile; the link is always what is shown', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await settled(page); // nothing was clicked
  const first = await page.evaluate(() => window.__poseidon.firstBestMs);
  t.diagnostic(`page load to first best plan: ${Math.round(first)} ms`);
  assert.match((await hashPayload(page)).t ? 'ok' : '', /ok/);
  // Edit → new result within 1 s. The page's own work is measured from a quiet page (its service
  // worker done caching the site, no worker of the pool busy, an idle frame), and on a machine
  // shared with builds an edit that another process slowed is tried again: up to 3 edits, each
  // timed in the page (from the input event to the result on screen) and printed; one must be
  // under 1 s, and none may take 5 s.
  const quiet = () => page.evaluate(async () => {
    await Promise.race([navigator.serviceWorker?.ready, new Promise((r) => setTimeout(r, 5000))]);
    for (let i = 0; i < 100 && window.__poseidon.whatif().pool.busy > 0; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => (window.requestIdleCallback ? requestIdleCallback(r, { timeout: 1000 }) : setTimeout(r, 50)));
  });
  const times = [];
  for (const batch of ['512', '768', '512']) {
    await settled(page);
    await quiet();
    await page.fill('[data-path="training.global_batch_size"]', batch);
    // at once: the old result stays, marked stale, and the address bar has the new inputs without the old plan
    assert.equal(await page.isVisible('[data-testid=stale]'), true);
    assert.ok(await tokensOf(page) > 0);
    await page.waitForFunction(async () => location.hash.length > 10);
    await page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale'), null, { timeout: 10000 });
    const ms = await page.evaluate(() => window.__poseidon.lastResultMs - window.__poseidon.lastEditMs);
    times.push(ms);
    t.diagnostic(`edit to new result (batch ${batch}): ${Math.round(ms)} ms`);
    assert.ok(ms < 5000, `re-planned ${Math.round(ms)} ms after the edit`);
    if (ms < 1000) break;
  }
  assert.ok(Math.min(...times) < 1000, `re-planned ${times.map(Math.round).join(', ')} ms after ${times.length} edits`);
  if (await page.inputValue('[data-path="training.global_batch_size"]') !== '512') await page.fill('[data-path="training.global_batch_size"]', '512');
  await settled(page);
  const payload = await hashPayload(page);
  assert.equal(payload.t.global_batch_size, 512);
  const tps = await tokensOf(page);
  const expected = JSON.parse(M.estimate(JSON.stringify({ ...pageScenario, training: { ...pageScenario.training, global_batch_size: 512 } }), JSON.stringify(payload.p)));
  assert.equal(tps, Math.round(expected.tokens_per_s), 'the link holds the plan on screen');
  // reload: exactly what was shown
  await page.reload();
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]')?.textContent ?? ''), null, { timeout: 30000 });
  assert.equal(await tokensOf(page), tps);
  assert.equal(await page.inputValue('[data-path="training.global_batch_size"]'), '512');
  // an edit while a long search runs cancels it and plans the new inputs
  await page.selectOption('#model-preset', 'gpt3-175b');
  await page.selectOption('#cluster-preset', 'mixed-h100-a100-4090');
  await page.fill('[data-path="options.time_limit_s"]', '30');
  await page.check('[data-path="options.exhaustive"]');
  await page.waitForFunction(() => /evaluated [1-9]/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 20000 });
  await page.uncheck('[data-path="options.exhaustive"]');
  await page.fill('[data-path="options.time_limit_s"]', '1');
  await page.selectOption('#model-preset', 'gpt3-1.7b');
  await settled(page, 20000);
  // the summary stays on screen when the page scrolls
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  const top = await page.evaluate(() => document.querySelector('#summary').getBoundingClientRect().top);
  assert.ok(top >= 0 && top < 5, `sticky summary at ${top}`);
  // after an explicit run keyboard focus is on something sensible, not the page body
  await page.focus('[data-testid=run]');
  await page.keyboard.press('Enter');
  await settled(page);
  assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'BODY');
  await assertClean(page, problems);
});

test('explain the plan: what bounds the iteration, GPUs left idle and why', async (t) => {
  const est = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(demoPlan)));
  const { page, problems } = await open(t, await link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, p: demoPlan }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  const b = est.breakdown.bottleneck_stage;
  // devices by the names the inputs show, not the core's ids (issue 36 item 9)
  const deviceName = (id) => JSON.parse(M.presets()).devices.find((d) => d.id === id).name.replace(/^(NVIDIA|AMD)\s+/, '').replace(/^GeForce\s+/, '');
  const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  assert.match(await page.textContent('[data-testid=critical-path]'), new RegExp(`Stage ${b}, ${esc(deviceName(est.stages[b].device))}, bounds the iteration`));
  for (const panel of ['critical-path', 'stage-table', 'memory-breakdown', 'gpu-usage']) {
    for (const st of est.stages) assert.doesNotMatch(await page.textContent(`[data-testid=${panel}]`), new RegExp(`\\b${esc(st.device)}\\b`), `${panel} names devices, not ids`);
  }
  assert.match(await page.textContent('[data-testid=stage-table]'), new RegExp(esc(deviceName(est.stages[0].device))));
  assert.equal(await page.getAttribute('[data-testid=critical-path] .explain', 'data-bottleneck'), String(b));
  // the plan's notes (the V100's fp16 and unfused attention) are said beside it, the V100 by its name
  const notes = await page.$$eval('[data-testid=plan-notes] li', (lis) => lis.map((li) => li.textContent));
  assert.equal(notes.length, est.notes.length);
  assert.ok(notes.some((n) => /^training\.precision bf16: V100 SXM2 32GB has no bf16/.test(n)), notes.join(' | '));
  assert.equal(await page.locator(`[data-testid=critical-table] tr.bottleneck[data-stage="${b}"]`).count(), 1);
  assert.equal(await page.locator('[data-testid=critical-path] .bdseg').count(), Object.entries(est.breakdown).filter(([k, v]) => k !== 'bottleneck_stage' && v > 0).length);
  assert.match(await page.textContent('[data-testid=gpu-usage-summary]'), /uses all 16 GPUs/);
  // a plan on the A100s only: 8 of 16 GPUs, the V100 group idle, with reasons
  const half = { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8 }] };
  const { page: p2 } = await open(t, await link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, p: half }));
  await p2.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  assert.match(await p2.textContent('[data-testid=gpu-usage-summary]'), /uses 8 of the cluster's 16 GPUs: 8 stay idle/);
  assert.equal(await p2.getAttribute('[data-testid=gpu-usage] tr[data-group="1"]', 'data-idle'), '8');
  assert.match(await p2.textContent('[data-testid=idle-reasons]'), new RegExp(`Group 1, ${esc(deviceName('v100-sxm2-32gb'))}, is not used at all`));
  await assertClean(page, problems);
});

test('no feasible plan: the engine says what would make one fit, and one click applies it', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const cluster = { name: 'small mixed', groups: [{ device: 'a100-sxm4-40gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 },
    { device: 'v100-sxm2-16gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 }] };
  const sc = { model: 'llama3-8b', training: { global_batch_size: 8 }, cluster };
  const { page, problems } = await open(t, await link({ m: sc.model, c: { o: cluster }, t: sc.training, o: { top: 5, time_limit_s: 10 } }));
  await page.waitForSelector('[data-testid=advice] table', { timeout: 60000 });
  assert.match(await page.textContent('[data-testid=best-plan]'), /No feasible plan/);
  // the status line gives the search's counts, not the headline's words again
  const status = await page.textContent('#progress');
  assert.match(status, /^Done in .*: evaluated [\d,]+ plans · pruned [\d,]+ branches.*; no plan fits\.$/);
  assert.doesNotMatch(status, /feasible|what would make/i);
  const core = JSON.parse(M.advise(JSON.stringify(sc), JSON.stringify({ time_limit_s: 1, total_time_limit_s: 8 })));
  const rows = await page.$$eval('[data-testid=advice] tr[data-variant]', (trs) => trs.map((tr) => ({ id: tr.dataset.variant, status: tr.dataset.status })));
  // the variants that fit first, fastest first, then the others in the core's order
  const fits = core.variants.filter((v) => v.status === 'feasible').sort((a, b) => b.best.tokens_per_s - a.best.tokens_per_s);
  assert.deepStrictEqual(rows, [...fits, ...core.variants.filter((v) => v.status !== 'feasible')].map((v) => ({ id: v.id, status: v.status })));
  const full = core.variants.find((v) => v.id === 'recompute_full');
  assert.equal(full.status, 'feasible');
  assert.equal(Number((await page.textContent('[data-testid=advice] tr[data-variant="recompute_full"] td:nth-child(3)')).replace(/[^\d]/g, '')), Math.round(full.best.tokens_per_s));
  await page.click('[data-testid=advice] button[data-variant="recompute_full"]');
  assert.equal(await page.inputValue('[data-path="training.recompute"]'), 'full');
  await settled(page, 60000);
  const res = JSON.parse(M.plan(JSON.stringify({ ...sc, training: { ...sc.training, recompute: 'full' } }), JSON.stringify({ top: 5, time_limit_s: 10 })));
  if (res.stats.complete) assert.equal(await tokensOf(page), Math.round(res.plans[0].tokens_per_s));
  assert.equal(await page.isHidden('#advice-sec'), true);
  await assertClean(page, problems);
  // the embed (no inputs on screen) lists the same advice without Apply buttons, and says where to apply one
  const { page: embed, problems: p2 } = await open(t, (await link({ m: sc.model, c: { o: cluster }, t: sc.training, o: { top: 5, time_limit_s: 10 } })).replace('index.html', 'embed.html'));
  await embed.waitForSelector('[data-testid=advice] table', { timeout: 60000 });
  assert.ok(await embed.evaluate(() => document.documentElement.classList.contains('embed')));
  assert.ok(await embed.locator('[data-testid=advice] tr[data-status=feasible]').count() > 0);
  assert.equal(await embed.locator('[data-testid=advice] button').count(), 0, 'no Apply in the embed');
  assert.match(await embed.textContent('[data-testid=advice-embed-note]'), /open the full planner/);
  assert.equal(await embed.isHidden('[data-testid=stale]'), true);
  await assertClean(embed, p2);
});

test('every listed plan gets a timeline and its exports; the timeline zooms and pans; Perfetto without uploading', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems, requests } = await open(t, await env.demoInputsLink());
  await settled(page);
  assert.ok(await page.locator('[data-testid=top-plans] tbody tr').count() >= 3);
  // chosen from the keyboard: the focus stays on the chosen plan's button through the redraws
  await page.focus('[data-testid=top-plans] button[data-plan="2"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('#timeline svg rect.tl-ev').length > 0);
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.plan), '2', 'the focus stays on #3');
  const plan3 = (await hashPayload(page)).p;
  const est3 = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(plan3)));
  // the sticky summary follows the selection: plan #3's figures, said to be the selected plan
  assert.match(await page.textContent('[data-testid=best-plan] strong'), /^Selected plan #3: /);
  // the caption names the lanes the chart draws (compute, p2p sends, DP comm), not two bars
  const caption = await page.textContent('[data-testid=timeline-caption]');
  assert.match(caption, /compute .*EP all-to-all.*p2p sends.*DP comm/s);
  assert.doesNotMatch(caption, /Upper bar|lower bar/);
  assert.equal(await tokensOf(page), Math.round(est3.tokens_per_s));
  assert.match(await page.textContent('[data-testid=best-plan]'), new RegExp(`· ${est3.num_gpus} GPUs? · ${est3.stages.length} stage`));
  const grab = async (id) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(id)]);
    return { name: dl.suggestedFilename(), body: fs.readFileSync(await dl.path()) };
  };
  const trace = JSON.parse((await grab('#export-trace')).body);
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, est3.timeline.length, "plan #3's trace has its events");
  assert.equal(new Set(trace.traceEvents.map((e) => e.pid)).size, est3.stages.length);
  const svg = (await grab('#export-svg')).body.toString();
  assert.ok((svg.match(/<rect/g) || []).length > 20);
  const png = (await grab('#export-png')).body;
  assert.ok(png.length > 1000 && png[1] === 0x50);
  // zoom: the wheel narrows the window around the pointer, dragging moves it, 0 resets
  const view = () => page.$eval('#timeline svg', (s) => [Number(s.dataset.t0), Number(s.dataset.t1)]);
  const [a0, a1] = await view();
  const box = await page.locator('#timeline').boundingBox();
  await page.locator('#timeline').scrollIntoViewIfNeeded();
  const b2 = await page.locator('#timeline').boundingBox();
  await page.mouse.move(b2.x + b2.width * 0.6, b2.y + 20);
  await page.mouse.wheel(0, -400);
  await page.waitForFunction((w) => { const s = document.querySelector('#timeline svg'); return s.dataset.t1 - s.dataset.t0 < w * 0.9; }, a1 - a0);
  const [z0, z1] = await view();
  assert.ok(z1 - z0 < a1 - a0 && z0 > 0, `zoomed ${z0}..${z1}`);
  await page.mouse.move(b2.x + b2.width * 0.5, b2.y + 20);
  await page.mouse.down();
  await page.mouse.move(b2.x + b2.width * 0.3, b2.y + 20, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction((t0) => Number(document.querySelector('#timeline svg').dataset.t0) > t0 + 1e-9, z0);
  assert.match(await page.textContent('#zoom-range'), /showing/);
  await page.focus('#timeline');
  await page.keyboard.press('0');
  await page.waitForFunction(() => Number(document.querySelector('#timeline svg').dataset.t0) === 0);
  await page.click('#zoom-in');
  await page.waitForFunction((w) => { const s = document.querySelector('#timeline svg'); return s.dataset.t1 - s.dataset.t0 < w * 0.6; }, a1 - a0);
  void box;
  // Perfetto: the trace is downloaded and the page says how to open it; nothing leaves 127.0.0.1
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#open-perfetto')]);
  assert.equal(dl.suggestedFilename(), 'poseidon-trace.json');
  assert.equal(await page.isVisible('#perfetto-help'), true);
  assert.equal(await page.getAttribute('#perfetto-link', 'href'), 'https://ui.perfetto.dev/');
  assert.deepStrictEqual(requests.filter((u) => !u.startsWith(site.url) && !u.startsWith('blob:') && !u.startsWith('data:')), [], 'no request leaves the site');
  await assertClean(page, problems);
});

test('screenshots of both viewports for docs/web.md', async (t) => {
  if (!process.env.POSEIDON_SCREENSHOTS) { t.skip('set POSEIDON_SCREENSHOTS=1 to write docs/img/web-*.png'); return; }
  for (const [name, viewport] of [['1440', DESKTOP], ['390', PHONE]]) {
    const { page } = await open(t, `${site.url}index.html`, viewport);
    await settled(page);
    await page.screenshot({ path: path.join(ROOT, `docs/img/web-${name}.png`) });
  }
});
