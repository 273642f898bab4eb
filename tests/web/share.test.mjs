// The page's share links (formats 1-4, broken links, preset overrides) and the calibration overrides
// they carry, in node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeShare, decodeShare, ShareLinkError, toBase64Url, SHARE_VERSION, diff, applyDiff, payloadVersion } from '../../web/share.js';
import { fmtSignedPct } from '../../web/dom.js';
import { CALIBRATION_KEYS, calibrationFromScenario, calibratedDevice, fittedText, fittedValues, checkRunsText, RunsInputError, runsProblemText } from '../../web/calibration.js';

const payload = { app: '0.1.0', m: 'gpt3-1.7b', c: { id: 'demo-mixed-16', o: { groups: [{ device: 'custom-1', nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 25 }] } },
  d: { 'custom-1': { name: 'My GPU <b>"x"</b>', peak_tflops: 100, memory_GiB: 40 } }, t: { global_batch_size: 64 }, o: { top: 3 },
  p: { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8 }] } };

test('share link round trip', async () => {
  const frag = await encodeShare(payload);
  // no profile: written as format 1, so pages that only read format 1 still open it
  assert.match(frag, /^v=1&s=[A-Za-z0-9_-]+$/);
  assert.ok(frag.length < 2000, `link is ${frag.length} chars`);
  assert.deepStrictEqual(await decodeShare(`#${frag}`), { ...payload, v: 1 });
});

const profile = { name: 'mine', devices: [{ device: 'a100-sxm4-80gb', points: [{ tp: 1, samples: 1, layer_forward_s: 0.006, layer_backward_s: 0.013 }] }] };

test('share links with a profile: format 2, preset id or inline; format 1 links still open', async () => {
  assert.equal(SHARE_VERSION, 7);
  for (const f of ['llama3.2-1b-a100-illustrative', { o: profile }, { o: [1, 2] }]) {
    const p = { ...payload, f };
    assert.equal(payloadVersion(p), 2);
    const frag = await encodeShare(p);
    assert.match(frag, /^v=2&s=/);
    assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 2 });
  }
  // a format-1 link written by the previous page (payload v: 1, no f)
  const old = await encodeShareRaw({ ...payload, v: 1 });
  assert.deepStrictEqual(await decodeShare(`v=1&s=${old}`), { ...payload, v: 1 });
  // "f" is not a format-1 key; malformed profiles are refused with a message
  for (const obj of [{ ...payload, v: 1, f: 'x' }, { ...payload, v: 2, f: 5 }, { ...payload, v: 2, f: { id: 'x' } }, { ...payload, v: 2, f: { o: {}, z: 1 } }, { ...payload, v: 2, f: [1] }]) {
    await assert.rejects(decodeShare(`v=${obj.v}&s=${await encodeShareRaw(obj)}`), ShareLinkError, JSON.stringify(obj.f));
  }
  await assert.rejects(decodeShare(`v=${SHARE_VERSION + 1}&s=${old}`), /newer version/);
});

const calibrated = { 'a100-sxm4-80gb': { matmul_efficiency: 0.597843, framework_overhead_GiB: 0.594704,
  calibration: { fitted: { matmul_efficiency: { from: 0.72, to: 0.597843 }, framework_overhead_GiB: { from: 3, to: 0.594704 } }, runs: 3, source: 'poseidon calibrate' } } };

test('format 3: stack, TF32 and link types, and the calibration ("k"); older formats still open', async () => {
  const cases = [
    { ...payload, t: { global_batch_size: 64, stack: 'deepspeed-megatron-2022' } },
    { ...payload, t: { global_batch_size: 64, precision: 'fp32', tf32: true } },
    { ...payload, t: { global_batch_size: 64, stack: { base: 'megatron-core', pass_overhead_us: 500 } } },
    { ...payload, c: { id: 'demo-mixed-16', o: { groups: [{ device: 'a100-sxm4-80gb', nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 25, intra_node_link: 'pcie_host' }] } } },
    { ...payload, c: { o: { name: 'x', groups: [{ device: 't4-16gb', nodes: 4, gpus_per_node: 4, inter_node_bw_GBps: 6.25, inter_node_link: 'ethernet' }] } } },
    { ...payload, k: calibrated },
    { ...payload, f: 'llama3.2-1b-a100-illustrative', k: calibrated },
  ];
  for (const p of cases) {
    assert.equal(payloadVersion(p), 3, JSON.stringify(p.t ?? p.c ?? p.k));
    const frag = await encodeShare(p);
    assert.match(frag, /^v=3&s=/);
    assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 3 });
  }
  // without any of them a link keeps its lower format (a format-1 or -2 page opens it)
  assert.equal(payloadVersion({ ...payload, t: { global_batch_size: 64, precision: 'fp32' } }), 1);
  assert.equal(payloadVersion({ ...payload, k: null }), 1);
  assert.equal(payloadVersion({ ...payload, f: 'x' }), 2);
  // links written by the previous pages (formats 1 and 2) still open
  for (const old of [{ ...payload, v: 1 }, { ...payload, v: 2, f: 'llama3.2-1b-a100-illustrative' }]) {
    assert.deepStrictEqual(await decodeShare(`v=${old.v}&s=${await encodeShareRaw(old)}`), old);
  }
  // "k" is not a key of formats 1 and 2; a malformed calibration is refused with a message
  for (const obj of [{ ...payload, v: 2, k: calibrated }, { ...payload, v: 1, k: calibrated }, { ...payload, v: 3, k: 'a100' },
    { ...payload, v: 3, k: [calibrated] }, { ...payload, v: 3, k: { 'a100-sxm4-80gb': 0.6 } }]) {
    await assert.rejects(decodeShare(`v=${obj.v}&s=${await encodeShareRaw(obj)}`), ShareLinkError, JSON.stringify(obj.k));
  }
});

