// The page's pure modules in node: share links, exports, Hugging Face config import.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeShare, decodeShare, ShareLinkError, toBase64Url, SHARE_VERSION, diff, applyDiff } from '../../web/share.js';
import { chromeTrace, topPlansCsv, megatronArgs, planJson } from '../../web/exports.js';
import { modelFromHfConfig, HfConfigError } from '../../web/hf.js';

const payload = { app: '0.1.0', m: 'gpt3-1.7b', c: { id: 'demo-mixed-16', o: { groups: [{ device: 'custom-1', nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 25 }] } },
  d: { 'custom-1': { name: 'My GPU <b>"x"</b>', peak_tflops: 100, memory_GiB: 40 } }, t: { global_batch_size: 64 }, o: { top: 3 },
  p: { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8 }] } };

test('share link round trip', async () => {
  const frag = await encodeShare(payload);
  assert.match(frag, new RegExp(`^v=${SHARE_VERSION}&s=[A-Za-z0-9_-]+$`));
  assert.ok(frag.length < 2000, `link is ${frag.length} chars`);
  assert.deepStrictEqual(await decodeShare(`#${frag}`), { ...payload, v: SHARE_VERSION });
});

test('broken share links give a ShareLinkError with a message', async () => {
  const frag = await encodeShare(payload);
  const data = frag.split('&s=')[1];
  const bad = [
    frag.slice(0, frag.length - 10), // truncated
    frag.slice(0, 12),
    `v=1&s=${data.slice(0, 5)}`,
    `v=1&s=${data.replace(/[A-Z]/g, 'Q')}`, // corrupted
    `v=1&s=${data}!!`,
    `v=${SHARE_VERSION + 1}&s=${data}`, // future version
    `v=abc&s=${data}`,
    's=abc',
    'v=1',
    `v=1&s=${'A'.repeat(70000)}`, // oversized
    `v=1&s=${toBase64Url(new TextEncoder().encode('not deflate at all'))}`,
  ];
  for (const f of bad) {
    await assert.rejects(decodeShare(f), (e) => e instanceof ShareLinkError && e.message.length > 10, f.slice(0, 60));
  }
  await assert.rejects(decodeShare(`v=${SHARE_VERSION + 1}&s=${data}`), /newer version/);
  // valid deflate, wrong content
  for (const obj of [[1, 2], { v: 1, m: 5, c: 'x' }, { v: 1, m: 'a' }, { v: 1, m: 'a', c: 'b', zz: 1 }, { v: 9, m: 'a', c: 'b' }, { v: 1, m: 'a', c: 'b', p: 'plan' }]) {
    const enc = await encodeShareRaw(obj);
    await assert.rejects(decodeShare(`v=1&s=${enc}`), ShareLinkError, JSON.stringify(obj));
  }
  // a deflate bomb stops at the cap
  const bomb = await encodeShareRaw({ v: 1, m: 'a', c: 'b', t: { x: 'a'.repeat(3 * 1024 * 1024) } });
  await assert.rejects(decodeShare(`v=1&s=${bomb}`), /KiB/);
});

async function encodeShareRaw(obj) {
  const bytes = new TextEncoder().encode(JSON.stringify(obj));
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  return toBase64Url(new Uint8Array(await new Response(stream).arrayBuffer()));
}

test('preset overrides: diff and applyDiff', () => {
  const base = { a: 1, b: { c: 2 }, d: 3 };
  const cur = { a: 1, b: { c: 5 }, e: 4 };
  const d = diff(base, cur);
  assert.deepStrictEqual(d, { b: { c: 5 }, d: null, e: 4 });
  assert.deepStrictEqual(applyDiff(base, d), cur);
});

const est = {
  iteration_time_s: 1, tokens_per_s: 1000, mfu: 0.5, num_gpus: 16, memory_fits: true,
  stages: [{ index: 0, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }, { index: 1, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }],
  timeline: [
    { stage: 0, kind: 'forward', micro_batch: 0, start_s: 0, end_s: 0.1 },
    { stage: 0, kind: 'send_forward', micro_batch: 0, start_s: 0.1, end_s: 0.15 },
    { stage: 0, kind: 'send_backward', micro_batch: 0, start_s: 0.12, end_s: 0.2 },
    { stage: 0, kind: 'dp_sync', micro_batch: null, start_s: 0.5, end_s: 0.6 },
    { stage: 1, kind: 'forward', micro_batch: 0, start_s: 0.15, end_s: 0.25 },
    { stage: 1, kind: 'backward', micro_batch: 0, start_s: 0.25, end_s: 0.45 },
    { stage: 1, kind: 'optimizer', micro_batch: null, start_s: 0.9, end_s: 1 },
  ],
  plan: { micro_batch_size: 8, num_micro_batches: 4, schedule: '1f1b', stages: [{ group: 0, num_layers: 12, tp: 2, dp: 4 }, { group: 0, num_layers: 12, tp: 2, dp: 4 }] },
};

