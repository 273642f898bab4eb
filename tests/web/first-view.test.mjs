// The first view (issue 36 item 11): the site's first-view.json is the search of the page's
// default inputs by the module it serves, and a plain visit shows it before its engine is ready,
// then the engine's own search of the same inputs, which finds the same plans.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useBrowser, DESKTOP, assertClean, pageScenario } from './harness.mjs';
import { siteDir } from './load-module.mjs';

const env = useBrowser({ viewport: DESKTOP });
const firstView = () => JSON.parse(fs.readFileSync(path.join(siteDir(), 'first-view.json'), 'utf8'));
// what two searches of the same inputs share (not their wall time)
const plansOf = (result) => result.plans.map((p) => JSON.stringify(p.plan));
const timesOf = (result) => result.plans.map((p) => p.iteration_time_s);

test('first-view.json is the default search of the module the site serves, complete', () => {
  const fv = firstView();
  assert.equal(fv.format, 1);
  assert.equal(fv.version, env.M.version());
  assert.deepEqual(fv.presets, JSON.parse(env.M.presets()));
  assert.equal(fv.result.stats.complete, true);
  const again = JSON.parse(env.M.plan(JSON.stringify(fv.scenario), JSON.stringify(fv.options), () => true));
  assert.deepEqual(plansOf(again), plansOf(fv.result));
  assert.deepEqual(timesOf(again), timesOf(fv.result));
  // the page's defaults (state.js), as docs/examples/page.scenario.json writes them for the CLI
  assert.deepEqual(fv.scenario, pageScenario);
});

test('a plain visit shows the first view before its engine is ready, then the same plans from its own search', async (t) => {
  const ctx = await env.browser.newContext({ viewport: DESKTOP });
  t.after(() => ctx.close());
  const page = await ctx.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.addInitScript(() => { window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective)); });
  await page.goto(`${env.site.url}index.html?nosw`);
  await page.waitForFunction(() => window.__poseidon?.firstView === true, null, { timeout: 30000 });
  const early = await page.evaluate(() => ({ key: document.querySelector('#best-plan')?.dataset.planJson, text: document.querySelector('#best-plan')?.textContent,
    progress: document.querySelector('[data-testid=progress]')?.textContent, first: window.__poseidon.firstBestMs, ready: window.__poseidon.readyMs }));
  assert.ok(early.key, 'the headline shows a plan');
  assert.match(early.progress, /Found when this page was built|Searching|Done/);
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]')?.textContent ?? ''), null, { timeout: 60000 });
  const late = await page.evaluate(() => ({ key: document.querySelector('#best-plan')?.dataset.planJson, text: document.querySelector('#best-plan')?.textContent,
    first: window.__poseidon.firstBestMs, ready: window.__poseidon.readyMs, plans: window.__poseidon.result().result.plans.map((p) => JSON.stringify(p.plan)) }));
  assert.ok(late.first < late.ready, `the first plan (${late.first} ms) was on screen before the engine was ready (${late.ready} ms)`);
  assert.equal(late.key, early.key, 'the engine found the plan the first view showed');
  assert.equal(late.text, early.text);
  assert.deepEqual(late.plans, plansOf(firstView().result));
  // the core's notes on the selected plan are said beside what bounds it (the MoE host wait that
  // makes its first stage's forward longer than its backward)
  const notes = await page.evaluate(() => window.__poseidon.result().result.plans[0].notes ?? []);
  assert.ok(notes.some((n) => /host wait/.test(n)), `the first view's plan has a host-wait note: ${JSON.stringify(notes)}`);
  const said = await page.$$eval('#critical-path [data-testid=plan-notes] li', (lis) => lis.map((li) => li.textContent));
  assert.equal(said.length, notes.length, 'every note, devices named as the inputs name them');
  assert.ok(said.some((n) => /host wait/.test(n)));
  await assertClean(page, problems);
});

test('a link opens its own plan, not the first view', async (t) => {
  const { page, problems } = await env.open(t, await env.demoLink());
  await page.waitForFunction(() => /Shared plan estimated/.test(document.querySelector('[data-testid=progress]')?.textContent ?? ''), null, { timeout: 30000 });
  assert.notEqual(await page.evaluate(() => window.__poseidon.firstView), true);
  await assertClean(page, problems);
});
