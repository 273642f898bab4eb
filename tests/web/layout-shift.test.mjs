// First impressions (browser review 2): the file pickers are buttons (no native "Choose File / No
// file chosen"), reachable and named from the keyboard; and the summary keeps its height when a
// search ends with the "runs on stock Megatron-LM" badge, so nothing below it moves.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/layout-shift.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, assertClean, PHONE, demoInputs } from './harness.mjs';

const LAPTOP = { width: 1366, height: 768 };
const env = useBrowser({ viewport: LAPTOP });
const PICKERS = [['#scenario-file', 'Load scenario…'], ['#plan-file', 'Load plan file']];
const done = (page) => page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]')?.textContent ?? '')
  && document.querySelector('#cancel').disabled, null, { timeout: 60000 });

test('the file pickers are buttons: named, focusable by Tab, with a focus ring, and no native file text', async (t) => {
  const { page, problems } = await env.open(t, `${env.site.url}index.html`);
  for (const [sel, name] of PICKERS) {
    const box = await page.evaluate((s) => {
      const input = document.querySelector(s);
      const label = input.closest('label.file');
      const r = label.getBoundingClientRect();
      const ir = input.getBoundingClientRect();
      return { text: label.textContent.trim(), opacity: getComputedStyle(input).opacity, w: r.width, h: r.height, iw: ir.width, ih: ir.height,
        border: getComputedStyle(label).borderTopStyle };
    }, sel);
    assert.equal(box.text, name);
    assert.equal(box.opacity, '0', `${sel}: the native control is not seen`);
    assert.equal(box.border, 'solid', `${sel}: its label looks like a button`);
    assert.ok(box.h >= 24 && box.w >= 24, `${sel}: a target of at least 24 x 24 px`);
    assert.ok(Math.abs(box.iw - box.w) <= 2 && Math.abs(box.ih - box.h) <= 2, `${sel}: a click anywhere on the button reaches the input`);
    assert.equal(await page.locator(sel).evaluate((el) => el.labels[0]?.textContent.trim()), name, `${sel}: named by its label`);
  }
  // Tab from Find plans reaches the pickers (Cancel is disabled); the label shows the focus ring
  await page.focus('#run');
  const seen = [];
  for (let i = 0; i < 4 && seen.length < PICKERS.length; i++) {
    await page.keyboard.press('Tab');
    const f = await page.evaluate(() => {
      const el = document.activeElement;
      const label = el.closest('label.file');
      return { id: el.id, ring: label ? getComputedStyle(label).outlineStyle : '' };
    });
    if (PICKERS.some(([s]) => s === `#${f.id}`)) { assert.equal(f.ring, 'solid', `#${f.id}: a visible focus ring`); seen.push(f.id); }
  }
  assert.deepEqual(seen, ['scenario-file', 'plan-file']);
  // Enter and Space on a focused picker open the file chooser (the listener is on before the key is pressed)
  const chosen = [];
  page.on('filechooser', (c) => chosen.push(c.element()));
  await page.evaluate(() => new Promise(requestAnimationFrame));
  for (const key of ['Enter', 'Space']) {
    await page.focus('#plan-file');
    await page.keyboard.press(key);
    for (let i = 0; i < 50 && !chosen.length; i++) await page.waitForTimeout(100);
    assert.equal(chosen.length, 1, `${key} opens the file chooser`);
    assert.equal(await (await chosen.shift()).evaluate((el) => el.id), 'plan-file');
  }
  await assertClean(page, problems);
});