test('calibration: overrides per device from a calibrated scenario, sent as base + fitted values', () => {
  const presetA100 = { id: 'a100-sxm4-80gb', name: 'NVIDIA A100 SXM4 80GB', peak_tflops: 312, matmul_efficiency: 0.72, framework_overhead_GiB: 3,
    memory_bw_efficiency: 0.85, source: 's', notes: 'n' };
  const custom = { name: 'My GPU', peak_tflops: 100, memory_GiB: 40, matmul_efficiency: 0.5, framework_overhead_GiB: 2 };
  // what the core returns: the cluster inline, every device normalised (defaults filled in, no source/notes)
  const calDev = (base, fitted) => ({ ...Object.fromEntries(Object.entries(base).filter(([k]) => k !== 'source' && k !== 'notes')),
    fp32_tflops: 19.5, kernel_overhead_us: 5, ...Object.fromEntries(Object.entries(fitted).map(([k, v]) => [k, v.to])),
    calibration: { fitted, runs: 2, source: 'poseidon calibrate' } });
  const a = calDev(presetA100, { matmul_efficiency: { from: 0.72, to: 0.6 } });
  const c = calDev(custom, { framework_overhead_GiB: { from: 2, to: 1.25 } });
  const inline = calDev({ name: 'Inline GPU', peak_tflops: 50, matmul_efficiency: 0.7 }, { matmul_efficiency: { from: 0.7, to: 0.65 } });
  const scenario = { model: 'gpt3-1.7b', cluster: { name: 'x', groups: [{ device: a }, { device: c }, { device: a }, { device: inline }] } };
  const out = calibrationFromScenario(['a100-sxm4-80gb', 'custom-1', 'a100-sxm4-80gb', null], scenario,
    (id) => ({ 'a100-sxm4-80gb': presetA100, 'custom-1': custom })[id]);
  // only fitted keys and the provenance: no normalised defaults, no informational keys
  assert.deepStrictEqual(out.devices, {
    'a100-sxm4-80gb': { matmul_efficiency: 0.6, calibration: a.calibration },
    'custom-1': { framework_overhead_GiB: 1.25, calibration: c.calibration },
  });
  assert.deepStrictEqual(out.inline, { 3: inline });
  assert.equal(out.stack, null); // no stack overhead was fitted
  // fitted stack overheads: the calibrated scenario's stack object (base + values + provenance), kept whole
  const stack = { base: 'deepspeed-megatron-2022', layer_overhead_us: 1080, calibration: { fitted: { layer_overhead_us: { from: 1000, to: 1080 } }, runs: 5, source: 'poseidon calibrate' } };
  assert.deepStrictEqual(calibrationFromScenario([], { cluster: { groups: [] }, training: { stack } }, () => null).stack, stack);
  assert.equal(calibrationFromScenario([], { cluster: { groups: [] }, training: { stack: 'megatron-core' } }, () => null).stack, null);
  // a preset device goes to the core as {"base": id, ...}; a custom one with the values merged in
  assert.deepStrictEqual(calibratedDevice('a100-sxm4-80gb', out.devices['a100-sxm4-80gb'], null), { base: 'a100-sxm4-80gb', ...out.devices['a100-sxm4-80gb'] });
  assert.deepStrictEqual(calibratedDevice('custom-1', out.devices['custom-1'], custom), { ...custom, ...out.devices['custom-1'] });
  assert.equal(calibratedDevice('x', {}, null), null);
  assert.equal(calibratedDevice('x', null, null), null);
  assert.deepStrictEqual(fittedValues(out.devices['a100-sxm4-80gb']), [{ key: 'matmul_efficiency', from: 0.72, to: 0.6 }]);
  assert.deepStrictEqual(fittedValues({ memory_bw_efficiency: 0.5 }), [{ key: 'memory_bw_efficiency', from: undefined, to: 0.5 }]);
  assert.deepStrictEqual(CALIBRATION_KEYS, ['matmul_efficiency', 'memory_bw_efficiency', 'intra_node_link_efficiency', 'inter_node_link_efficiency', 'framework_overhead_GiB']);
  assert.throws(() => calibrationFromScenario([], { model: 'x' }, () => null), RunsInputError);
  assert.throws(() => checkRunsText('  '), RunsInputError);
  assert.equal(checkRunsText(' {"runs": []} '), '{"runs": []}');
  // a value the fit left where it was (at the shown precision) is said to be unchanged
  assert.equal(fittedText([{ key: 'matmul_efficiency', from: 0.72, to: 0.6 }, { key: 'memory_bw_efficiency', from: 0.85, to: 0.8500000001 },
    { key: 'framework_overhead_GiB', from: undefined, to: 1.25 }]),
  'matmul_efficiency 0.72 → 0.6, memory_bw_efficiency 0.85 (unchanged), framework_overhead_GiB 1.25');
  assert.equal(fittedText([]), 'no fitted value');
  assert.deepStrictEqual([0.052, -0.15, -1e-7, 0, NaN].map((x) => fmtSignedPct(x)), ['+5.2%', '−15.0%', '0.0%', '0.0%', '–']);
});

