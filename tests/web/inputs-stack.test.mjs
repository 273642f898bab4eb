// The page's inputs beyond the model, cluster and batch, in headless Chromium (as browser.test.mjs):
// the software stack, link types per cluster group and the memory breakdown per GPU (split from
// inputs.test.mjs: measured profiles, custom devices, calibration).
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/inputs-stack.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeShare, decodeShare } from '../../web/share.js';
import { loadModule } from './load-module.mjs';
import { inputsHelpers } from './inputs-helpers.mjs';
import { useBrowser, assertClean, demoScenario, demoPlan } from './harness.mjs';

let site;
let searchWorks = true;
const env = useBrowser({ ready: (e) => { ({ site, searchWorks } = e); } });

const { open, demoLink, waitPlan, copyLink, tokensOf } = inputsHelpers(env);

// ---------------------------------------------------------------- software stack, link types, memory

/** live planning: waits until the result on screen belongs to the current inputs (not stale, search done) */
const settled = (page, timeout = 30000) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale')
  && document.querySelector('#cancel').disabled && !/^Searching/.test(document.querySelector('[data-testid=progress]').textContent)
  && /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout });
/** the plan a share link carries */
const linkPlan = async (url) => (await decodeShare(url.split('#')[1])).p;

test('the software stack select: presets from the core, a description, a different result, in the share link', async (t) => {
  const M = await loadModule();
  const stacks = JSON.parse(M.presets()).stacks;
  // a stack other than the default, preferably one with unfused kernels (e.g. deepspeed-megatron-2022)
  const other = stacks.find((st) => st.id !== 'megatron-core' && st.fused_elementwise === false) ?? stacks.find((st) => st.id !== 'megatron-core');
  const stackScenario = { ...demoScenario, training: { ...demoScenario.training, stack: other.id } };
  const { page, problems } = await open(t, await demoLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  const before = await tokensOf(page);
  const sel = '[data-path="training.stack"]';
  assert.deepStrictEqual(await page.$$eval(`${sel} option`, (os) => os.map((o) => o.value)), stacks.map((s) => s.id));
  assert.equal(await page.inputValue(sel), 'megatron-core', "the core's default");
  assert.match(await page.textContent('#stack-desc'), /fused element-wise kernels/);
  await page.selectOption(sel, other.id);
  assert.match(await page.textContent('#stack-desc'), other.fused_elementwise ? /fused element-wise kernels/ : /unfused element-wise kernels/);
  if (other.notes) {
    await page.click('#stack-desc summary');
    assert.ok((await page.textContent('#stack-desc details')).includes(other.notes.slice(0, 40)), "the stack's notes");
  }
  // TF32: only meaningful with fp32, and the page says so
  assert.match(await page.textContent('#tf32-note'), /only matters with precision fp32/);
  await page.selectOption('[data-path="training.precision"]', 'fp32');
  assert.match(await page.textContent('#tf32-note'), /TF32 off/);
  await page.check('[data-path="training.tf32"]');
  assert.match(await page.textContent('#tf32-note'), /TF32 on/);
  await page.uncheck('[data-path="training.tf32"]');
  await page.selectOption('[data-path="training.precision"]', 'bf16');
  // every edit re-plans: once the result for the stack is on screen, the link carries the stack
  // (format 3) and that plan, and a fresh page estimates the same plan with the stack
  await settled(page);
  let tps = await tokensOf(page);
  if (searchWorks) {
    const res = JSON.parse(M.plan(JSON.stringify(stackScenario), JSON.stringify({ top: 5, time_limit_s: 10 })));
    if (res.stats.complete) {
      // the last edit's re-plan starts after the input debounce: on a loaded machine the result
      // of the edit before (fp32) can still be on screen, settled, when it is first read
      const want = Math.round(res.plans[0].tokens_per_s);
      for (const t0 = Date.now(); tps !== want && Date.now() - t0 < 20000; tps = await tokensOf(page)) {
        await page.waitForTimeout(200);
        await settled(page);
      }
      assert.equal(tps, want, "the core's best plan for the stack");
    }
  }
  const link = await copyLink(page, 3);
  const { page: fresh, problems: p2 } = await open(t, link);
  await waitPlan(fresh, /Shared plan: [\d,]+ tokens\/s/);
  assert.equal(await fresh.inputValue(sel), other.id);
  assert.equal(await tokensOf(fresh), tps, 'the link shows what was shown');
  const plan = await linkPlan(link);
  const expected = JSON.parse(M.estimate(JSON.stringify(stackScenario), JSON.stringify(plan)));
  assert.equal(await tokensOf(fresh), Math.round(expected.tokens_per_s));
  const withDefault = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(plan)));
  assert.notEqual(Math.round(withDefault.tokens_per_s), tps, 'the stack changes the estimate');
  void before;
  await assertClean(page, problems);
  await assertClean(fresh, p2);
});