for (const [label, viewport] of [['1366 x 768', LAPTOP], ['phone', PHONE]]) {
  test(`a search that ends with the stock Megatron-LM badge moves nothing below the summary (${label})`, async (t) => {
    if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
    // the demo cluster at a batch of 96, whose best plan gives its V100 stage another TP (at the
    // demo's 64 the A100s alone win since each GEMM's result is timed apart, a plan stock
    // Megatron-LM runs)
    const { page, problems } = await env.open(t, await env.link({ ...demoInputs, t: { ...demoInputs.t, global_batch_size: 96 } }, '?nosw'), { viewport });
    await done(page);
    assert.equal(await page.locator('#best-plan [data-testid=stock-badge]').count(), 0, 'the demo cluster\'s best plan at a batch of 96 has no badge');
    // the y of what is below the summary, after every change of the summary, while the next search runs and after it
    await page.evaluate(() => {
      window.__ys = [];
      const below = document.querySelector('#results-body');
      const rec = () => window.__ys.push({ y: below.getBoundingClientRect().top + window.scrollY,
        slot: (({ width, height }) => `${width.toFixed(1)} x ${height.toFixed(1)}`)(document.querySelector('#best-plan .badge-slot')?.getBoundingClientRect() ?? { width: 0, height: 0 }),
        badge: Boolean(document.querySelector('#best-plan [data-testid=stock-badge]')), progress: document.querySelector('#progress').textContent });
      rec();
      new MutationObserver(rec).observe(document.querySelector('#summary'), { subtree: true, childList: true, characterData: true, attributes: true });
    });
    // a homogeneous cluster: its best plan runs on stock Megatron-LM (on a phone the inputs are on another tab)
    await page.evaluate(() => { const sel = document.querySelector('#cluster-preset'); sel.value = 'dgx-h100-16'; sel.dispatchEvent(new Event('change', { bubbles: true })); });
    await page.waitForFunction(() => window.__ys.some((r) => /^Searching/.test(r.progress)), null, { timeout: 30000 });
    await done(page);
    await page.waitForSelector('#best-plan [data-testid=stock-badge]', { timeout: 10000 });
    const ys = await page.evaluate(() => window.__ys);
    const searching = ys.filter((r) => /^Searching/.test(r.progress));
    const after = ys.at(-1);
    t.diagnostic(`y below the summary: ${ys[0].y} before, ${[...new Set(searching.map((r) => r.y))].join(', ')} while searching, ${after.y} after (badge: ${after.badge}); the badge's place: ${[...new Set(ys.map((r) => r.slot))].join(', ')}`);
    assert.ok(after.badge);
    // the badge's place is as large before it shows (the stale plan's summary while searching) as with it
    for (const r of searching) assert.equal(r.slot, after.slot, 'the badge\'s place keeps its size');
    assert.notEqual(after.slot, '0.0 x 0.0');
    // on the laptop the new plan's metrics fill the same lines as the old one's, so the y of what is below
    // compares as is (on the phone the new plan's text takes another line: its stage count names a schedule)
    if (viewport === LAPTOP) for (const r of searching) assert.ok(Math.abs(r.y - after.y) <= 1, `nothing below moves when the search ends (${r.y} while searching, ${after.y} after)`);
    await assertClean(page, problems);
  });
}

test('Tab through every input at 1280 x 800 (sections open): each focus ring stays inside the inputs\' scroll box', async (t) => {
  const { page, problems } = await env.open(t, `${env.site.url}index.html`, { viewport: { width: 1280, height: 800 } });
  await page.waitForFunction(() => /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
  for (const d of await page.$$('#inputs details')) await d.evaluate((e) => { e.open = true; });
  await page.focus('#run');
  const near = [];
  let seen = 0;
  for (let i = 0; i < 200; i++) {
    await page.keyboard.press('Tab');
    const r = await page.evaluate(() => {
      const el = document.activeElement;
      const box = document.querySelector('#inputs');
      if (!box.contains(el)) return null;
      const a = el.getBoundingClientRect(), b = box.getBoundingClientRect();
      return { what: el.id || el.dataset.path || el.tagName, top: a.top - b.top, bottom: b.bottom - a.bottom };
    });
    if (!r) continue;
    seen++;
    // the ring is 2 px wide at 2 px from the element (style.css, :focus-visible)
    if (r.top < 4 || r.bottom < 4) near.push(r);
  }
  assert.ok(seen > 50, `${seen} inputs reached by Tab`);
  assert.deepStrictEqual(near, [], 'focused inputs whose ring the scroll box cuts (browser review, 2026-12-08: 8 before scroll-padding)');
  await assertClean(page, problems);
});
