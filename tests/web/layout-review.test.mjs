// A first-impression review's layout fixes: an interleaved MoE plan's headline wraps on a phone
// (its "(interleaved 1F1B, 2 chunks per stage)" widened the page to 431 px at 390), the memory
// table's stage column wraps, a time and its unit stay on one line, a stage row that runs past the
// edge fades there; on a desktop a device keeps
// its colour when another plan is selected, and the stock Megatron-LM button sits at the left; the
// pinned summary takes at most 15 % of a laptop's screen (it took a third of 1366 x 768) and moves nothing.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/layout-review.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, assertClean, demoInputs, demoScenario, DESKTOP, PHONE } from './harness.mjs';

const env = useBrowser({ viewport: PHONE });
const shared = (page) => page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 30000 });

test('a phone: an interleaved MoE plan never widens the page; the memory table shows numbers, times keep their units', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const sc = { ...demoScenario, model: 'qwen3-235b-a22b', cluster: 'h100-plus-gb200' };
  const res = JSON.parse(env.M.plan(JSON.stringify(sc), JSON.stringify({ top: 5 })));
  const est = res.plans?.find((p) => (p.plan.virtual_stages ?? 1) > 1);
  if (!est) { t.skip('the search of Qwen3-235B on h100-plus-gb200 found no interleaved plan'); return; }
  const { page, problems } = await env.open(t, await env.link({ m: sc.model, c: sc.cluster, t: sc.training, p: est.plan }));
  await shared(page);
  const m = await page.evaluate(() => {
    const sched = document.querySelector('#best-plan .metric .schedule');
    const row = document.querySelector('[data-testid=memory-table] tbody th[scope=row]');
    const box = row.closest('.scroll-x') ?? row.closest('table');
    return {
      page: document.documentElement.scrollWidth, width: innerWidth, text: sched?.textContent ?? '',
      schedRight: sched?.getBoundingClientRect().right ?? 0,
      rowHead: row.getBoundingClientRect().width, box: box.getBoundingClientRect().width,
      num: [...document.querySelectorAll('[data-testid=critical-table] td.num, [data-testid=stage-table] td.num')].map((td) => getComputedStyle(td).whiteSpace),
    };
  });
  assert.match(m.text, /interleaved 1F1B/);
  assert.ok(m.page <= m.width, `the page does not scroll sideways (${m.page} px wide at ${m.width})`);
  assert.ok(m.schedRight <= m.width, 'the schedule wraps inside the screen');
  assert.ok(m.rowHead < 0.6 * m.box, `the memory table's stage column leaves room for its numbers (${m.rowHead} of ${m.box} px)`);
  assert.ok(m.num.length >= 8 && m.num.every((w) => w === 'nowrap'), 'times and memory stay on one line with their units');
  await assertClean(page, problems);
  // five stage boxes (a plan of the demo scenario, shared) run past a phone's edge: the row's edge
  // fades until it is scrolled to its end (the demo's best plan has three since its V100s run
  // attention unfused, which fit)
  const five = { micro_batch_size: 2, num_micro_batches: 32, schedule: '1f1b',
    stages: [...Array(4)].map(() => ({ group: 0, num_layers: 5, tp: 1, dp: 2 })).concat([{ group: 1, num_layers: 4, tp: 4, dp: 2 }]) };
  const demo = await env.open(t, await env.link({ ...demoInputs, p: five }));
  await shared(demo.page);
  const more = () => demo.page.evaluate(() => document.querySelector('#stage-diagram ol.stages').dataset.more);
  assert.equal(await more(), 'right', 'the stage row says more boxes lie past its edge');
  await demo.page.evaluate(() => { const o = document.querySelector('#stage-diagram ol.stages'); o.scrollLeft = o.scrollWidth; });
  await demo.page.waitForFunction(() => document.querySelector('#stage-diagram ol.stages').dataset.more === '');
  await assertClean(demo.page, demo.problems);
});

test('a desktop: a device keeps its colour from plan to plan; the stock Megatron-LM button at the left of its row', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`, { viewport: DESKTOP });
  await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]')?.textContent ?? ''), null, { timeout: 60000 });
  const colours = () => page.$$eval('#stage-diagram ul.legend li', (lis) => Object.fromEntries(lis.map((li) => [li.textContent, li.querySelector('.swatch').style.backgroundColor])));
  const first = await colours();
  assert.equal(Object.keys(first).length, 2, 'the demo plan runs on both devices');
  const rows = await page.locator('#top-plans tbody tr').count();
  for (let i = 1; i < rows; i++) {
    await page.locator('#top-plans tbody tr').nth(i).locator('button').first().click();
    const now = await colours();
    for (const [name, c] of Object.entries(now)) assert.equal(c, first[name], `plan #${i + 1}: ${name} in the colour of plan #1`);
  }
  const x = await page.evaluate(() => [document.querySelector('.stock-row').getBoundingClientRect().left, document.querySelector('#stock-best').getBoundingClientRect().left]);
  assert.ok(Math.abs(x[0] - x[1]) < 2, `the button starts its row (${x})`);
  await assertClean(page, problems);
});