test('link types per cluster group round-trip through a share link', async (t) => {
  const M = await loadModule();
  const { page, problems } = await open(t, await demoLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  const before = await tokensOf(page);
  const intra0 = '[data-path="cluster.groups[0].intra_node_link"]';
  const inter1 = '[data-path="cluster.groups[1].inter_node_link"]';
  assert.equal(await page.inputValue(intra0), '', "the device's own link");
  assert.match(await page.textContent(`${intra0} option[value=""]`), /the device's: NVLink/);
  assert.equal(await page.textContent(`${intra0} option[value="pcie_host"]`), 'PCIe, no peer-to-peer (host-staged)');
  assert.equal(await page.inputValue(inter1), 'infiniband');
  const interLabels = await page.$$eval(`${inter1} option`, (os) => os.map((o) => o.textContent));
  for (const label of ['InfiniBand (RDMA)', 'Ethernet (NCCL over TCP)']) assert.ok(interLabels.includes(label), label);
  await page.selectOption(intra0, 'pcie_host');
  await page.selectOption(inter1, 'ethernet');
  await page.waitForFunction(() => /modified/.test(document.querySelector('#cluster-preset').selectedOptions[0].textContent));
  await settled(page); // every edit re-plans; the link then carries the new plan
  const tps = await tokensOf(page);
  const link = await copyLink(page, 3);
  const { page: fresh, problems: p2 } = await open(t, link);
  await waitPlan(fresh, /Shared plan: [\d,]+ tokens\/s/);
  assert.equal(await tokensOf(fresh), tps);
  assert.equal(await fresh.inputValue(intra0), 'pcie_host');
  assert.equal(await fresh.inputValue(inter1), 'ethernet');
  assert.equal(await fresh.inputValue('[data-path="cluster.groups[1].intra_node_link"]'), '');
  assert.equal(await fresh.inputValue('[data-path="cluster.groups[0].inter_node_link"]'), 'infiniband');
  const cluster = structuredClone(JSON.parse(M.presets()).clusters.find((c) => c.id === demoScenario.cluster));
  delete cluster.id;
  cluster.groups[0].intra_node_link = 'pcie_host';
  cluster.groups[1].inter_node_link = 'ethernet';
  const plan = await linkPlan(link);
  const expected = JSON.parse(M.estimate(JSON.stringify({ ...demoScenario, cluster }), JSON.stringify(plan)));
  assert.ok(!expected.error, JSON.stringify(expected.error));
  assert.equal(await tokensOf(fresh), Math.round(expected.tokens_per_s));
  const onPreset = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(plan)));
  assert.notEqual(Math.round(onPreset.tokens_per_s), tps, 'host-staged PCIe and TCP change the estimate');
  void before;
  // back to the defaults: the cluster is the preset again, and the link format 1
  await fresh.selectOption(intra0, '');
  await fresh.selectOption(inter1, 'infiniband');
  await fresh.waitForFunction(() => !/modified/.test(document.querySelector('#cluster-preset').selectedOptions[0].textContent));
  await copyLink(fresh, 1);
  await assertClean(page, problems);
  await assertClean(fresh, p2);
});

