// What-if, plan comparison and preset prices in headless Chromium (strict CSP header):
// the variants searched in the worker pool equal the core's searches, the scaling chart and
// table, stale jobs cancelled by an edit, two plans side by side, prices with source and date.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/whatif.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { siteDir, loadModule } from './load-module.mjs';
import { whatIfSpec, whatIfOptions } from '../../web/whatif.js';
import { presetPrices, trainingCost } from '../../web/cost.js';
import { encodeShare } from '../../web/share.js';
import { demoInputs } from './harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync'];
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const demo = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/examples/demo.scenario.json'), 'utf8'));

let browser;
let site;
let M;
let presets;
let searchWorks = true;

before(async () => {
  M = await loadModule();
  presets = JSON.parse(M.presets());
  searchWorks = !JSON.parse(M.plan(JSON.stringify(demo), JSON.stringify({ top: 1, time_limit_s: 0.5 }))).error;
  site = await serve(siteDir(), { csp: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

after(async () => {
  await browser?.close();
  site?.server.close();
});

async function open(t, url, viewport = { width: 1440, height: 900 }) {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(url);
  await page.waitForFunction(() => window.__poseidonReady === true, null, { timeout: 30000 });
  // What-if and Compare are folded below the plan (issue 36 item 2): opened, as a user would
  await page.evaluate(() => { for (const d of document.querySelectorAll('details.fold')) d.open = true; });
  t.after(() => ctx.close());
  return { page, problems };
}

const settled = (page, timeout = 60000) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale')
  && document.querySelector('#cancel').disabled && /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout });
// the demo scenario's inputs as a link (the page plans them on load): the plain visit's inputs until 2026-12-06
const demoInputsLink = async () => `${site.url}index.html#${await encodeShare(demoInputs)}`;
const whatIfDone = (page, timeout = 120000) => page.waitForFunction(() => {
  const w = window.__poseidon.whatif();
  return w.on && !w.running && !w.stale && w.total > 0 && w.done === w.total;
}, null, { timeout });

async function assertClean(page, problems) {
  assert.deepStrictEqual(await page.evaluate(() => window.__csp), [], 'no CSP violations');
  assert.deepStrictEqual(problems, [], 'no page errors');
}

test('what-if on the demo cluster: each variant equals the core\'s search, in the pool; chart, table and costs', async (t) => {
  if (!searchWorks) { t.skip('the core\'s search fails on the demo scenario'); return; }
  const { page, problems } = await open(t, await demoInputsLink());
  await settled(page);
  assert.equal(await page.isDisabled('[data-testid=whatif-run]'), false);
  await page.click('[data-testid=whatif-run]');
  await whatIfDone(page);
  const w = await page.evaluate(() => window.__poseidon.whatif());
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  assert.equal(w.pool.size, Math.max(1, Math.min(cores, 8)), 'min(cores, 8) workers');
  assert.ok(w.pool.spawned >= 1 && w.pool.spawned <= w.pool.size);
  // the jobs: every variant but the current cluster (its complete search is on screen)
  const spec = whatIfSpec(demo, presets.clusters, { skipCurrent: true });
  assert.equal(w.total, spec.jobs.length);
  const options = whatIfOptions({ time_limit_s: 10 });
  const core = new Map(spec.jobs.map((j) => [j.key, JSON.parse(M.plan(JSON.stringify(j.scenario), JSON.stringify(options)))]));
  const best = Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
  const defaults = presetPrices(presets.devices);
  for (const g of spec.groups) {
    const row = page.locator(`[data-testid=whatif-table] tbody tr[data-group="${g.group}"]`);
    // the group by its device's name, as the inputs show it, not the core's id (issue 36 item 9)
    const name = presets.devices.find((d) => d.id === g.device).name.replace(/^(NVIDIA|AMD)\s+/, '');
    assert.equal(await row.locator('th').textContent(), `${g.group}: ${name}`);
    const cells = await row.locator('td[data-status]').evaluateAll((tds) => tds.map((td) => ({ status: td.dataset.status, tokens: Number(td.dataset.tokens) })));
    const usd = await row.locator('td.cost-1m').evaluateAll((tds) => tds.map((td) => Number(td.dataset.usd)));
    let k = 0;
    for (const key of [g.removed, g.minus, g.plus]) {
      const res = core.get(key);
      const est = res.plans[0];
      assert.equal(cells[k].status, est ? 'plan' : 'none', `group ${g.group} variant ${key}`);
      assert.equal(cells[k].tokens, est ? est.tokens_per_s : 0, `group ${g.group} variant ${key}: the core's tokens/s`);
      if (est) {
        const job = spec.jobs.find((j) => j.key === key);
        const c = trainingCost(est, job.cluster, { defaults });
        assert.ok(Math.abs(usd[k] - c.usdPer1M) < 1e-9 * c.usdPer1M, `cost of ${key} with the variant's GPUs and the presets' prices`);
      }
      k++;
    }
    // the chart: one point per scaling node count, the current one ringed at the search's tokens/s
    const pts = await page.$$eval(`[data-testid=whatif-svg] g[data-group="${g.group}"] .chart-point`,
      (els) => els.map((e) => ({ gpus: Number(e.dataset.gpus), tokens: Number(e.dataset.tokens), current: e.dataset.current === 'true' })));
    assert.deepStrictEqual(pts.map((p) => p.gpus), g.scale.map((p) => p.gpus));
    const cur = pts.find((p) => p.current);
    assert.equal(Math.round(cur.tokens), best);
    for (const p of pts.filter((x) => !x.current)) {
      const key = g.scale.find((s) => s.gpus === p.gpus).key;
      assert.equal(p.tokens, key ? (core.get(key).plans[0]?.tokens_per_s ?? 0) : 0);
    }
  }
  // the groups' current points coincide where their GPU counts do: nested rings, none hidden under another
  const rings = await page.$$eval('[data-testid=whatif-svg] circle[data-current]', (els) => els.map((e) => `${e.getAttribute('cx')},${e.getAttribute('cy')},${e.getAttribute('r')}`));
  assert.equal(rings.length, spec.groups.length);
  assert.equal(new Set(rings).size, rings.length, rings.join(' '));
  assert.match(await page.textContent('[data-testid=whatif-progress]'), /^Done: \d+ variant searches in [\d.]+ s on \d+ workers?/);
  assert.equal(await page.locator('[data-testid=whatif-scaling-table] tbody tr').count(), spec.groups.reduce((a, g) => a + g.scale.length, 0));
  // a new price re-prices the table without searching again
  const before = w.pool.spawned;
  await page.fill('[data-testid=price-table] input[data-device="a100-sxm4-80gb"]', '10');
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=whatif-table] td.cost-1m')].some((td) => td.textContent !== '–'));
  const plusA100 = core.get(spec.groups[0].plus).plans[0];
  const priced = trainingCost(plusA100, spec.jobs.find((j) => j.key === spec.groups[0].plus).cluster, { prices: { 'a100-sxm4-80gb': 10 }, defaults }).usdPer1M;
  await page.waitForFunction((usd) => [...document.querySelectorAll('[data-testid=whatif-table] tr[data-group="0"] td.cost-1m')]
    .some((td) => Math.abs(Number(td.dataset.usd) - usd) < 1e-9 * usd), priced);
  assert.equal((await page.evaluate(() => window.__poseidon.whatif())).pool.spawned, before);
  await assertClean(page, problems);
});

test('what-if: an edit cancels the jobs still running (outdated meanwhile); the next result recomputes it', async (t) => {
  if (!searchWorks) { t.skip('the core\'s search fails on the demo scenario'); return; }
  // three groups, searches of about a second each: 18 variants are still running when we edit
  const { page, problems } = await open(t, `${site.url}index.html`);
  await settled(page);
  await page.selectOption('#cluster-preset', 'mixed-h100-a100-4090');
  await settled(page);
  await page.click('[data-testid=whatif-run]');
  await page.waitForFunction(() => { const w = window.__poseidon.whatif(); return w.running && w.pool.busy > 0; });
  const total = (await page.evaluate(() => window.__poseidon.whatif())).total;
  assert.ok(total >= 12, `${total} variants`);
  await page.fill('[data-path="training.global_batch_size"]', '128');
  const w = await page.evaluate(() => window.__poseidon.whatif());
  assert.equal(w.stale, true);
  assert.equal(w.running, false);
  assert.equal(w.pool.busy, 0, 'the busy workers were stopped at once');
  assert.equal(w.pool.queued, 0);
  assert.ok(w.done < total, `cancelled after ${w.done} of ${total}`);
  assert.match(await page.textContent('[data-testid=whatif-progress]'), /^Outdated/);
  // the new result restarts the what-if with the new inputs; Stop ends it
  await settled(page);
  await page.waitForFunction(() => { const x = window.__poseidon.whatif(); return x.running && !x.stale; });
  await page.click('#whatif-stop');
  const stopped = await page.evaluate(() => window.__poseidon.whatif());
  assert.deepStrictEqual([stopped.on, stopped.running, stopped.pool.busy], [false, false, 0]);
  await assertClean(page, problems);
});

test('compare two plans: figures and stages side by side, differences marked, the better value bold', async (t) => {
  if (!searchWorks) { t.skip('the core\'s search fails on the demo scenario'); return; }
  const { page, problems } = await open(t, await demoInputsLink());
  await settled(page);
  const res = JSON.parse(M.plan(JSON.stringify(demo), JSON.stringify({ top: 5, time_limit_s: 10 })));
  assert.ok(res.plans.length >= 3);
  // #1 against #2 at first, then #3
  assert.equal(await page.inputValue('[data-testid=compare-a]'), '0');
  assert.equal(await page.inputValue('[data-testid=compare-b]'), '1');
  await page.selectOption('[data-testid=compare-b]', '2');
  await page.waitForFunction(() => /#3/.test(document.querySelector('[data-testid=compare-table] caption').textContent));
  const tps = await page.$$eval('[data-testid=compare-table] tr[data-key=tokens_per_s] td[data-side]', (tds) => tds.map((td) => Number(td.textContent.replace(/[^\d]/g, ''))));
  assert.deepStrictEqual(tps, [Math.round(res.plans[0].tokens_per_s), Math.round(res.plans[2].tokens_per_s)]);
  const row = await page.$eval('[data-testid=compare-table] tr[data-key=iteration_time_s]', (tr) => ({ differs: tr.dataset.differs, better: tr.querySelector('td.better')?.dataset.side ?? null }));
  const differs = res.plans[0].iteration_time_s !== res.plans[2].iteration_time_s;
  assert.equal(row.differs, String(differs));
  assert.equal(row.better, differs ? 'a' : null, 'the faster plan is #1');
  // a small plan comes with its breakdown: the bubble row is filled, no note about a missing one
  const bubbles = await page.$$eval('[data-testid=compare-table] tr[data-key=bubble_s] td[data-side]', (tds) => tds.map((td) => td.textContent));
  assert.equal(bubbles.length, 2);
  assert.ok(bubbles.every((x) => x !== '–'), bubbles.join(', '));
  assert.equal(await page.locator('[data-testid=compare-missing]').count(), 0);
  // no optional note: nothing at all under the tables (not the text "null")
  assert.doesNotMatch(await page.textContent('[data-testid=compare]'), /null/);
  assert.equal(await page.$eval('[data-testid=compare]', (el) => [...el.childNodes].filter((n) => n.nodeType === 3).length), 0, 'no stray text node');
  // the schedule row: 1F1B or interleaved with its chunks per stage, as each plan has it
  const sched = (est) => ((est.plan?.virtual_stages ?? 1) > 1 ? `interleaved 1F1B, ${est.plan.virtual_stages} chunks per stage` : '1F1B');
  assert.deepStrictEqual(await page.$$eval('[data-testid=compare-table] tr[data-key=schedule] td[data-side]', (tds) => tds.map((td) => td.textContent)),
    [sched(res.plans[0]), sched(res.plans[2])]);
  const stages = await page.locator('[data-testid=compare-stages] tbody tr').count();
  assert.equal(stages, Math.max(res.plans[0].stages.length, res.plans[2].stages.length));
  // capacity as the stage table writes it (V100 32 GB: 31.75 GiB → "31.8", not "32")
  const one = (x) => x.toLocaleString('en-US', { maximumFractionDigits: 1 });
  const stageTexts = await page.$$eval('[data-testid=compare-stages] tbody tr td', (tds) => tds.map((td) => td.textContent));
  for (const [k, st] of res.plans[0].stages.entries()) assert.ok(stageTexts[2 * k].endsWith(` / ${one(st.memory_capacity_GiB)} GiB`), stageTexts[2 * k]);
  // devices by name, as the inputs show them (issue 36 item 9)
  assert.doesNotMatch(await page.textContent('[data-testid=compare]'), /a100-sxm4-80gb|v100-sxm2-32gb/);
  assert.match(await page.textContent('[data-testid=compare-stages]'), /A100 SXM4 80GB/);
  // dollar figures that differ read differently (enough significant digits)
  const usd = await page.$eval('[data-testid=compare-table] tr[data-key=usd_per_1m]', (tr) => ({ differs: tr.dataset.differs, cells: [...tr.querySelectorAll('td[data-side]')].map((td) => td.textContent) }));
  if (usd.differs === 'true') assert.notEqual(usd.cells[0], usd.cells[1], usd.cells.join(' vs '));
  assert.match(usd.cells[0], /^\$\d/);
  await assertClean(page, problems);
});

test('prices come from the device presets, with their source and date next to each default', async (t) => {
  const { page, problems } = await open(t, await demoInputsLink());
  await page.waitForSelector('[data-testid=price-table] tr[data-device="a100-sxm4-80gb"]');
  const defaults = presetPrices(presets.devices);
  for (const dev of ['a100-sxm4-80gb', 'v100-sxm2-32gb']) {
    const cell = page.locator(`[data-testid=price-table] tr[data-device="${dev}"] td.price-default`);
    assert.equal(Number(await cell.getAttribute('data-usd')), defaults[dev].usd);
    assert.equal(await cell.getAttribute('data-as-of'), defaults[dev].asOf);
    const text = await cell.textContent();
    assert.ok(text.includes(`as of ${defaults[dev].asOf}`), text);
    assert.ok(text.includes(defaults[dev].source.split(' : ')[1].slice(0, 30)), text);
    assert.equal(await cell.locator('a').getAttribute('href'), defaults[dev].source.split(' : ')[0]);
    assert.equal(await page.getAttribute(`[data-testid=price-table] input[data-device="${dev}"]`, 'placeholder'), String(defaults[dev].usd));
  }
  assert.match(await page.textContent('#price-note'), /transcribed from the provider's price page as known on the date shown, not fetched live/);
  // a device without a public price (TITAN RTX): the page asks for one
  await page.selectOption('#cluster-preset', 'sailor-mit-mix');
  await page.waitForSelector('[data-testid=price-table] tr[data-device="titan-rtx-24gb"]');
  assert.match(await page.textContent('[data-testid=price-table] tr[data-device="titan-rtx-24gb"] td.price-default'), /enter one/);
  assert.match(await page.textContent('#price-note'), /No price for NVIDIA TITAN RTX/);
  await assertClean(page, problems);
});

test('what-if and compare at 390 px: no horizontal page scroll', async (t) => {
  if (!searchWorks) { t.skip('the core\'s search fails on the demo scenario'); return; }
  const { page, problems } = await open(t, `${site.url}index.html`, { width: 390, height: 844 });
  await settled(page);
  await page.click('[data-testid=whatif-run]');
  await whatIfDone(page);
  const w = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
    svg: document.querySelector('[data-testid=whatif-svg]').getBoundingClientRect().width,
    viewBox: document.querySelector('[data-testid=whatif-svg]').viewBox.baseVal.width,
    label: document.querySelector('[data-testid=whatif-svg] .chart-label').getBoundingClientRect().height }));
  assert.ok(w.scroll <= w.client, `the page is ${w.scroll} px wide in ${w.client}`);
  assert.ok(w.svg <= 390);
  // drawn at its box's width, not scaled down: the labels keep their size
  assert.ok(Math.abs(w.viewBox - w.svg) <= 1, `viewBox ${w.viewBox} drawn ${w.svg} px wide`);
  assert.ok(w.label >= 10, `label ${w.label} px tall`);
  await assertClean(page, problems);
});
