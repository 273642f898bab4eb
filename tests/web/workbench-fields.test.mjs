// The workbench's input fields in headless Chromium, strict CSP header (split from
// workbench.test.mjs): the search's schedule, node counts, blocks and stage options, the batch
// tolerance, overlap and MoE switches reaching the search, the link and the Megatron command; the
// NVLink domain per cluster group; a config.json without the model keys, an error about two fields,
// and scenario files; an MoE plan's expert fields, grid and memory; grid sizes fixed in the Search box.   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/workbench-fields.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workbenchHelpers } from './workbench-helpers.mjs';
import { useBrowser, assertClean, demoScenario, DESKTOP } from './harness.mjs';

let site;
let M;
let searchWorks = true;
let searchSkipReason = '';
const env = useBrowser({ viewport: DESKTOP, ready: (e) => { ({ site, M, searchWorks, searchSkipReason } = e); } });

const { open, tokensOf, settled, hashPayload } = workbenchHelpers(env);

test('schedule, node counts, batch tolerance and overlap switches: fields that reach the search, the link and the Megatron command', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, await env.demoInputsLink()); // the demo scenario: its searches stay small with every option on
  // the link once it carries the plan shown (the fragment is written just after the result)
  const withPlan = async () => {
    for (let i = 0; i < 100; i++) {
      await settled(page);
      const payload = await hashPayload(page);
      if (payload.p) return payload;
      await page.waitForTimeout(100);
    }
    throw new Error('the link never carried the plan');
  };
  await settled(page);
  // the search's schedule: only 1F1B plans when asked
  await page.selectOption('[data-path="options.schedule"]', '1f1b');
  let payload = await withPlan();
  assert.equal(payload.o.schedule, '1f1b');
  assert.ok(!payload.p.schedule || payload.p.schedule === '1f1b', JSON.stringify(payload.p.schedule));
  // only interleaved plans when asked: the summary and the table say so
  await page.selectOption('[data-path="options.schedule"]', 'interleaved-1f1b');
  payload = await withPlan();
  assert.equal(payload.p.schedule, 'interleaved-1f1b');
  const V = payload.p.virtual_stages;
  assert.ok(V >= 2);
  assert.match(await page.textContent('[data-testid=best-plan]'), new RegExp(`interleaved 1F1B, ${V} chunks per stage`));
  assert.match(await page.textContent('[data-testid=top-plans] tr.selected td.pp'), new RegExp(`× ${V} chunks`));
  await page.selectOption('[data-path="options.schedule"]', '1f1b');
  await withPlan();
  await page.selectOption('[data-path="options.node_counts"]', 'all');
  await settled(page);
  assert.equal((await hashPayload(page)).o.node_counts, 'all');
  // two blocks per group: a number in the link, and the search still gives a plan
  await page.selectOption('[data-path="options.group_blocks"]', '2');
  payload = await withPlan();
  assert.equal(payload.o.group_blocks, 2);
  // half-node blocks: in the link; with one block per group the search names the option
  await page.check('[data-path="options.split_nodes"]');
  payload = await withPlan();
  assert.equal(payload.o.split_nodes, true);
  await page.selectOption('[data-path="options.group_blocks"]', '1');
  await page.waitForSelector('[data-testid=error]:not([hidden])');
  assert.match(await page.textContent('[data-testid=error]'), /options\.split_nodes/);
  await page.uncheck('[data-path="options.split_nodes"]');
  await settled(page);
  assert.ok(!('group_blocks' in ((await hashPayload(page)).o ?? {})));
  assert.ok(!('split_nodes' in ((await hashPayload(page)).o ?? {})));
  // a switch of the search: in the link with the plan the search found with it on, and gone
  // from the link once off
  const toggleOption = async (name) => {
    const box = `[data-path="options.${name}"]`;
    await page.check(box);
    assert.equal((await withPlan()).o[name], true);
    await page.uncheck(box);
    await settled(page);
    assert.ok(!(name in ((await hashPayload(page)).o ?? {})));
  };
  await toggleOption('empty_stages');  // stages with no block
  await toggleOption('mixed_stages');
  // a batch tolerance travels as a training setting; the plan then trains a batch within it
  await page.fill('[data-path="training.global_batch_tolerance"]', '0.1');
  payload = await withPlan();
  assert.equal(payload.t.global_batch_tolerance, 0.1);
  const trained = payload.p.micro_batch_size * payload.p.num_micro_batches;
  const gbs = payload.t.global_batch_size;
  assert.ok(Math.abs(trained - gbs) <= 0.1 * gbs, `trains ${trained} of ${gbs}`);
  // the summary says which batch that is when it is not the one asked
  const summaryText = await page.textContent('[data-testid=best-plan]');
  if (trained !== gbs) assert.ok(summaryText.includes(`global batch ${trained.toLocaleString('en-US')} (${gbs.toLocaleString('en-US')} asked, within ±10 %)`), summaryText);
  else assert.doesNotMatch(summaryText, /asked/);
  // the top plans in the search's order (most tokens/s first), whatever batch each trains
  const tps = await page.$$eval('[data-testid=top-plans] tbody tr', (rows) => rows.map((r) => Number(r.querySelector('td.tps')?.dataset.value ?? NaN)));
  if (tps.every(Number.isFinite)) assert.deepStrictEqual(tps, [...tps].sort((a, b) => b - a));
  // an overlap switch: in the link, in the estimate, and as its flag in the Megatron command
  await page.check('[data-path="training.overlap_grad_reduce"]');
  await settled(page);
  assert.equal((await hashPayload(page)).t.overlap_grad_reduce, true);
  await page.click('#export-megatron');
  assert.match(await page.textContent('[data-testid=megatron]'), /--overlap-grad-reduce/);
  // the MoE settings (issue 35): in the link when set
  await page.fill('[data-path="training.moe_imbalance"]', '1.5');
  await page.selectOption('[data-path="training.moe_token_dispatcher"]', 'flex');
  await settled(page);
  payload = await hashPayload(page);
  assert.equal(payload.t.moe_imbalance, 1.5);
  assert.equal(payload.t.moe_token_dispatcher, 'flex');
  // back to the defaults: the keys leave the link (the core's defaults apply)
  await page.fill('[data-path="training.moe_imbalance"]', '');
  await page.selectOption('[data-path="training.moe_token_dispatcher"]', 'alltoall');
  await page.uncheck('[data-path="training.overlap_grad_reduce"]');
  await page.fill('[data-path="training.global_batch_tolerance"]', '');
  await page.selectOption('[data-path="options.schedule"]', 'any');
  await settled(page);
  payload = await hashPayload(page);
  assert.ok(!('overlap_grad_reduce' in payload.t) && !('global_batch_tolerance' in payload.t) && !('schedule' in (payload.o ?? {})), JSON.stringify(payload));
  assert.ok(!('moe_imbalance' in payload.t) && !('moe_token_dispatcher' in payload.t), JSON.stringify(payload));
  await assertClean(page, problems);
});

