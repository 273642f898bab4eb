// Issue 36, item 5: the phone's edit loop. Below 700 px the inputs and the results are two tabs
// (web/phone-tabs.js: an ARIA tablist, one pane at a time, each keeping its scroll); the sticky
// bar (web/phone-bar.js) shows the newest result and Cancel while the inputs are on screen, and a
// tap on it shows the results. Desktop keeps its two columns, a tablet (768 px) its stacked
// layout with the bar, the embed its one column.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/glance-phone.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, assertClean, DESKTOP, PHONE } from './harness.mjs';

const env = useBrowser({ viewport: PHONE });
const TABLET = { width: 768, height: 1024 };
const settled = (page) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale') && document.querySelector('#cancel').disabled
  && /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
const tokens = async (page) => Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
const barText = (page) => page.textContent('#phone-bar-text');
/** a click where the element is, as a finger does it (page.click first scrolls a stuck sticky element "into view") */
const tap = async (page, sel) => { const b = await page.locator(sel).boundingBox(); await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2); };

/** which pane is on screen, and what the tabs and the panels say about it */
const panes = (page) => page.evaluate(() => {
  const tab = (id) => document.querySelector(`#tab-${id}`);
  return {
    inputs: document.querySelector('#inputs').checkVisibility(),
    results: document.querySelector('#results').checkVisibility(),
    selected: ['inputs', 'results'].filter((id) => tab(id).getAttribute('aria-selected') === 'true'),
    tabStops: ['inputs', 'results'].filter((id) => tab(id).tabIndex === 0),
    focus: document.activeElement?.id || null,
  };
});

test('a phone at 390 x 844: Inputs | Results as tabs, one pane at a time, by click and by keyboard', async (t) => {
  const { page, problems } = await env.open(t, await env.demoLink());
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  // the tab list: two tabs, each controlling its panel; the results first
  const aria = await page.evaluate(() => ({
    list: document.querySelector('[data-testid=phone-tabs]').getAttribute('role'),
    tabs: [...document.querySelectorAll('[data-testid=phone-tabs] [role=tab]')].map((b) => [b.textContent, b.getAttribute('aria-controls')]),
    panels: ['inputs', 'results'].map((id) => [document.getElementById(id).getAttribute('role'), document.getElementById(id).getAttribute('aria-labelledby')]),
    sticky: getComputedStyle(document.querySelector('[data-testid=phone-tabs]')).position,
  }));
  assert.deepStrictEqual(aria, { list: 'tablist', tabs: [['Inputs', 'inputs'], ['Results', 'results']],
    panels: [['tabpanel', 'tab-inputs'], ['tabpanel', 'tab-results']], sticky: 'sticky' });
  assert.equal(await page.isVisible('[data-testid=phone-tabs]'), true);
  assert.deepStrictEqual(await panes(page), { inputs: false, results: true, selected: ['results'], tabStops: ['results'], focus: null });
  assert.equal(await page.isHidden('[data-testid=phone-bar]'), true, 'no bar on the Results tab: the summary is on screen');
  // by click
  await page.click('[data-testid=tab-inputs]');
  assert.deepStrictEqual(await panes(page), { inputs: true, results: false, selected: ['inputs'], tabStops: ['inputs'], focus: 'tab-inputs' });
  assert.equal(await page.isVisible('[data-testid=phone-bar]'), true, 'the bar with the newest result under the inputs');
  await page.click('[data-testid=tab-results]');
  assert.deepStrictEqual((await panes(page)).selected, ['results']);
  // by keyboard: the tab list is one stop after the Theme button; the arrows, Home and End move between the tabs
  await page.focus('#theme');
  await page.keyboard.press('Tab');
  assert.equal((await panes(page)).focus, 'tab-results', 'Tab reaches the selected tab');
  await page.keyboard.press('ArrowLeft');
  assert.deepStrictEqual(await panes(page), { inputs: true, results: false, selected: ['inputs'], tabStops: ['inputs'], focus: 'tab-inputs' });
  await page.keyboard.press('ArrowRight');
  assert.deepStrictEqual(await panes(page), { inputs: false, results: true, selected: ['results'], tabStops: ['results'], focus: 'tab-results' });
  await page.keyboard.press('ArrowRight');
  assert.deepStrictEqual((await panes(page)).selected, ['inputs'], 'the arrows wrap around');
  await page.keyboard.press('End');
  assert.deepStrictEqual((await panes(page)).selected, ['results']);
  await page.keyboard.press('Home');
  assert.deepStrictEqual((await panes(page)).selected, ['inputs']);
  await page.keyboard.press('Tab');
  assert.ok(await page.evaluate(() => document.querySelector('#inputs').contains(document.activeElement)), 'Tab goes on into the pane shown');
  // each pane keeps its place: the results scrolled down, the inputs seen, the results where they were
  await page.click('[data-testid=tab-results]');
  await page.evaluate(() => window.scrollTo(0, 1500));
  const y = await page.evaluate(() => scrollY);
  assert.ok(y > 1000, `the results scroll (${y})`);
  await tap(page, '[data-testid=tab-inputs]');
  const tabsBottom = await page.evaluate(() => document.querySelector('[data-testid=phone-tabs]').getBoundingClientRect().bottom);
  const inputsTop = await page.evaluate(() => document.querySelector('#inputs').getBoundingClientRect().top);
  assert.ok(inputsTop >= tabsBottom - 1 && inputsTop < tabsBottom + 20, `the inputs start under the tabs (${inputsTop}, tabs end at ${tabsBottom})`);
  await tap(page, '[data-testid=tab-results]');
  assert.equal(await page.evaluate(() => scrollY), y, 'back where the results were left');
  // the summary sticks under the tabs
  const stuck = await page.evaluate(() => ({ tabs: document.querySelector('[data-testid=phone-tabs]').getBoundingClientRect(), summary: document.querySelector('#summary').getBoundingClientRect() }));
  assert.equal(stuck.tabs.top, 0, 'the tabs stick to the top');
  assert.ok(Math.abs(stuck.summary.top - stuck.tabs.bottom) <= 1, `the summary sticks under them (${stuck.summary.top} vs ${stuck.tabs.bottom})`);
  await assertClean(page, problems);
});