test('chrome trace: compute and comm on separate threads, no overlap on a thread', () => {
  const trace = JSON.parse(chromeTrace(est));
  const xs = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.equal(xs.length, est.timeline.length);
  const tracks = new Map();
  for (const e of xs) {
    const comm = ['send_forward', 'send_backward', 'dp_sync'].includes(e.cat);
    assert.equal(e.tid >= 100, comm, `${e.name} on tid ${e.tid}`);
    const k = `${e.pid}/${e.tid}`;
    if (!tracks.has(k)) tracks.set(k, []);
    tracks.get(k).push(e);
  }
  for (const list of tracks.values()) {
    list.sort((a, b) => a.ts - b.ts);
    for (let i = 1; i < list.length; i++) assert.ok(list[i].ts >= list[i - 1].ts + list[i - 1].dur - 1e-6, 'no overlap');
  }
  assert.ok(trace.traceEvents.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.args.name === 'comm'));
});

test('CSV, plan JSON, Megatron-LM args', () => {
  const csv = topPlansCsv([est, est]).trim().split('\n');
  assert.equal(csv.length, 3);
  assert.match(csv[0], /^rank,iteration_time_s,tokens_per_s/);
  assert.match(csv[1], /^1,1,1000,0.5,16,true,2,8,4,2x4 2x4,12 12,a100 a100$/);
  assert.deepStrictEqual(JSON.parse(planJson(est)), est.plan);
  const model = { num_layers: 24, hidden_size: 2048, num_attention_heads: 16, seq_length: 2048, vocab_size: 50257 };
  const ok = megatronArgs(est, { model, training: { global_batch_size: 32, precision: 'bf16' } });
  assert.ok(ok.ok);
  assert.match(ok.text, /--tensor-model-parallel-size 2/);
  assert.match(ok.text, /--pipeline-model-parallel-size 2/);
  assert.match(ok.text, /--micro-batch-size 2/);
  assert.match(ok.text, /--global-batch-size 32/);
  const hetero = structuredClone(est);
  hetero.stages[1].device = 'v100';
  hetero.stages[1].tp = 4;
  const no = megatronArgs(hetero, { model, training: {} });
  assert.equal(no.ok, false);
  assert.equal(no.reasons.length, 2);
  assert.match(no.reasons.join(' '), /tensor parallelism differs/);
});

test('Hugging Face config.json import', () => {
  const llama = JSON.stringify({ _name_or_path: 'meta-llama/Llama-2-7b-hf', model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096,
    num_attention_heads: 32, num_key_value_heads: 32, intermediate_size: 11008, vocab_size: 32000, max_position_embeddings: 4096,
    hidden_act: 'silu', rope_theta: 10000, tie_word_embeddings: false });
  const { model } = modelFromHfConfig(llama);
  assert.deepStrictEqual(model, { name: 'meta-llama/Llama-2-7b-hf', num_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_kv_heads: 32,
    ffn_hidden_size: 11008, vocab_size: 32000, seq_length: 4096, gated_mlp: true, tied_embeddings: false, position_embedding: 'rope', bias: false });
  const gpt2 = modelFromHfConfig(JSON.stringify({ model_type: 'gpt2', n_layer: 48, n_embd: 1600, n_head: 25, n_positions: 1024, vocab_size: 50257, activation_function: 'gelu_new' })).model;
  assert.equal(gpt2.num_layers, 48);
  assert.equal(gpt2.tied_embeddings, true);
  assert.equal(gpt2.position_embedding, 'learned');
  assert.equal(gpt2.gated_mlp, false);
  assert.throws(() => modelFromHfConfig('{nope'), HfConfigError);
  assert.throws(() => modelFromHfConfig('[1]'), HfConfigError);
});
