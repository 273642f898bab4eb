// Issue 36, items 7, 8 and 9: messages in a person's words (the core's path and words kept as the
// detail), recording what a plan measured (no hand-written JSON) and stale calibration messages
// cleared, the "scenario + plan" export that the CLI reproduces, and stock Megatron-LM.
//   POSEIDON_BUILD_WASM=build-wasm [POSEIDON_CLI=build/core/poseidon] node --test tests/web/glance-inputs.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { useBrowser, assertClean, demoScenario, demoPlan, DESKTOP } from './harness.mjs';
import { megatronArgs } from '../../web/megatron.js';

const env = useBrowser({ viewport: DESKTOP });
const waitPlan = (page, re) => page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid=best-plan]')?.textContent ?? ''), re.source, { timeout: 30000 });
const settled = (page) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale') && document.querySelector('#cancel').disabled
  && /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });

test('messages in a person\'s words next to the field and in the summary, the core\'s path and words kept as the detail', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`);
  await settled(page);
  await page.fill('[data-path="training.global_batch_size"]', 'abc');
  const err = '#' + await page.getAttribute('[data-path="training.global_batch_size"]', 'aria-describedby');
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent, err, { timeout: 20000 });
  // first the words, then the core's line (what a link or the CLI names) as secondary detail
  assert.equal(await page.textContent(`${err} .said`), '"abc" is not a number. Enter a whole number from 1 to 100,000,000.');
  assert.equal(await page.textContent(`${err} .detail`), '(training.global_batch_size: "abc" is a string; expected an integer in [1, 100000000])');
  const summary = await page.textContent('[data-testid=error]');
  assert.match(summary, /Global batch \(samples\): "abc" is not a number\. Enter a whole number from 1 to 100,000,000\./, 'the summary names the field by its label');
  assert.match(summary, /training\.global_batch_size: "abc" is a string/);
  // a choice: the options in words, and the core's suggestion
  await page.fill('[data-path="training.global_batch_size"]', '0');
  await page.waitForFunction((sel) => /too small/.test(document.querySelector(sel)?.textContent ?? ''), err, { timeout: 20000 });
  assert.match(await page.textContent(`${err} .said`), /^0 is too small\. Enter a whole number from 1 to 100,000,000\.$/);
  await page.fill('[data-path="training.global_batch_size"]', '64');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden, null, { timeout: 30000 });
  // a message the page does not reword: said once, the detail names only its path
  await page.selectOption('[data-path="training.precision"]', 'mxfp8');
  await page.waitForFunction(() => /cannot run on/.test(document.querySelector('[data-testid=error]')?.textContent ?? ''), null, { timeout: 30000 });
  const fp8 = await page.$$eval('[data-testid=error] .error-link', (bs) => bs.map((b) => [b.querySelector('.said').textContent, b.querySelector('.detail')?.textContent]));
  assert.ok(fp8.length > 0);
  for (const [said, detail] of fp8) {
    assert.match(said, /^Precision: "mxfp8" cannot run on cluster\.groups\[\d\]/);
    assert.equal(detail, '(training.precision)');
  }
  await page.selectOption('[data-path="training.precision"]', 'bf16');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden, null, { timeout: 30000 });
  await assertClean(page, problems);
});

test('record what this plan measured: the runs are built from the plan on screen, refused values name their field, stale calibration messages go', async (t) => {
  const { M } = env;
  const { page, problems } = await env.open(t, await env.demoLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  assert.match(await page.textContent('[data-testid=record-plan]'), /the best plan, 2 stages on 16 GPUs, micro-batch 8 × 8/);
  // a value that is not one is refused next to its field, and nothing is added
  await page.fill('#record-time', 'abc');
  await page.click('[data-testid=record-add]');
  assert.match(await page.textContent('#record-time-err'), /^Measured seconds per iteration: "abc" is not a number\./);
  assert.equal(await page.getAttribute('#record-time', 'aria-invalid'), 'true');
  assert.equal(await page.inputValue('#runs-json'), '');
  await page.fill('#record-time', '1.27');
  await page.fill('#record-memory', '-2');
  await page.click('[data-testid=record-add]');
  assert.match(await page.textContent('#record-memory-err'), /^Peak memory per GPU \(GiB\): -2 is out of range/);
  await page.fill('#record-memory', '28');
  await page.click('[data-testid=record-calibrate]');
  await page.waitForSelector('[data-testid=calibrate-apply]');
  const runsText = await page.inputValue('#runs-json');
  const runs = JSON.parse(runsText);
  assert.equal(runs.runs.length, 1);
  assert.deepStrictEqual(runs.runs[0].plan, demoPlan, 'the run is the plan on screen');
  assert.equal(runs.runs[0].iteration_time_s, 1.27);
  assert.equal(runs.runs[0].peak_memory_GiB, 28);
  assert.equal(await page.inputValue('#record-time'), '', 'the form is ready for the next run');
  // the fit on screen is the core's fit of those runs
  const expected = JSON.parse(M.calibrate(JSON.stringify(demoScenario), runsText));
  assert.ok(!expected.error, JSON.stringify(expected.error));
  const errs = await page.$$eval('[data-testid=calibration-runs] tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td[data-error]')].map((td) => Number(td.dataset.error))));
  assert.deepStrictEqual(errs, expected.report.runs.map((r) => [r.error_before, r.error_after]));
  // a failed calibration's messages stay until a later good result, then go
  await page.click('#calibrate-paste summary');
  await page.fill('#runs-json', '{"runs": []}');
  await page.click('[data-testid=calibrate]');
  await page.waitForFunction(() => document.querySelector('#runs-json-err').textContent.length > 0);
  assert.match(await page.textContent('#calibrate-progress'), /The calibration failed/);
  await page.fill('[data-path="training.global_batch_size"]', '128');
  await page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale') && /Best plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 30000 });
  await page.waitForFunction(() => !document.querySelector('#runs-json-err').textContent && !document.querySelector('#calibrate-progress').textContent);
  assert.equal(await page.getAttribute('#runs-json', 'aria-invalid'), null);
  assert.equal(await page.inputValue('#runs-json'), '{"runs": []}', 'the runs text stays, to be fixed');
  await assertClean(page, problems);
});

/** the two files of "Scenario + plan (CLI)" */
async function exportScenario(page) {
  const dls = [];
  const got = new Promise((resolve) => page.on('download', async (d) => { dls.push(d); if (dls.length === 2) resolve(); }));
  await page.click('[data-testid=export-scenario]');
  await got;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poseidon-export-'));
  const files = {};
  for (const d of dls) { const f = path.join(dir, d.suggestedFilename()); await d.saveAs(f); files[d.suggestedFilename()] = f; }
  return files;
}

/** `poseidon estimate S --plan P --json` (the module's estimate when POSEIDON_CLI is unset) */
function estimateFiles(files) {
  const cli = process.env.POSEIDON_CLI;
  if (cli) {
    const r = spawnSync(cli, ['estimate', files['poseidon-scenario.json'], '--plan', files['poseidon-plan.json'], '--json'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  }
  return JSON.parse(env.M.estimate(fs.readFileSync(files['poseidon-scenario.json'], 'utf8'), fs.readFileSync(files['poseidon-plan.json'], 'utf8')));
}

test('"Scenario + plan (CLI)": poseidon estimate S --plan P gives the numbers on screen, bit for bit', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  if (!process.env.POSEIDON_CLI) t.diagnostic('POSEIDON_CLI is not set: the module\'s estimate stands in for the CLI');
  // a shared plan, and the best plan of a search with a batch tolerance and a non-default stack
  const { page, problems } = await env.open(t, await env.demoLink());
  await waitPlan(page, /Shared plan/);
  let files = await exportScenario(page);
  let shown = (await page.evaluate(() => window.__poseidon.result())).result.plans[0];
  let cli = estimateFiles(files);
  for (const k of ['iteration_time_s', 'tokens_per_s', 'mfu', 'samples_per_s', 'memory_fits']) assert.strictEqual(cli[k], shown[k], `${k} of the shared plan`);
  assert.deepStrictEqual(cli.stages.map((s) => s.memory_GiB), shown.stages.map((s) => s.memory_GiB));
  assert.match(JSON.parse(fs.readFileSync(files['poseidon-scenario.json'], 'utf8')).notes, /GPT-3 style 1\.7B .*poseidon estimate poseidon-scenario\.json --plan poseidon-plan\.json/);
  const link = await env.link({ m: 'opt-350m', c: 'mixed-a100-v100', t: { global_batch_size: 256, global_batch_tolerance: 0.05, stack: 'megatron-lm-2021' }, o: { top: 3, time_limit_s: 5 } });
  const { page: p2 } = await env.open(t, link);
  await settled(p2);
  files = await exportScenario(p2);
  shown = (await p2.evaluate(() => window.__poseidon.result())).result.plans[0];
  cli = estimateFiles(files);
  for (const k of ['iteration_time_s', 'tokens_per_s', 'mfu', 'samples_per_s']) assert.strictEqual(cli[k], shown[k], `${k} of a searched plan`);
  assert.equal(JSON.parse(fs.readFileSync(files['poseidon-scenario.json'], 'utf8')).training.stack, 'megatron-lm-2021');
  await assertClean(page, problems);
});

test('stock Megatron-LM: the badge on plans its command runs as planned, and one click to the fastest such plan', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const { page, problems } = await env.open(t, `${env.site.url}index.html`);
  await settled(page);
  const { result, scenario } = await page.evaluate(() => window.__poseidon.result());
  const presets = JSON.parse(env.M.presets());
  const model = presets.models.find((m) => m.id === scenario.model);
  const stack = presets.stacks.find((s) => s.id === (scenario.training.stack ?? 'megatron-core'));
  const stock = (est) => { const r = megatronArgs(est, { model, training: scenario.training }, { modelId: scenario.model, stack }); return r.ok && !r.unsupported.length; };
  assert.equal(await page.locator('#best-plan [data-testid=stock-badge]').count(), stock(result.plans[0]) ? 1 : 0, 'the badge says whether the best plan runs on stock Megatron-LM');
  // an uneven split's badge names the layout flag it needs
  if (stock(result.plans[0])) {
    const layout = megatronArgs(result.plans[0], { model, training: scenario.training }, { modelId: scenario.model, stack }).args.some(([n]) => n === '--pipeline-model-parallel-layout');
    assert.equal(await page.getAttribute('#best-plan [data-testid=stock-badge]', 'data-layout'), String(layout));
    assert.equal(/\(layout flag\)$/.test(await page.textContent('#best-plan [data-testid=stock-badge]')), layout);
  }
  await page.click('[data-testid=stock-best]');
  await page.waitForFunction(() => document.querySelector('[data-testid=stock-status]').textContent.length > 0);
  const status = await page.textContent('[data-testid=stock-status]');
  const cands = [...result.plans.map((est, i) => ({ est, i })), ...result.baselines.filter((b) => b.name === 'megatron-uniform' && b.plan).map((est) => ({ est, i: -1 }))]
    .filter((c) => c.est.memory_fits !== false && stock(c.est));
  const best = cands.reduce((a, c) => (!a || c.est.tokens_per_s > a.est.tokens_per_s ? c : a), null);
  t.diagnostic(status);
  assert.ok(best, 'the demo has a plan stock Megatron-LM runs (at least its Megatron-LM style baseline)');
  const now = await page.evaluate(() => window.__poseidon.result().result);
  const sel = Number(/Selected plan #(\d+)/.exec(await page.textContent('[data-testid=best-plan]'))?.[1] ?? 1) - 1;
  assert.deepStrictEqual(now.plans[sel].plan, best.est.plan, 'the plan on screen is the fastest one stock Megatron-LM runs');
  assert.equal(await page.locator('#best-plan [data-testid=stock-badge]').count(), 1);
  // and its Megatron-LM command has no "cannot run as planned" note
  await page.click('#export-megatron');
  await page.waitForSelector('#megatron-box:not([hidden])');
  assert.equal(await page.locator('#megatron-notes li.unsupported').count(), 0);
  await assertClean(page, problems);
});

test('at a glance at 390, 768, 1440 and 2560 px: the plan\'s picture above the fold, Compare and What-if folded, prose within ~80 characters, the inputs beside on desktop, Cancel in the sticky bar', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  for (const vp of [{ width: 390, height: 844 }, { width: 768, height: 1024 }, { width: 1440, height: 900 }, { width: 2560, height: 1440 }]) {
    const where = `${vp.width} px`;
    const { page, problems } = await env.open(t, `${env.site.url}index.html`, { viewport: vp });
    await settled(page);
    await page.waitForSelector('#timeline svg');
    const r = await page.evaluate(() => {
      const top = (sel) => document.querySelector(sel).getBoundingClientRect().top + scrollY;
      // the width of 80 characters of the element's own font
      const ch80 = (el) => { const s = document.createElement('span'); s.textContent = 'x'.repeat(80); s.style.font = getComputedStyle(el).font; s.style.position = 'absolute'; document.body.append(s); const w = s.getBoundingClientRect().width; s.remove(); return w; };
      const wide = [...document.querySelectorAll('#results p, #results figcaption, #results dd, #inputs p')]
        .filter((el) => el.getClientRects().length && el.textContent.length > 100 && el.getBoundingClientRect().width > ch80(el) * 1.1)
        .map((el) => `${el.id || el.className || el.tagName}: ${Math.round(el.getBoundingClientRect().width)} px`);
      const order = (a, b) => Boolean(document.querySelector(a).compareDocumentPosition(document.querySelector(b)) & Node.DOCUMENT_POSITION_FOLLOWING);
      return { strip: top('#stage-diagram'), timeline: top('#timeline'), cards: document.querySelectorAll('#best-plan .metric').length, wide,
        folded: [...document.querySelectorAll('#compare-fold, #whatif-sec')].map((d) => d.open),
        picturesFirst: order('#stage-diagram', '#top-plans') && order('#timeline', '#top-plans') && order('#top-plans', '#compare-fold'),
        scroll: document.documentElement.scrollWidth - document.documentElement.clientWidth };
    });
    t.diagnostic(`${where}: stage strip at ${Math.round(r.strip)} px, timeline at ${Math.round(r.timeline)} px`);
    assert.ok(r.strip < vp.height, `${where}: the stage strip starts above the fold (${r.strip})`);
    if (vp.width > 900) assert.ok(r.timeline < vp.height, `${where}: the timeline starts above the fold (${r.timeline})`);
    assert.equal(r.cards, 6, `${where}: the headline's metrics`);
    assert.deepStrictEqual(r.folded, [false, false], `${where}: Compare and What-if are folded`);
    assert.ok(r.picturesFirst, `${where}: pictures first, then the top plans, then Compare`);
    assert.deepStrictEqual(r.wide, [], `${where}: prose lines of at most ~80 characters`);
    assert.equal(r.scroll, 0, `${where}: no sideways scroll`);
    if (vp.width >= 1440) {
      // the top plans show speed, cost and days to train without a sideways scroll in their box
      const cut = await page.evaluate(() => {
        const box = document.querySelector('#top-plans').getBoundingClientRect();
        return [...document.querySelectorAll('#top-plans tbody tr:first-child :is(td.tps, td.cost-1m, td.days, td.total)')]
          .filter((td) => td.getBoundingClientRect().right > box.right + 1).map((td) => td.className);
      });
      assert.deepStrictEqual(cut, [], `${where}: tokens/s, cost and days to train in view`);
    }
    if (vp.width > 900) {
      // the inputs stay beside the results when the page scrolls
      await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight / 2));
      const inputsTop = await page.evaluate(() => document.querySelector('#inputs').getBoundingClientRect().top);
      assert.ok(inputsTop >= -1 && inputsTop < 5, `${where}: the inputs are a sticky sidebar (${inputsTop})`);
    }
    await assertClean(page, problems);
    await page.context().close();
  }
  // a phone: Cancel in the sticky bar while a search runs, beside the newest result
  const { page, problems } = await env.open(t, await env.link({ m: 'gpt3-175b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 1536 }, o: { exhaustive: true, time_limit_s: 60 } }), { viewport: { width: 390, height: 844 } });
  await page.waitForFunction(() => /evaluated [1-9]/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight / 2));
  const bar = await page.evaluate(() => { const b = document.querySelector('[data-testid=cancel-bar]').getBoundingClientRect(); return { top: b.top, bottom: b.bottom, w: b.width }; });
  assert.ok(bar.w > 0 && bar.top >= 0 && bar.bottom <= 844, `Cancel is on screen in the sticky bar (${JSON.stringify(bar)})`);
  await page.click('[data-testid=cancel-bar]');
  await page.waitForFunction(() => /^Cancelled/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.equal(await page.isHidden('[data-testid=cancel-bar]'), true);
  await assertClean(page, problems);
});

test('names, not ids: the advice table and the Megatron-LM notes name the devices as the inputs do', async (t) => {
  if (!env.searchWorks) { t.skip(env.searchSkipReason); return; }
  const shown = (page) => page.$$eval('#groups select[id$="-device"]', (sels) => sels.map((s) => s.selectedOptions[0].textContent));
  // no feasible plan on a small mixed cluster: the core's advice names each group's device
  const cluster = { name: 'small mixed', groups: [{ device: 'a100-sxm4-40gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 },
    { device: 'v100-sxm2-16gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 }] };
  const { page, problems } = await env.open(t, await env.link({ m: 'llama3-8b', c: { o: cluster }, t: { global_batch_size: 8 }, o: { top: 5, time_limit_s: 10 } }));
  await page.waitForSelector('[data-testid=advice] table', { timeout: 60000 });
  const names = await shown(page);
  assert.deepStrictEqual(names, ['A100 SXM4 40GB', 'V100 SXM2 16GB'], 'the inputs name the devices');
  const advice = await page.textContent('[data-testid=advice]');
  for (const [g, name] of names.entries()) assert.ok(advice.includes(`group ${g} (${name})`), `the advice names group ${g}'s device ${name}: ${advice}`);
  assert.doesNotMatch(advice, /a100-sxm4-40gb|v100-sxm2-16gb|NVIDIA/, 'no id and no other name');
  await assertClean(page, problems);
  // the Megatron-LM notes and the script's comments (a V100 has no BF16: the note names it)
  const demo = await env.open(t, await env.demoLink());
  await demo.page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  const demoNames = await shown(demo.page);
  assert.deepStrictEqual(demoNames, ['A100 SXM4 80GB', 'V100 SXM2 32GB']);
  const [dl] = await Promise.all([demo.page.waitForEvent('download'), demo.page.click('#export-megatron')]);
  const script = fs.readFileSync(await dl.path(), 'utf8');
  await demo.page.waitForSelector('#megatron-notes li');
  const notes = await demo.page.textContent('#megatron-notes');
  assert.match(notes, /--fp16, not --bf16: V100 SXM2 32GB has no BF16/);
  assert.ok(notes.includes('different device types: A100 SXM4 80GB, V100 SXM2 32GB.'), notes);
  const ids = /a100-sxm4-80gb|v100-sxm2-32gb/;
  assert.doesNotMatch(notes, ids, 'no device id in the notes');
  assert.doesNotMatch(await demo.page.textContent('#megatron'), ids, 'nor in the command shown');
  assert.doesNotMatch(script, ids, 'nor in the script');
  assert.match(script, /^#  - --fp16, not --bf16: V100 SXM2 32GB has no BF16/m);
  // the machine-readable files keep the ids (the scenario the CLI reads)
  const files = await exportScenario(demo.page);
  assert.match(fs.readFileSync(files['poseidon-scenario.json'], 'utf8'), /"(demo-mixed-16|a100-sxm4-80gb)"/, 'presets by id');
  await assertClean(demo.page, demo.problems);
});
