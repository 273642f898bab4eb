// The results column in headless Chromium, strict CSP header, at 1440 x 900, 390 x 844 and
// 360 x 740: no page-wide scroll (long plans, a measured profile), time to train and cost, units and
// words, and the top plans' folding of equivalent layer splits (split from workbench.test.mjs).
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/results.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, assertClean, demoScenario, demoPlan, DESKTOP, PHONE, SMALL } from './harness.mjs';
import { workbenchHelpers, longPlan } from './workbench-helpers.mjs';

let site;
let M;
let searchWorks = true;
let searchSkipReason = '';
const env = useBrowser({ viewport: DESKTOP, ready: (e) => { ({ site, M, searchWorks, searchSkipReason } = e); } });
const { open, link, settled, hashPayload, noHorizontalScroll } = workbenchHelpers(env);

test('layout: no horizontal page scroll with 34- and 64-stage plans at 1440, 390 and 360 px, light and dark', async (t) => {
  const plans = [longPlan('gpt3-18.4b', 40, 34), longPlan('gpt3-175b', 96, 64)];
  for (const { payload } of plans) {
    const url = await link(payload);
    // one page per width (the page folds its sections below 900 px when it loads); the colour
    // scheme is CSS only, so the dark check switches the same page
    for (const viewport of [DESKTOP, PHONE, SMALL]) {
      const { page, problems } = await open(t, url, viewport);
      await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
      await page.waitForSelector('#timeline svg');
      for (const colorScheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme });
        assert.equal(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches), colorScheme === 'dark');
        const w = await noHorizontalScroll(page);
        t.diagnostic(`${payload.p.stages.length} stages, ${viewport.width} px, ${colorScheme}: scrollWidth ${w.scroll}, clientWidth ${w.client}`);
        assert.ok(w.scroll <= w.client, `${payload.p.stages.length} stages at ${viewport.width} px (${colorScheme}): the page is ${w.scroll} px wide in ${w.client}`);
        // the wide parts scroll inside their own boxes instead
        const inner = await page.evaluate(() => {
          const ol = document.querySelector('ol.stages');
          const table = document.querySelector('[data-testid=stage-table]').parentElement;
          return { stages: ol.scrollWidth > ol.clientWidth, table: table.scrollWidth >= table.clientWidth, svg: document.querySelector('#timeline svg').getBoundingClientRect().width };
        });
        assert.ok(inner.stages, 'the stage diagram scrolls in its box');
        assert.ok(inner.svg <= viewport.width, 'the timeline fits the width');
      }
      await assertClean(page, problems);
    }
  }
});

test('a table box that scrolls sideways fades its right edge until it is scrolled to the end', async (t) => {
  const url = await link(longPlan('gpt3-175b', 96, 64).payload);
  const { page, problems } = await open(t, url, PHONE);
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
  const box = '#stage-table';
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.more === 'right', box, { timeout: 5000 });
  assert.notEqual(await page.$eval(box, (el) => getComputedStyle(el).maskImage || getComputedStyle(el).webkitMaskImage), 'none', 'the edge fades');
  await page.$eval(box, (el) => { el.scrollLeft = el.scrollWidth; });
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.more === '', box, { timeout: 5000 });
  assert.equal(await page.$eval(box, (el) => getComputedStyle(el).maskImage || getComputedStyle(el).webkitMaskImage), 'none', 'at the end nothing fades');
  // a box whose table fits says nothing
  await page.setViewportSize(DESKTOP);
  await page.waitForFunction(() => document.querySelector('#baselines').dataset.more !== 'right', null, { timeout: 5000 });
  await assertClean(page, problems);
});

test('layout: no horizontal page scroll at 390 px with a measured profile (the source column\'s screen-reader text stays in its box)', async (t) => {
  const url = await link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, f: 'llama3.2-1b-a100-illustrative', p: demoPlan });
  for (const page0 of [`${url}`, url.replace('index.html#', 'index.html?embed=1#')]) {
    const { page, problems } = await open(t, page0, PHONE);
    await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
    await page.waitForTimeout(300);
    const w = await noHorizontalScroll(page);
    assert.ok(w.scroll <= w.client, `${page0.includes('embed') ? 'embed' : 'page'}: ${w.scroll} px wide in ${w.client}`);
    await assertClean(page, problems);
  }
});