test('calibrate problems in the runs: the path inside RUNS.json (not the core\'s runs.runs), the document itself named', () => {
  assert.equal(runsProblemText({ path: 'runs.runs[0].iteration_time_s', message: '-2 is out of range' }), 'runs[0].iteration_time_s: -2 is out of range');
  assert.equal(runsProblemText({ path: 'runs.runs', message: 'is empty' }), 'runs: is empty');
  assert.equal(runsProblemText({ path: 'runs', message: 'is not valid JSON at line 1, column 3' }), 'The runs document is not valid JSON at line 1, column 3');
  assert.equal(runsProblemText({ path: 'runs', message: '[1] is an array; expected an object' }), 'The runs document: [1] is an array; expected an object');
  assert.equal(runsProblemText({ path: 'runsx', message: 'm' }), 'runsx: m', 'only the argument name is taken off');
  // a syntax error belongs to the text, not to the value the parser stopped in
  for (const where of ['runs.runs', 'runs.runs[0]']) {
    assert.equal(runsProblemText({ path: where, message: 'is not valid JSON at line 1, column 11: unexpected end' }), 'The runs document is not valid JSON at line 1, column 11: unexpected end');
  }
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
  // a number beyond a double in the data: refused with its path (as Infinity it would become null, a dropped key)
  const inf = await encodeShareText('{"v": 1, "m": "a", "c": "b", "t": {"global_batch_size": 1e309}}');
  await assert.rejects(decodeShare(`v=1&s=${inf}`), /^ShareLinkError: The share link's data holds a number it cannot carry: t\.global_batch_size: a number too large for a double/);
  await assert.rejects(decodeShare(`v=-1&s=${data}`), /version "-1" is not one this page reads: formats 1 to \d/);
  // a deflate bomb stops at the cap
  const bomb = await encodeShareRaw({ v: 1, m: 'a', c: 'b', t: { x: 'a'.repeat(3 * 1024 * 1024) } });
  await assert.rejects(decodeShare(`v=1&s=${bomb}`), /KiB/);
});

const encodeShareRaw = (obj) => encodeShareText(JSON.stringify(obj));

async function encodeShareText(text) {
  const bytes = new TextEncoder().encode(text);
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

test('share links format 4: the cost inputs ("b"); older formats still open; malformed "b" refused', async () => {
  const p = { ...payload, b: { t: '300B', p: { 'a100-sxm4-80gb': 2.1 }, i: true } };
  assert.equal(payloadVersion(p), 4);
  const frag = await encodeShare(p);
  assert.match(frag, /^v=4&s=/);
  assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 4 });
  assert.equal(payloadVersion({ ...payload, k: calibrated }), 3, 'without "b" a link keeps its lower format');
  for (const v of [1, 2, 3]) assert.deepStrictEqual(await decodeShare(`v=${v}&s=${await encodeShareRaw({ ...payload, v })}`), { ...payload, v });
  for (const b of [{ t: 5 }, { p: { x: -1 } }, { p: { x: '2' } }, { i: 'yes' }, { z: 1 }, [1]]) {
    await assert.rejects(decodeShare(`v=4&s=${await encodeShareRaw({ ...payload, v: 4, b })}`), ShareLinkError, JSON.stringify(b));
  }
  await assert.rejects(decodeShare(`v=3&s=${await encodeShareRaw({ ...payload, v: 3, b: { t: '1T' } })}`), /unknown fields/);
});