test('a phone: an edit on the Inputs tab, the bar shows the new result, a tap on it shows the Results tab; Cancel on the bar', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`);
  await settled(page);
  const before = await tokens(page);
  await page.click('[data-testid=tab-inputs]');
  await page.click('#sec-training > summary');
  await page.waitForSelector('[data-testid=phone-bar]:not([hidden])');
  assert.match(await barText(page), new RegExp(`^${before.toLocaleString('en-US')} tokens/s · iteration `));
  await page.fill('[data-path="training.global_batch_size"]', '128');
  assert.match(await barText(page), /^Outdated: re-planning… · was [\d,]+ tokens\/s/, 'the edit marks the newest result outdated at once, first, before the old numbers');
  await settled(page);
  await page.waitForFunction(() => !/Outdated|searching/.test(document.querySelector('#phone-bar-text').textContent));
  const after = await tokens(page);
  assert.notEqual(after, before, 'a new result');
  assert.match(await barText(page), new RegExp(`^${after.toLocaleString('en-US')} tokens/s · iteration `), 'the bar shows the new result');
  const bar = await page.evaluate(() => { const r = document.querySelector('[data-testid=phone-bar]').getBoundingClientRect(); return { bottom: r.bottom, h: r.height }; });
  assert.ok(Math.abs(bar.bottom - PHONE.height) <= 1 && bar.h > 0, `the bar is at the bottom of the screen (${JSON.stringify(bar)})`);
  assert.equal(await page.textContent('.phone-bar-plan'), 'See results');
  assert.equal(await page.isHidden('[data-testid=phone-bar-cancel]'), true, 'Cancel only while a search runs');
  // a tap on the bar (its text, not only the link) shows the results, the new one on screen
  await page.click('#phone-bar-text');
  const p = await panes(page);
  assert.deepStrictEqual([p.inputs, p.results, p.selected], [false, true, ['results']]);
  await page.waitForSelector('[data-testid=phone-bar]', { state: 'hidden' });
  const headline = await page.evaluate(() => document.querySelector('[data-testid=best-tokens]').getBoundingClientRect());
  assert.ok(headline.top > 0 && headline.bottom < PHONE.height, `the new result is on screen (${headline.top})`);
  assert.equal(await tokens(page), after);
  await assertClean(page, problems);
  // a long search: its Cancel on the bar while the inputs are on screen
  const long = await env.open(t, await env.link({ m: 'gpt3-175b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 1536 }, o: { exhaustive: true, time_limit_s: 60 } }));
  await long.page.waitForFunction(() => /evaluated [1-9]/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
  await long.page.click('[data-testid=tab-inputs]');
  await long.page.waitForSelector('[data-testid=phone-bar-cancel]:not([hidden])');
  assert.match(await barText(long.page), /searching…$/);
  await long.page.click('[data-testid=phone-bar-cancel]');
  await long.page.waitForFunction(() => /^Cancelled/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.equal(await long.page.isHidden('[data-testid=phone-bar-cancel]'), true);
  assert.deepStrictEqual((await panes(long.page)).selected, ['inputs'], 'Cancel leaves the inputs on screen');
  await assertClean(long.page, long.problems);
});

test('no tabs at 1440 x 900 (two columns), at 768 x 1024 (results over inputs) or in the embed at 390 px', async (t) => {
  const layout = (page) => page.evaluate(() => {
    const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { left: r.left, top: r.top + scrollY, w: r.width, shown: document.querySelector(sel).checkVisibility() }; };
    return { tabs: document.querySelector('[data-testid=phone-tabs]').checkVisibility(), inputs: box('#inputs'), results: box('#results'),
      roles: ['inputs', 'results'].map((id) => document.getElementById(id).getAttribute('role')), hidden: ['inputs', 'results'].map((id) => document.getElementById(id).hidden) };
  });
  for (const viewport of [DESKTOP, TABLET]) {
    const { page, problems } = await env.open(t, await env.demoLink(), { viewport });
    await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
    const l = await layout(page);
    const where = `${viewport.width} px`;
    assert.equal(l.tabs, false, `${where}: no tabs`);
    assert.ok(l.inputs.shown && l.results.shown, `${where}: inputs and results both shown`);
    assert.deepStrictEqual([l.roles, l.hidden], [[null, null], [false, false]], `${where}: sections, not tab panels`);
    if (viewport === DESKTOP) {
      assert.ok(l.inputs.left + l.inputs.w <= l.results.left && Math.abs(l.inputs.top - l.results.top) < 5, `${where}: two columns, the inputs beside the results (${JSON.stringify(l)})`);
      assert.ok(l.inputs.w > 250 && l.results.w > 700, `${where}: both columns their width`);
    } else {
      assert.ok(l.results.top < l.inputs.top, `${where}: the results over the inputs`);
    }
    await assertClean(page, problems);
  }
  const { page, problems } = await env.open(t, (await env.demoLink()).replace('index.html#', 'index.html?embed=1#'));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  const e = await layout(page);
  assert.deepStrictEqual([e.tabs, e.results.shown, e.roles, e.hidden], [false, true, [null, null], [false, false]], 'the embed: its one column');
  await assertClean(page, problems);
});

test('a tablet (768 px): editing the inputs far below the results, a bar at the bottom shows the newest result', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`, { viewport: TABLET });
  await settled(page);
  assert.equal(await page.isHidden('[data-testid=phone-bar]'), true, 'no bar while the results are on screen');
  // the training box is far below the results
  await page.evaluate(() => { for (const d of document.querySelectorAll('details.sec')) d.open = true; });
  await page.locator('[data-path="training.global_batch_size"]').scrollIntoViewIfNeeded();
  await page.waitForSelector('[data-testid=phone-bar]:not([hidden])');
  assert.match(await barText(page), new RegExp(`^${(await tokens(page)).toLocaleString('en-US')} tokens/s · iteration `));
  await page.fill('[data-path="training.global_batch_size"]', '128');
  assert.match(await barText(page), /^Outdated: re-planning… · was [\d,]+ tokens\/s/, 'the edit marks the newest result outdated at once, first, before the old numbers');
  await settled(page);
  await page.waitForFunction(() => !/Outdated|searching/.test(document.querySelector('#phone-bar-text').textContent));
  assert.match(await barText(page), new RegExp(`^${(await tokens(page)).toLocaleString('en-US')} tokens/s · iteration `), 'the bar shows the new result');
  const bar = await page.evaluate(() => { const r = document.querySelector('[data-testid=phone-bar]').getBoundingClientRect(); return { bottom: r.bottom, h: r.height }; });
  assert.ok(Math.abs(bar.bottom - TABLET.height) <= 1 && bar.h > 0, `the bar is at the bottom of the screen (${JSON.stringify(bar)})`);
  assert.equal(await page.isHidden('[data-testid=phone-bar-cancel]'), true, 'Cancel only while a search runs');
  assert.equal(await page.textContent('.phone-bar-plan'), 'Plan ↑');
  // back to the plan
  await page.click('.phone-bar-plan');
  await page.waitForSelector('[data-testid=phone-bar]', { state: 'hidden' });
  await assertClean(page, problems);
});

test('a phone: the field being typed in stays where it is when the problem summary appears above it', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`);
  await settled(page);
  await page.click('[data-testid=tab-inputs]');
  await page.click('#sec-training > summary');
  const field = '[data-path="training.global_batch_size"]';
  await page.focus(field);
  const top = () => page.$eval(field, (el) => el.getBoundingClientRect().top);
  const before = await top();
  await page.type(field, 'x');
  await page.waitForSelector('[data-testid=error]:not([hidden])');
  const after = await top();
  assert.ok(Math.abs(after - before) <= 2, `the field was at ${before} px and is at ${after} px`);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.path), 'training.global_batch_size', 'the focus stays in the field');
  // its own message is on screen, above the bar at the bottom
  const msg = await page.$eval('[data-error-for="training.global_batch_size"]', (el) => el.getBoundingClientRect().bottom);
  const bar = await page.$eval('[data-testid=phone-bar]', (el) => (el.hidden ? Infinity : el.getBoundingClientRect().top));
  assert.ok(msg <= bar, `the field's message ends at ${msg} px, the bar starts at ${bar} px`);
  await assertClean(page, problems);
});