test('time to train and cost: days and dollars from a token budget and prices; sort by cost; in the link', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, await env.demoInputsLink());
  await settled(page);
  const plan = (await hashPayload(page)).p;
  const est = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(plan)));
  assert.equal(await page.inputValue('#f-budget-tokens'), '1T');
  const days = 1e12 / est.tokens_per_s / 86400;
  assert.match(await page.textContent('[data-testid=cost-summary]'), new RegExp(`1T tokens in ${days.toFixed(1)} days`));
  // prices: A100 $4, V100 $1 per GPU-hour; the plan's GPUs per device from its stages
  await page.fill('[data-testid=price-table] input[data-device="a100-sxm4-80gb"]', '4');
  await page.fill('[data-testid=price-table] input[data-device="v100-sxm2-32gb"]', '1');
  const gpus = { 'a100-sxm4-80gb': 0, 'v100-sxm2-32gb': 0 };
  for (const st of est.stages) for (const r of st.replicas) gpus[r.device] += r.count * r.tp;
  const perHour = gpus['a100-sxm4-80gb'] * 4 + gpus['v100-sxm2-32gb'];
  const per1M = (perHour / 3600 / est.tokens_per_s) * 1e6;
  await page.waitForFunction((s) => document.querySelector('[data-testid=cost-summary]').textContent.includes(s), `$${Number(per1M.toPrecision(3))} per 1M tokens`);
  await page.fill('#f-budget-tokens', '300B');
  const total = (perHour * 3e11) / est.tokens_per_s / 3600;
  await page.waitForFunction((s) => document.querySelector('[data-testid=cost-summary]').textContent.includes(s), `$${Math.round(total).toLocaleString('en-US')} in all`);
  await page.fill('#f-budget-tokens', 'lots');
  await page.waitForFunction(() => /^"lots" is not a number of tokens; expected/.test(document.querySelector('[data-error-for="budget.tokens"]').textContent));
  // the headline says why it shows no time to train and no total
  await page.waitForFunction(() => /the token budget "lots" is not a number of tokens, so no time to train or total/.test(document.querySelector('[data-testid=cost-summary]').textContent));
  // a price that is not one: its value and what is allowed, next to it
  const price = await page.$eval('#price-table input', (i) => i.id);
  const typed = await page.inputValue(`#${price}`);
  await page.fill(`#${price}`, '-3');
  assert.match(await page.textContent(`#${price}-err`), /^-3 is out of range; expected US dollars per GPU-hour, a finite number >= 0/);
  // under its input, not pressed against it
  const gap = await page.evaluate((id) => document.getElementById(`${id}-err`).getBoundingClientRect().top - document.getElementById(id).getBoundingClientRect().bottom, price);
  assert.ok(gap >= 2, `the message starts ${gap} px below the input`);
  await page.fill(`#${price}`, typed);
  assert.equal(await page.textContent(`#${price}-err`), '');
  await page.fill('#f-budget-tokens', '300B');
  // sorted by cost, the first row is the cheapest
  await page.selectOption('[data-testid=sort-plans]', 'cost');
  const usd = await page.$$eval('[data-testid=top-plans] tbody td.cost-1m', (tds) => tds.map((td) => Number(td.dataset.usd)));
  assert.deepStrictEqual(usd, [...usd].sort((x, y) => x - y));
  assert.ok(await page.locator('[data-testid=top-plans] th', { hasText: 'days to train' }).count() === 1);
  // the budget and prices travel in the link (format 4); the link is written after a pause in
  // typing, so wait until it holds the last budget typed
  await page.waitForFunction(() => location.hash.startsWith('#v=4&'));
  for (let i = 0; i < 100 && (await hashPayload(page)).b?.t !== '300B'; i++) await page.waitForTimeout(50);
  assert.equal((await hashPayload(page)).b?.t, '300B');
  const summary = await page.textContent('[data-testid=cost-summary]');
  const { page: fresh } = await open(t, await page.evaluate(() => location.href));
  await fresh.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  assert.equal(await fresh.inputValue('#f-budget-tokens'), '300B');
  assert.equal(await fresh.inputValue('[data-testid=price-table] input[data-device="a100-sxm4-80gb"]'), '4');
  assert.equal(await fresh.textContent('[data-testid=cost-summary]'), summary);
  await assertClean(page, problems);
});