const LAPTOP = { width: 1366, height: 768 };
const searchDone = (page) => page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]')?.textContent ?? '')
  && document.querySelector('#cancel').disabled, null, { timeout: 60000 });
/** the summary and what is below it, in page coordinates */
const summaryBox = (page) => page.evaluate(() => {
  const s = document.querySelector('#summary');
  const r = s.getBoundingClientRect();
  const shown = (sel) => Boolean(document.querySelector(sel)?.getClientRects().length);
  return { pinned: s.classList.contains('pinned'), top: r.top, height: r.height, scrollY,
    below: document.querySelector('#results-body').getBoundingClientRect().top + scrollY,
    context: shown('[data-testid=context-line]'), tokens: shown('[data-testid=best-tokens]'), cost: shown('[data-testid=cost-summary]'), progress: shown('#progress') };
});

for (const [label, viewport, share] of [['1366 x 768', LAPTOP, 0.15], ['phone', PHONE, 0.16]]) {
  test(`${label}: the pinned summary is compact (at most ${share * 100} % of the screen), moves nothing below it, and leaves out only what its full form shows`, async (t) => {
    if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
    const { page, problems } = await env.open(t, `${env.site.url}index.html?nosw`, { viewport });
    await searchDone(page);
    const full = await summaryBox(page);
    assert.ok(!full.pinned && full.context && full.tokens && full.cost, 'at the top: the full form, with what was planned');
    // just past the pinning edge: the page stays where it was scrolled (it once jumped to the top there)
    const edge = await page.evaluate(() => Math.ceil(document.querySelector('.summary-mark').getBoundingClientRect().top + scrollY) + 4);
    await page.evaluate((y) => scrollTo(0, y), edge);
    await page.waitForFunction(() => document.querySelector('#summary').classList.contains('pinned'));
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const pinned = await summaryBox(page);
    t.diagnostic(`summary: ${full.height.toFixed(1)} px at the top, ${pinned.height.toFixed(1)} px pinned (${(100 * pinned.height / viewport.height).toFixed(1)} % of ${viewport.height})`);
    assert.equal(pinned.scrollY, edge, 'pinning does not scroll the page');
    assert.ok(pinned.height <= share * viewport.height, `the pinned summary is ${pinned.height} px high`);
    assert.ok(Math.abs(pinned.below - full.below) <= 0.5, `pinning moves nothing below the summary (${full.below} then ${pinned.below})`);
    assert.ok(!pinned.context && pinned.tokens && pinned.cost && pinned.progress, 'pinned: the headline, the cost and the status, not the context line');
    // further down, while a search runs and after it: still compact, with Cancel in reach, and the page as if unpinned
    await page.evaluate(() => document.querySelector('#timeline-h').scrollIntoView());
    await page.evaluate(() => {
      window.__cancel = [];
      const bar = document.querySelector('#cancel-bar');
      new MutationObserver(() => { if (!bar.hidden) window.__cancel.push(document.querySelector('#summary').classList.contains('pinned') && bar.getClientRects().length > 0); })
        .observe(bar, { attributes: true, attributeFilter: ['hidden'] });
      const sel = document.querySelector('#cluster-preset');
      sel.value = 'dgx-h100-16';
      sel.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await page.waitForFunction(() => window.__cancel.length > 0, null, { timeout: 30000 });
    await searchDone(page);
    const after = await summaryBox(page);
    assert.ok(after.pinned && after.top <= 44.5, 'still pinned at the top');
    assert.ok(after.height <= share * viewport.height, `the pinned summary of the new plan is ${after.height} px high`);
    assert.ok((await page.evaluate(() => window.__cancel)).every(Boolean), 'Cancel shows in the pinned summary while the search runs');
    await page.evaluate(() => scrollTo(0, 0));
    await page.waitForFunction(() => !document.querySelector('#summary').classList.contains('pinned'));
    const top = await summaryBox(page);
    assert.ok(top.context, 'back at the top, the full form');
    assert.ok(Math.abs(top.below - after.below) <= 0.5, `the pinned summary kept the full form's place in the page (${after.below} pinned, ${top.below} full)`);
    await assertClean(page, problems);
  });
}