test('memory per GPU by component: seven parts against capacity, warning colour above 90 %', async (t) => {
  const M = await loadModule();
  const { page, problems } = await open(t, await demoLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  const est = JSON.parse(M.estimate(JSON.stringify(demoScenario), JSON.stringify(demoPlan)));
  const heads = await page.$$eval('[data-testid=memory-table] thead th', (ths) => ths.map((th) => th.textContent));
  assert.deepStrictEqual(heads, ['stage', 'weights', 'gradients', 'optimizer state', 'activations', 'temporary buffers', 'allocator reserve',
    'framework overhead', 'total', 'capacity', 'used']);
  const rows = await page.$$eval('[data-testid=memory-table] tbody tr', (trs) => trs.map((tr) => ({ level: tr.dataset.level,
    cells: Object.fromEntries([...tr.querySelectorAll('td[data-component]')].map((td) => [td.dataset.component, Number(td.textContent.replace(/,/g, ''))])) })));
  assert.equal(rows.length, est.stages.length);
  // every number of the table has two decimals, so a column reads down ("10.70", not "10.7")
  const texts = await page.$$eval('[data-testid=memory-table] tbody td:not(.used)', (tds) => tds.map((td) => td.textContent));
  assert.ok(texts.length && texts.every((x) => /^[\d,]+\.\d\d$/.test(x)), texts.join(' '));
  est.stages.forEach((st, i) => {
    for (const [k, v] of Object.entries(st.memory_breakdown_GiB)) assert.ok(Math.abs(rows[i].cells[k] - v) <= 0.005 + 1e-9, `stage ${i} ${k}: ${rows[i].cells[k]} vs ${v}`);
    assert.equal(Object.keys(st.memory_breakdown_GiB).length, 7);
    assert.ok(Math.abs(rows[i].cells.total - st.memory_GiB) <= 0.005 + 1e-9);
  });
  assert.equal(await page.locator('.membar').count(), est.stages.length);
  assert.match(await page.textContent('.membar-total'), /GiB \(\d+\.\d%\)/);
  assert.equal(await page.locator('.memlegend li').count(), 7);
  // a plan above 90 % of capacity and one above 100 %: found with the core, then shown by the page
  let warn = null;
  let over = null;
  for (let gbs = 2; gbs <= 64 && !(warn && over); gbs += 2) {
    for (const tp of [1, 2, 4]) {
      const sc = { model: 'gpt3-1.7b', training: { global_batch_size: gbs }, cluster: 'demo-mixed-16' };
      const plan = { micro_batch_size: gbs, num_micro_batches: 1, stages: [{ group: 1, num_layers: 24, tp, dp: 8 / tp }] };
      if (gbs % (8 / tp)) continue;
      const r = JSON.parse(M.estimate(JSON.stringify(sc), JSON.stringify(plan)));
      const share = r.error ? null : r.stages[0].memory_GiB / r.stages[0].memory_capacity_GiB;
      if (share > 0.9 && share <= 1 && !warn) warn = { sc, plan };
      if (share > 1 && !over) over = { sc, plan };
    }
  }
  for (const [c, level] of [[warn, 'warn'], [over, 'over']]) {
    if (!c) { t.diagnostic(`no ${level} plan found with this core; that check is skipped`); continue; }
    const { page: p } = await open(t, `${site.url}index.html#${await encodeShare({ m: c.sc.model, c: c.sc.cluster, t: c.sc.training, p: c.plan })}`);
    await waitPlan(p, /Shared plan/);
    assert.equal(await p.getAttribute('.membar', 'data-level'), level);
    assert.equal(await p.getAttribute('[data-testid=memory-table] tbody tr', 'data-level'), level);
    assert.equal(await p.locator(`#stage-diagram .mem-fill.${level}`).count(), 1, 'the stage diagram uses the same colours');
    assert.match(await p.textContent('.membar-total'), level === 'warn' ? /above 90 % of capacity/ : /does not fit/);
    if (level === 'over') assert.equal(await p.locator('.membar .memcap').count(), 1, 'the capacity is marked on the bar');
  }
  await assertClean(page, problems);
});