test('units and words: micro-batch per replica, Gb/s next to GB/s, explained terms, labelled device fields, a Megatron command', async (t) => {
  const est = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(demoPlan)));
  const { page, problems } = await open(t, await link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, p: demoPlan }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  const heads = await page.$$eval('[data-testid=top-plans] thead th', (ths) => ths.map((th) => th.textContent));
  assert.ok(heads.includes('micro-batch per replica') && heads.includes('pipeline micro-batch × count'), heads.join('|'));
  assert.equal((await page.textContent('[data-testid=top-plans] td.mb-replica')).trim(), String(demoPlan.micro_batch_size / demoPlan.stages[0].dp));
  assert.equal(est.stages[0].samples_per_replica, demoPlan.micro_batch_size / demoPlan.stages[0].dp);
  assert.match(await page.textContent('[data-testid=best-plan]'), /micro-batch 1 per replica/);
  assert.ok((await page.getAttribute('[data-testid=top-plans] th[title*="Model FLOPs"]', 'title')).length > 20, 'MFU explained');
  assert.ok(await page.getAttribute('[data-testid=stage-table] th[title*="Megatron-LM"]', 'title'));
  // the NIC field is GB/s; Gb/s beside it
  const nic = await page.inputValue('[data-path="cluster.groups[0].inter_node_bw_GBps"]');
  assert.match(await page.textContent('#groups tr:first-child .unit-conv'), new RegExp(`= ${Number(nic) * 8} Gb/s`));
  const terms = await page.$$eval('#glossary dt', (dts) => dts.map((d) => d.textContent));
  for (const term of ['TP', 'DP', 'PP', 'MFU', 'bubble', 'megatron-uniform', 'metis-heuristic', 'GB/s and Gb/s']) assert.ok(terms.includes(term), term);
  // a custom device: human labels, not raw keys
  await page.click('#devices summary');
  await page.selectOption('#device-base', 'a100-sxm4-80gb');
  await page.click('#add-device');
  assert.equal(await page.inputValue('#device-base'), 'a100-sxm4-80gb', '"Start from" keeps its choice');
  const labels = await page.$$eval('#custom-devices label', (ls) => ls.map((l) => l.textContent));
  assert.ok(labels.includes('peak dense BF16/FP16 TFLOP/s (tensor cores)'));
  assert.deepStrictEqual(labels.filter((l) => /_/.test(l)), [], 'no raw keys');
  // name first, and every key, also those the A100 leaves at the default (it has no NVLS): empty
  assert.equal(labels[0], 'name');
  assert.ok(labels.includes('NVLink SHARP all-reduce bandwidth, GB/s (0 = none)'));
  assert.equal(await page.inputValue('[data-path="devices.custom-1.nvls_bw_GBps"]'), '');
  // the Megatron-LM command: one shell command, real counts
  await page.goto(await link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, p: demoPlan }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]')?.textContent ?? ''));
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-megatron')]);
  assert.equal(dl.suggestedFilename(), 'poseidon-megatron.sh');
  const text = await page.textContent('[data-testid=megatron]');
  assert.match(text, /^# Megatron-LM launch/);
  assert.match(text, /\ntorchrun \\\n {2}--nnodes 2 \\\n {2}--nproc_per_node 8 \\/);
  assert.match(text, /--pipeline-model-parallel-size 2 \\/);
  assert.match(text, /--decoder-first-pipeline-num-layers 16 \\\n {2}--decoder-last-pipeline-num-layers 8/);
  assert.match(await page.textContent('#megatron-notes'), /different device types/);
  // half the GPUs are V100s: no BF16 there (fp16, said why), no FlashAttention (pre-Ampere, said why)
  assert.match(text, /\n {2}--fp16 \\/);
  assert.doesNotMatch(text, /--bf16|--use-flash-attn/);
  assert.match(await page.textContent('#megatron-notes'), /--fp16, not --bf16: V100 SXM2 32GB has no BF16/, 'the device named as the inputs name it');
  assert.match(await page.textContent('#megatron-notes'), /--use-flash-attn is left out: FlashAttention needs an Ampere or newer GPU/);
  await assertClean(page, problems);
});

// keyboard-only use (every control reached with Tab, visible focus) at both viewports: a11y.test.mjs

test('cost: unpriced GPUs give a lower bound; the budget has a range and short runs read in hours or less; exposed sends', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // sailor-mit-mix: TITAN RTX and RTX 2080 have no preset price, the RTX 3090 has one
  const { page, problems } = await open(t, await link({ m: demoScenario.model, c: 'sailor-mit-mix', t: demoScenario.training }));
  await settled(page);
  const cells = () => page.$$eval('[data-testid=top-plans] tbody td.cost-1m', (tds) => tds.map((td) => ({ text: td.textContent, partial: td.dataset.partial ?? null, title: td.title })));
  const partial = await cells();
  assert.ok(partial.length > 0);
  for (const c of partial) {
    assert.equal(c.partial, 'true');
    assert.match(c.text, /^(≥ \$[\d.,]+|unknown)$/);
    assert.match(c.title, /No price for .*TITAN RTX 24GB/, 'devices by name, as in the price table');
  }
  assert.match(await page.textContent('[data-testid=cost-summary]'), /≥ \$[\d.,]+ per 1M tokens.*no price for .*TITAN RTX 24GB/);
  await page.fill('[data-testid=price-table] input[data-device="titan-rtx-24gb"]', '0.5');
  await page.fill('[data-testid=price-table] input[data-device="rtx2080-8gb"]', '0.2');
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=top-plans] tbody td.cost-1m')].every((td) => !td.dataset.partial && /^\$/.test(td.textContent)));
  assert.doesNotMatch(await page.textContent('[data-testid=cost-summary]'), /≥|no price/);
  // a budget out of range: the field names the range, no absurd figures
  await page.fill('#f-budget-tokens', '1e30');
  await page.waitForFunction(() => /from 1 to 10,000T/.test(document.querySelector('[data-error-for="budget.tokens"]').textContent));
  assert.doesNotMatch(await page.textContent('[data-testid=cost-summary]'), /tokens in/);
  await page.fill('#f-budget-tokens', '1');
  await page.waitForFunction(() => /^1 token in /.test(document.querySelector('[data-testid=cost-summary]').textContent));
  assert.equal(await page.textContent('[data-error-for="budget.tokens"]'), '');
  assert.match(await page.textContent('[data-testid=cost-summary]'), /^1 token in (< 0\.1 seconds|[\d.]+ (seconds?|minutes?|hours?)) · /);
  assert.equal(await page.textContent('[data-testid=top-plans] tbody td.days'), '< 0.1');
  // the breakdown's sends are the exposed ones, and the legend says so
  const pp = page.locator('[data-testid=critical-path] li[data-part=pp_comm_s]');
  assert.match(await pp.textContent(), /^exposed pipeline sends /);
  assert.match(await pp.getAttribute('title'), /overlap with compute are not counted/);
  assert.match(await page.textContent('[data-testid=critical-note]'), /exposed/);
  await assertClean(page, problems);
});