test('share links format 5: inputs or a plan that a format-4 page\'s engine does not know; older formats still open', async () => {
  const moe = { ...payload, m: { id: 'gpt3-1.7b', o: { num_experts: 8, moe_top_k: 2 } } };
  const cases = [
    moe,
    { ...payload, m: { o: { name: 'mla', num_layers: 4, attention: 'mla' } } },
    { ...payload, t: { global_batch_size: 64, precision: 'fp8' } },
    { ...payload, t: { global_batch_size: 64, fsdp: true } },
    { ...payload, t: { global_batch_size: 64, stack: { id: 'megatron-core', o: { nccl_nvls: false } } } },
    { ...payload, c: { id: 'demo-mixed-16', o: { groups: [{ device: 'custom-1', nodes: 1, gpus_per_node: 4, nvlink_domain_gpus: 72 }] } } },
    { ...payload, d: { 'custom-1': { name: 'x', peak_tflops: 100, memory_GiB: 40, fp8_tflops: 200 } } },
    { ...payload, o: { top: 3, precisions: 'any' } },
    { ...payload, p: { ...payload.p, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8, ep: 8 }] } },
    { ...payload, p: { ...payload.p, precision: 'fp8' } },
    { ...payload, m: 'deepseek-v3' },
    { ...payload, c: 'gb200-nvl72-72' },
    { ...payload, c: { id: 'demo-mixed-16', o: { groups: [{ device: 'b200-180gb', nodes: 1, gpus_per_node: 8 }] } } },
    { ...payload, t: { global_batch_size: 64, stack: 'nemo1-apex-bf16' } },
  ];
  for (const p of cases) {
    assert.equal(payloadVersion(p), 5, JSON.stringify(p.m ?? p));
    const frag = await encodeShare(p);
    assert.match(frag, /^v=5&s=/);
    assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 5 });
  }
  // what format 4 knew keeps its format: a dense link stays 1, cost inputs 4
  assert.equal(payloadVersion(payload), 1);
  assert.equal(payloadVersion({ ...payload, t: { global_batch_size: 64, precision: 'fp16', overlap_grad_reduce: true } }), 1);
  assert.equal(payloadVersion({ ...payload, b: { t: '300B' } }), 4);
  assert.equal(payloadVersion({ ...moe, b: { t: '300B' } }), 5, 'format 5 holds the cost inputs too');
  for (const v of [1, 2, 3, 4]) assert.deepStrictEqual(await decodeShare(`v=${v}&s=${await encodeShareRaw({ ...payload, v })}`), { ...payload, v });
});

test('share links format 6: search options that fix the context-parallel or expert grid sizes; format 5 and older still open', async () => {
  const moe = { ...payload, m: { id: 'gpt3-1.7b', o: { num_experts: 8, moe_top_k: 2 } } };
  for (const o of [{ top: 3, cp_sizes: '2' }, { ep_sizes: '8' }, { etp_sizes: [2] }, { ep_sizes: '4', precisions: 'any' }]) {
    const p = { ...moe, o };
    assert.equal(payloadVersion(p), 6, JSON.stringify(o));
    const frag = await encodeShare(p);
    assert.match(frag, /^v=6&s=/);
    assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 6 });
  }
  // without them a link keeps the format that holds the rest
  assert.equal(payloadVersion({ ...moe, o: { top: 3 } }), 5);
  assert.equal(payloadVersion({ ...payload, o: { top: 3 } }), 1);
  for (const v of [1, 5]) assert.deepStrictEqual(await decodeShare(`v=${v}&s=${await encodeShareRaw({ ...payload, v })}`), { ...payload, v });
});

test('share links format 7: a model that sets qk_layernorm; the Qwen3 presets that carry it keep the lower format', async () => {
  for (const m of [{ id: 'gpt3-1.7b', o: { qk_layernorm: true } }, { id: 'qwen3-30b-a3b', o: { qk_layernorm: false } }, { o: { name: 'pasted', num_layers: 2, qk_layernorm: true } }]) {
    const p = { ...payload, m };
    assert.equal(payloadVersion(p), 7, JSON.stringify(m));
    const frag = await encodeShare(p);
    assert.match(frag, /^v=7&s=/);
    assert.deepStrictEqual(await decodeShare(frag), { ...p, v: 7 });
  }
  assert.equal(payloadVersion({ ...payload, m: 'qwen3-30b-a3b' }), 5);
  assert.equal(payloadVersion({ ...payload, m: { id: 'qwen3-30b-a3b', o: { qk_layernorm: null } } }), 5);
  for (const v of [5, 6]) assert.deepStrictEqual(await decodeShare(`v=${v}&s=${await encodeShareRaw({ ...payload, v })}`), { ...payload, v });
});