test('NVLink domain per cluster group: the preset\'s rack, an edit in the link, empty = one node', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await settled(page);
  await page.selectOption('#cluster-preset', 'gb200-nvl72-72');
  await settled(page);
  const field = '[data-path="cluster.groups[0].nvlink_domain_gpus"]';
  assert.equal(await page.inputValue(field), '72', 'the NVL72 preset says its rack');
  assert.match(await page.textContent(`label[for="${await page.getAttribute(field, 'id')}"]`), /group 0: NVLink domain, GPUs/);
  await page.fill(field, '36');
  await page.waitForFunction(() => /modified/.test(document.querySelector('#cluster-preset').selectedOptions[0].textContent));
  await settled(page);
  let payload = await hashPayload(page);
  assert.equal(payload.c.o.groups[0].nvlink_domain_gpus, 36, JSON.stringify(payload.c));
  // empty leaves the key out: one node (4 GPUs) per domain, still a change from the preset
  await page.fill(field, '');
  await settled(page);
  payload = await hashPayload(page);
  assert.ok(payload.c.o && !('nvlink_domain_gpus' in payload.c.o.groups[0]), JSON.stringify(payload.c));
  // a value the engine refuses is named at the field
  await page.fill(field, '5');
  await page.waitForFunction((f) => document.querySelector(f).getAttribute('aria-invalid') === 'true', field);
  await assertClean(page, problems);
});