test('other layer splits of a plan\'s stages at its time fold under it; the comparison starts with a real alternative', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // gpt2-xl on metis-t4-a100, batch 256: the 5 fastest plans are one set of stages, split 5 ways
  // (at 128, since each GEMM's result is timed apart, two splits of one set and two of another)
  const sc = { model: 'gpt2-xl-1.5b', cluster: 'metis-t4-a100', training: { global_batch_size: 256 } };
  const res = JSON.parse(M.plan(JSON.stringify(sc), JSON.stringify({ top: 5, time_limit_s: 10 })));
  const same = res.plans.filter((p) => p.iteration_time_s === res.plans[0].iteration_time_s).length;
  assert.ok(same >= 3, `${same} plans at the best time`);
  const { page, problems } = await open(t, await link({ m: sc.model, c: sc.cluster, t: sc.training }));
  await settled(page);
  const rows = '[data-testid=top-plans] tbody tr';
  const visible = () => page.$$eval(rows, (rs) => rs.filter((r) => !r.hidden).map((r) => Number(r.dataset.plan)));
  const shown = await visible();
  assert.equal(shown[0], 0);
  assert.ok(shown.length <= 5 - (same - 1), `folded: ${shown}`);
  const fold = page.locator('[data-testid=top-plans] button[data-fold="0"]');
  assert.equal(await fold.textContent(), `+${same - 1} splits`);
  assert.equal(await fold.getAttribute('aria-expanded'), 'false');
  await fold.click();
  assert.equal((await visible()).length, 5);
  assert.equal(await page.getAttribute('[data-testid=top-plans] button[data-fold="0"]', 'aria-expanded'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.fold), '0', 'the toggle keeps the focus');
  assert.match(await page.textContent(`${rows}[data-plan="1"]`), /= #1, another split/);
  // the comparison: #1 against the first plan that is not another split of it (#2 when all are)
  const b = Number(await page.inputValue('[data-testid=compare-b]'));
  assert.equal(b, same < 5 ? same : 1);
  await assertClean(page, problems);
});

test('an odd exact batch: the core note in the page\'s words, and its tolerance applied with one click', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // the demo's 8-GPU groups at 63 samples: every stage's data parallelism divides 63
  const { page, problems } = await open(t, await link({ m: demoScenario.model, c: demoScenario.cluster, t: { ...demoScenario.training, global_batch_size: 63 } }));
  await settled(page);
  await page.waitForSelector('[data-testid=batch-hint]:not([hidden])');
  assert.equal(await page.textContent('[data-testid=batch-hint]'), 'A global batch of 63 samples is odd, and the largest group has 8 GPUs: every stage\'s data '
    + 'parallelism divides the batch, so these plans may run fewer replicas and more stages than at 64. A batch tolerance of 0.016 lets the search train '
    + 'any batch from 62 to 64, ranked by tokens/s. Allow batches 62–64');
  const before = Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
  await page.click('[data-testid=batch-hint-apply]');
  await page.waitForFunction(() => document.querySelector('[data-testid=batch-hint]').hidden);
  await settled(page);
  assert.equal(await page.inputValue('[data-path="training.global_batch_tolerance"]'), '0.016');
  assert.equal((await hashPayload(page)).t.global_batch_tolerance, 0.016);
  const after = Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
  assert.ok(after > before, `${after} tokens/s with the tolerance against ${before} at 63 exactly`);
  await assertClean(page, problems);
});
