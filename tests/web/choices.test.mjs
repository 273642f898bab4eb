// The precision, FSDP and recomputation left to the search, in headless Chromium (docs/search.md,
// "Training choices"; docs/web.md): the search options' selects, each plan's choice in the top
// plans, the headline and the Megatron-LM command of the selected plan in its own precision, and
// a link that opens that plan in it.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/choices.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, assertClean, DESKTOP } from './harness.mjs';
import { workbenchHelpers } from './workbench-helpers.mjs';

let searchWorks = true;
let searchSkipReason = '';
const env = useBrowser({ viewport: DESKTOP, ready: (e) => { ({ searchWorks, searchSkipReason } = e); } });
const { open, link, settled, hashPayload } = workbenchHelpers(env);

test('precision and FSDP searched: each plan names its choice, the headline and the export follow the selected plan, the link reopens it', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // 128 H100 (16 DGX): fp8 runs everywhere; the training says bf16
  const url = await link({ m: 'llama3-8b', c: 'dgx-h100-16', t: { global_batch_size: 64 }, o: { top: 5, time_limit_s: 20, precisions: 'bf16,fp8', fsdp: 'any' } });
  const { page, problems } = await open(t, url);
  await settled(page, 60000);
  // the selects show the link's options
  assert.equal(await page.inputValue('[data-path="options.precisions"]'), 'bf16,fp8');
  assert.equal(await page.inputValue('[data-path="options.fsdp"]'), 'any');
  const cells = await page.$$eval('[data-testid=top-plans] [data-testid=plan-choices]', (els) => els.map((e) => e.textContent));
  t.diagnostic(`choices of the top plans: ${cells.join(' | ')}`);
  assert.ok(cells.length >= 2);
  for (const c of cells) assert.match(c, /^(bf16|fp8), (no FSDP|FSDP)$/);
  assert.match(cells[0], /^fp8/, 'the H100s train Llama 3 8B fastest in fp8');
  // the headline names the selected plan's precision, not the training's bf16
  assert.match(await page.textContent('[data-testid=context-line]'), / · fp8 · /);
  // the link carries the plan with its choice
  const payload = await hashPayload(page);
  assert.equal(payload.p.precision, 'fp8');
  assert.equal(typeof payload.p.fsdp, 'boolean');
  // the Megatron-LM command trains it in fp8
  await Promise.all([page.waitForEvent('download'), page.click('#export-megatron')]);
  await page.waitForSelector('#megatron:not([hidden])');
  assert.match(await page.textContent('#megatron'), /--fp8-format hybrid/);
  await assertClean(page, problems);
  // opened by a collaborator: the same plan, in fp8
  const shared = await open(t, page.url());
  await shared.page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 60000 });
  assert.match(await shared.page.textContent('[data-testid=context-line]'), / · fp8 · /);
  assert.equal((await hashPayload(shared.page)).p.precision, 'fp8');
  await assertClean(shared.page, shared.problems);
});

test('recomputation searched: each plan names its choice, the Megatron-LM command and the link follow the selected plan', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // Llama 3 8B at 8,448 tokens on one DGX H100 (at 8,192 one stage fits without recomputation),
  // the training recomputing every block: the search may pick none, selective, full or the first
  // 1/2/4/8 blocks of each stage
  const cluster = { name: 'one DGX H100', groups: [{ device: 'h100-sxm5-80gb', nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 50 }] };
  const url = await link({ m: { id: 'llama3-8b', o: { seq_length: 8448 } }, c: { o: cluster }, t: { global_batch_size: 128, recompute: 'full', sequence_parallel: true, distributed_optimizer: true }, o: { top: 5, time_limit_s: 20, recompute: 'blocks' } });
  const { page, problems } = await open(t, url);
  await settled(page, 60000);
  assert.equal(await page.inputValue('[data-path="options.recompute"]'), 'blocks');
  // the Training box says its recompute is left to the search
  assert.match(await page.textContent('[data-testid=searched-note]'), /^recompute: left to the search/);
  const cells = await page.$$eval('[data-testid=top-plans] [data-testid=plan-choices]', (els) => els.map((e) => e.textContent));
  t.diagnostic(`choices of the top plans: ${cells.join(' | ')}`);
  assert.ok(cells.length >= 2);
  for (const c of cells) assert.match(c, /^(no recompute|selective recompute|full recompute|recompute [1248] blocks?)$/);
  // one stage that recomputes its first block fits and beats the rest (tests/unit/search_recompute.tests.cpp)
  assert.equal(cells[0], 'recompute 1 block');
  // the headline's context line names the selected plan's recomputation, not the training's full
  assert.match(await page.textContent('[data-testid=context-line]'), / · bf16, recompute 1 block per stage · /);
  const payload = await hashPayload(page);
  assert.equal(payload.p.recompute, 'full');
  assert.equal(payload.p.recompute_num_layers, 1);
  await Promise.all([page.waitForEvent('download'), page.click('#export-megatron')]);
  await page.waitForSelector('#megatron:not([hidden])');
  assert.match(await page.textContent('#megatron'), /--recompute-method block/);
  await assertClean(page, problems);
});

test('a named precision a GPU cannot run is refused with the option, the group and the device', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // H100 + A100 + RTX 4090: the A100 has no fp8
  const { page, problems } = await open(t, await link({ m: 'gpt3-1.7b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 64 }, o: { precisions: 'bf16,fp8' } }));
  await page.waitForSelector('[data-testid=error]:not([hidden])', { timeout: 60000 });
  const text = await page.textContent('[data-testid=error]');
  t.diagnostic(text);
  assert.match(text, /options\.precisions\[1\]/);
  assert.match(text, /"fp8" cannot run on/);
  await assertClean(page, problems);
});

test('with the precision left to the search, a Training precision the GPUs cannot run does not stop it', async (t) => {
  if (!searchWorks) { t.skip(searchSkipReason); return; }
  // the Training select still says mxfp8 (no GPU here runs it); the search chooses among the others
  const { page, problems } = await open(t, await link({ m: 'gpt3-1.7b', c: 'mixed-h100-a100-4090', t: { global_batch_size: 64, precision: 'mxfp8' }, o: { precisions: 'any' } }));
  await settled(page, 60000);
  assert.ok(await page.$eval('[data-testid=error]', (e) => e.hidden), 'no error');
  const cells = await page.$$eval('[data-testid=top-plans] [data-testid=plan-choices]', (els) => els.map((e) => e.textContent));
  t.diagnostic(`choices of the top plans: ${cells.join(' | ')}`);
  assert.ok(cells.length >= 1);
  for (const c of cells) assert.match(c, /^bf16/, 'the A100s and 4090s leave bf16 alone');
  await assertClean(page, problems);
});