test('inputs: a config.json without the model keys is refused, the model kept; an error about two fields marks both; scenario files', async (t) => {
  const { page, problems } = await open(t, await env.demoInputsLink());
  await page.waitForFunction((id) => document.querySelector('#model-preset').value === id, demoScenario.model); // the link's inputs shown
  const modelValues = () => page.$$eval('#model-fields [data-path]', (els) => els.map((e) => [e.dataset.path, e.type === 'checkbox' ? e.checked : e.value]));
  const before = await modelValues();
  await page.click('#hf summary');
  await page.fill('#hf-config', '{"model_type":"bert"}');
  await page.click('#hf-apply');
  const notes = await page.textContent('#hf-notes');
  assert.match(notes, /^Not imported:/);
  for (const k of ['num_hidden_layers', 'hidden_size', 'num_attention_heads', 'vocab_size']) assert.ok(notes.includes(k), `${k} named`);
  assert.match(await page.textContent('[data-testid=error]'), /hidden_size/);
  assert.equal(await page.getAttribute('#hf-config', 'aria-invalid'), 'true');
  assert.deepStrictEqual(await modelValues(), before, 'the model is untouched');
  assert.equal(await page.inputValue('#model-preset'), demoScenario.model);
  // hidden size 2305: the core's path names the heads; the field the user typed in is marked too
  await page.fill('[data-path="model.hidden_size"]', '2305');
  await page.waitForFunction(() => document.querySelector('[data-error-for="model.hidden_size"]').textContent.length > 0, null, { timeout: 30000 });
  assert.match(await page.textContent('[data-error-for="model.hidden_size"]'), /Attention heads: \d+ does not divide hidden size 2305.*\(num_attention_heads\)/);
  assert.match(await page.textContent('[data-error-for="model.num_attention_heads"]'), /does not divide hidden size 2305/);
  for (const f of ['model.hidden_size', 'model.num_attention_heads']) assert.equal(await page.getAttribute(`[data-path="${f}"]`, 'aria-invalid'), 'true', f);
  assert.equal(await page.getAttribute('[data-path="model.num_layers"]', 'aria-invalid'), null, 'an unrelated field stays unmarked');
  await page.fill('[data-path="model.hidden_size"]', '2304');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden, null, { timeout: 30000 });
  // a scenario file with a model preset with overrides, an inline cluster with a preset device with
  // an override and an inline device, and a training object: the form shows it, the search plans it
  const scen = { model: { base: 'gpt3-1.7b', num_layers: 16 }, training: { global_batch_size: 32, precision: 'bf16' },
    cluster: { name: 'file cluster', groups: [{ device: { base: 'a100-sxm4-80gb', memory_GiB: 40 }, nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 },
      { device: 'v100-sxm2-32gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 50 }] } };
  await page.setInputFiles('#scenario-file', { name: 'mine.scenario.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(scen)) });
  await page.waitForFunction(() => document.querySelector('[data-path="training.global_batch_size"]').value === '32');
  assert.equal(await page.inputValue('[data-path="model.num_layers"]'), '16');
  assert.equal(await page.inputValue('#model-preset'), 'gpt3-1.7b');
  assert.equal(await page.inputValue('#f-group-0-device'), 'custom-1');
  assert.equal(await page.inputValue('#f-group-1-device'), 'v100-sxm2-32gb');
  assert.equal(await page.inputValue('[data-path="cluster.groups[0].gpus_per_node"]'), '4');
  assert.ok(await page.$$eval('#custom-devices input', (els) => els.some((e) => e.value === '40')), 'the custom device has its override');
  if (searchWorks) {
    await settled(page);
    const { scenario } = await page.evaluate(() => window.__poseidon.result());
    const core = JSON.parse(M.plan(JSON.stringify(scenario), JSON.stringify({ top: 1, time_limit_s: 10 })));
    assert.equal(scenario.model.num_layers, 16);
    assert.equal(scenario.cluster.groups[0].device.memory_GiB, 40);
    assert.equal(await tokensOf(page), Math.round(core.plans[0].tokens_per_s));
  }
  // a file that is not a scenario: the JSON path of the problem, the inputs kept
  for (const [bad, re] of [[{ ...scen, cluster: { name: 'c', groups: [{ device: { base: 'h900' } }] } }, /cluster\.groups\[0\]\.device\.base: "h900" is not a device preset/],
    [{ ...scen, training: 5 }, /training: is number 5/], ['{"model":', /not valid JSON/]]) {
    await page.setInputFiles('#scenario-file', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from(typeof bad === 'string' ? bad : JSON.stringify(bad)) });
    await page.waitForFunction((r) => new RegExp(r).test(document.querySelector('[data-testid=error]').textContent), re.source);
    assert.match(await page.textContent('[data-testid=error]'), /bad\.json is not a scenario file: .*\n.*inputs are unchanged/);
    assert.equal(await page.inputValue('[data-path="model.num_layers"]'), '16');
    assert.equal(await page.inputValue('#f-group-0-device'), 'custom-1');
  }
  await assertClean(page, problems);
});

test('an MoE plan on the page: the model form\'s expert fields, EP per stage in the strip and the table header, the memory panel\'s expert weights and dispatch buffers', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const plan = { micro_batch_size: 16, num_micro_batches: 4, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8, ep: 8 }, { group: 0, num_layers: 24, tp: 1, dp: 8, ep: 8 }] };
  const { page, problems } = await open(t, await env.link({ m: 'qwen3-30b-a3b', c: 'dgx-h100-16', t: { global_batch_size: 64, distributed_optimizer: true, recompute: 'selective' }, p: plan }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  // the model's variants fold is open and says what the model sets
  assert.equal(await page.$eval('#model-more', (d) => d.open), true);
  assert.equal(await page.textContent('#model-more-state'), '128 experts, top 8; head dim 128; QK norm');
  assert.equal(await page.isChecked('[data-path="model.qk_layernorm"]'), true);
  assert.equal(await page.inputValue('[data-path="model.num_experts"]'), '128');
  assert.equal(await page.inputValue('[data-path="model.moe_top_k"]'), '8');
  assert.equal(await page.inputValue('[data-path="model.moe_ffn_hidden_size"]'), '768');
  // each stage box names its expert grid and its all-to-all time
  const strip = await page.textContent('ol.stages');
  assert.equal((strip.match(/EP 8 · all-to-all \d/g) || []).length, 2, strip);
  assert.match(await page.textContent('[data-testid=stage-table] thead'), /TP × DP, EP\/ETP/);
  assert.match(await page.textContent('[data-testid=stage-table] tbody'), /1×8 ep8/);
  const moe = await page.textContent('[data-testid=moe-memory]');
  assert.match(moe, /stage 0 expert weights \d+\.\d\d GiB \(EP 8\), dispatch buffers \d+\.\d\d GiB; stage 1 /);
  // a stage of dense blocks only (two leading ones here, as DeepSeek-V3's three) has the grid, no experts
  const dense = { ...plan, stages: [{ ...plan.stages[0], num_layers: 2 }, { ...plan.stages[1], num_layers: 2 }] };
  await page.goto(await env.link({ m: { id: 'qwen3-30b-a3b', o: { num_layers: 4, first_dense_layers: 2 } }, c: 'dgx-h100-16', t: { global_batch_size: 64, distributed_optimizer: true, recompute: 'selective' }, p: dense }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent) && /no MoE block/.test(document.querySelector('ol.stages')?.textContent ?? ''));
  const strip2 = await page.textContent('ol.stages');
  assert.match(strip2, /EP 8 · no MoE block here[\s\S]*EP 8 · all-to-all \d/, strip2);
  // and the memory panel says the same of it, not "expert weights 0.00 GiB"
  assert.match(await page.textContent('[data-testid=moe-memory]'), /stage 0 no MoE block here; stage 1 expert weights \d+\.\d\d GiB/);
  await assertClean(page, problems);
});

test('grid sizes fixed in the Search box: every plan on the expert-parallel size chosen, in the link (format 6); refused on a dense model at the select, and the expert selects disabled there', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  const cluster = { o: { name: 'two DGX H100', groups: [{ device: 'h100-sxm5-80gb', nodes: 2, gpus_per_node: 8, inter_node_bw_GBps: 400 }] } };
  const training = { global_batch_size: 64, distributed_optimizer: true, recompute: 'selective' };
  const { page, problems } = await open(t, await env.link({ m: 'qwen3-30b-a3b', c: cluster, t: training, o: { ep_sizes: '4' } }));
  await settled(page);
  assert.equal(await page.inputValue('[data-path="options.ep_sizes"]'), '4');
  const grids = async () => page.$$eval('[data-testid=top-plans] tbody tr', (rows) => rows.map((r) => r.textContent));
  let rows = await grids();
  assert.ok(rows.length >= 2, JSON.stringify(rows));
  for (const r of rows) assert.match(r, /ep4/, r);
  assert.match(await page.evaluate(() => location.hash), /^#v=6&/);
  assert.equal((await hashPayload(page)).o.ep_sizes, '4');
  // left to the search again: the link drops it and goes back to format 5 (an MoE model)
  await page.selectOption('[data-path="options.ep_sizes"]', 'searched');
  await settled(page);
  await page.waitForFunction(() => /^#v=5&/.test(location.hash));
  assert.ok(!('ep_sizes' in ((await hashPayload(page)).o ?? {})));
  rows = await grids();
  assert.ok(rows.some((r) => !/ep4/.test(r)), JSON.stringify(rows));
  await assertClean(page, problems);
  // a dense model cannot have an expert-parallel size: the core's words at the select
  const dense = await open(t, await env.link({ m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training, o: { ep_sizes: '2' } }));
  await dense.page.waitForFunction(() => /fix the inputs/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
  // next to the select: the core's words without a key name, then its path (not "Ep sizes: …" and "([0])")
  const beside = await dense.page.textContent('[data-error-for="options.ep_sizes"]');
  assert.match(beside, /^2 needs a mixture-of-experts model[\s\S]*\(options\.ep_sizes\[0\]\)$/);
  assert.doesNotMatch(beside, /Ep sizes|\(\[0\]\)/);
  // the problems list names the field by its label (the core's path is options.ep_sizes[0])
  const listed = await dense.page.textContent('[data-testid=error]');
  assert.match(listed, /^[\s\S]*Expert-parallel size, every stage \(MoE models\): 2 needs a mixture-of-experts model/);
  assert.doesNotMatch(listed, /Ep sizes/);
  assert.equal(await dense.page.getAttribute('[data-path="options.ep_sizes"]', 'aria-invalid'), 'true');
  // the dense model's attention variants and expert fields stay folded: "none"
  assert.equal(await dense.page.$eval('#model-more', (d) => d.open), false);
  assert.equal(await dense.page.textContent('#model-more-state'), 'none');
  // no experts: the expert tensor-parallel select is disabled at "searched"; the expert-parallel
  // one, fixed by the link, stays enabled so that its refusal can be fixed there
  const disabled = async (key) => dense.page.$eval(`[data-path="options.${key}"]`, (el) => el.disabled);
  assert.equal(await disabled('etp_sizes'), true);
  assert.equal(await disabled('ep_sizes'), false);
  await dense.page.selectOption('[data-path="options.ep_sizes"]', 'searched');
  await dense.page.waitForFunction(() => document.querySelector('[data-path="options.ep_sizes"]').disabled);
  // typing an expert count there says so in the fold's summary, and the expert selects open
  await dense.page.click('#model-more summary');
  await dense.page.fill('[data-path="model.num_experts"]', '8');
  await dense.page.waitForFunction(() => document.querySelector('#model-more-state').textContent === '8 experts, top-k not set');
  assert.equal(await disabled('ep_sizes'), false);
  assert.equal(await disabled('etp_sizes'), false);
});
