// Share links: the inputs and the selected plan in the URL fragment.
//   #v=<version>&s=<base64url(deflate-raw(utf8(JSON payload)))>
// The payload holds preset ids plus overrides, never whole preset objects. Decoding is defensive:
// every failure is a ShareLinkError with a message for the page's error region.
// Versions: 1 = inputs and plan; 2 adds "f", the measured profile; 3 adds "k", the calibrated
// devices, and is also the version of any link whose inputs use what a format-2 page's engine does
// not know (training.stack, training.tf32, a cluster group's intra_node_link / inter_node_link);
// 4 adds "b", the time-to-train and cost inputs (token budget, prices per GPU-hour, idle GPUs billed).
// 5 adds no field: it is the version of any link whose inputs or plan use what a format-4 page's
// engine does not know (mixture-of-experts, MLA, windowed and MTP models, low precisions, context
// parallelism, FSDP, NVLink domains, the searched choices and layouts: V5_KEYS), so that a format-4
// page says the link is newer instead of handing its engine keys it would refuse.
// 6 adds no field either: the version of a link whose search options fix the context-parallel or
// expert grid sizes (options cp_sizes, ep_sizes, etp_sizes: V6_KEYS), which a format-5 engine refuses.
// 7 adds no field: the version of a link whose model sets a key a format-6 engine refuses
// (qk_layernorm: V7_KEYS). A preset that carries it (Qwen3) is read by the engine that opens the
// link, so a link naming the preset alone keeps its lower version.
// A link is written with the lowest version that holds its payload (a link without a profile
// stays v=1, readable by pages that only know version 1); this page reads every version up to
// SHARE_VERSION.

import { NonFiniteNumberError, parseJson } from './json-text.js';

export const SHARE_VERSION = 7;
export const MAX_FRAGMENT_CHARS = 64 * 1024; // an encoded link longer than this is refused
export const MAX_PAYLOAD_BYTES = 1024 * 1024; // inflated payload cap (a deflate bomb stops here)

export class ShareLinkError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ShareLinkError';
  }
}

export function toBase64Url(bytes) {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new ShareLinkError('The share link contains characters that base64url does not use; it was probably altered.');
  if (text.length % 4 === 1) throw new ShareLinkError('The share link is truncated (its data ends mid-character).');
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function pipe(bytes, stream, limit) {
  const reader = new Blob([bytes]).stream().pipeThrough(stream).getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (limit && total > limit) {
      reader.cancel().catch(() => {});
      throw new ShareLinkError(`The share link expands to more than ${limit / 1024} KiB; it is refused.`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

/** payload keys each version knows */
const KEYS_V1 = ['v', 'app', 'm', 'c', 'd', 't', 'o', 'p'];
const KEYS_V4 = [...KEYS_V1, 'f', 'k', 'b'];
const KEYS = { 1: new Set(KEYS_V1), 2: new Set([...KEYS_V1, 'f']), 3: new Set([...KEYS_V1, 'f', 'k']), 4: new Set(KEYS_V4), 5: new Set(KEYS_V4), 6: new Set(KEYS_V4), 7: new Set(KEYS_V4) };

/** training keys and cluster group keys that a format-3 link introduced (engines before them refuse them) */
export const V3_TRAINING_KEYS = ['stack', 'tf32'];
export const V3_GROUP_KEYS = ['intra_node_link', 'inter_node_link'];

const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const present = (o, keys) => o !== null && typeof o === 'object' && keys.some((k) => o[k] !== undefined && o[k] !== null);

/** true when the payload's inputs use a key that only format 3 pages know */
function usesV3Inputs(payload) {
  if (present(payload.t, V3_TRAINING_KEYS)) return true;
  const groups = payload.c && typeof payload.c === 'object' ? payload.c.o?.groups : null;
  return Array.isArray(groups) && groups.some((g) => present(g, V3_GROUP_KEYS));
}

/**
 * keys a format-4 page's engine did not know, by where they sit (docs/formats.md then and now):
 * the scenario's model, training, stack, cluster groups and devices, the search options, the plan
 * and its stages; and the precisions it knew
 */
export const V5_KEYS = {
  model: ['attention', 'attention_dropout', 'first_dense_layers', 'head_dim', 'hidden_dropout', 'kv_lora_rank', 'moe_ffn_hidden_size', 'moe_layer_freq',
    'moe_shared_expert_ffn_hidden_size', 'moe_top_k', 'mtp_layers', 'num_experts', 'num_shared_experts', 'q_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim',
    'rope_theta', 'sliding_window', 'sliding_window_pattern', 'v_head_dim'],
  training: ['cp_comm_type', 'cuda_graph_impl', 'defer_embedding_wgrad_compute', 'fp8_param_gather', 'fsdp', 'fsdp_sharding', 'global_batch_tolerance',
    'moe_imbalance', 'moe_shared_expert_overlap', 'moe_token_dispatcher', 'overlap_moe_expert_parallel_comm', 'recompute_modules', 'recompute_num_layers',
    'wgrad_deferral_limit'],
  stack: ['calibration', 'low_precision_recipes', 'master_weight_bytes_per_param', 'moe_sync_host_us', 'moe_sync_host_us_per_expert', 'moment_bytes_per_param',
    'nccl_nvls'],
  group: ['nvlink_domain_gpus'],
  device: ['attention_flops_per_exp', 'fp8_tflops', 'low_precision_efficiency_ratio', 'mxfp8_tflops', 'nvfp4_tflops', 'price_as_of', 'price_source',
    'price_usd_per_gpu_hour'],
  options: ['empty_stages', 'fsdp', 'group_blocks', 'mixed_stages', 'node_counts', 'precisions', 'prune_above_s', 'recompute', 'recompute_num_layers',
    'schedule', 'split_nodes'],
  plan: ['fsdp', 'microbatch_group_size', 'precision', 'recompute', 'recompute_num_layers'],
  stage: ['chunk_layers', 'cp', 'ep', 'etp'],
};
const V4_PRECISIONS = ['bf16', 'fp16', 'fp32'];
/** presets a format-4 page did not ship (its engine refuses their ids) */
export const V5_PRESETS = {
  model: ['deepseek-v3', 'gpt-oss-120b', 'gpt-oss-20b', 'kimi-k2', 'llama4-maverick', 'llama4-scout', 'mixtral-8x22b', 'mixtral-8x7b', 'qwen3-235b-a22b',
    'qwen3-30b-a3b'],
  cluster: ['dgx-b200-32', 'dgx-b300-32', 'gb200-nvl72-256', 'gb200-nvl72-72', 'gb300-nvl72-72', 'h100-plus-gb200'],
  device: ['b200-180gb', 'b300-288gb', 'gb200-186gb', 'gb300-288gb', 'mi325x-256gb', 'mi355x-288gb'],
  stack: ['megatron-core-precision-aware', 'nemo1-apex-bf16'],
};
// a reference's preset id: the string itself, or {id} / {base} of an object
const presetOf = (ref) => (typeof ref === 'string' ? ref : isObj(ref) ? (ref.id ?? ref.base ?? null) : null);

// the overrides of a reference (a preset id has none; {id, o} or {o}), or an object as it is
const fieldsOf = (ref) => (isObj(ref) ? (isObj(ref.o) ? ref.o : ref) : null);

/** true when the payload's inputs or plan use a key that only format 5 pages know */
function usesV5Inputs(p) {
  if (present(fieldsOf(p.m), V5_KEYS.model) || V5_PRESETS.model.includes(presetOf(p.m))) return true;
  const t = isObj(p.t) ? p.t : {};
  if (present(t, V5_KEYS.training) || (typeof t.precision === 'string' && !V4_PRECISIONS.includes(t.precision))) return true;
  if (present(fieldsOf(t.stack), V5_KEYS.stack) || V5_PRESETS.stack.includes(presetOf(t.stack))) return true;
  if (V5_PRESETS.cluster.includes(presetOf(p.c))) return true;
  const groups = fieldsOf(p.c)?.groups;
  const newDevice = (d) => present(fieldsOf(d), V5_KEYS.device) || V5_PRESETS.device.includes(presetOf(d));
  if (Array.isArray(groups) && groups.some((g) => present(g, V5_KEYS.group) || newDevice(g?.device))) return true;
  for (const devices of [p.d, p.k]) if (isObj(devices) && Object.values(devices).some(newDevice)) return true;
  if (isObj(p.k) && Object.keys(p.k).some((id) => V5_PRESETS.device.includes(id))) return true;
  if (present(p.o, V5_KEYS.options)) return true;
  if (!isObj(p.p)) return false;
  return present(p.p, V5_KEYS.plan) || (Array.isArray(p.p.stages) && p.p.stages.some((s) => present(s, V5_KEYS.stage)));
}

/** search option keys a format-5 page's engine did not know */
export const V6_KEYS = { options: ['cp_sizes', 'ep_sizes', 'etp_sizes'] };

/** model keys a format-6 page's engine did not know */
export const V7_KEYS = { model: ['qk_layernorm'] };

/** the lowest link format that can hold the payload */
export function payloadVersion(payload) {
  if (!payload) return 1;
  if (present(fieldsOf(payload.m), V7_KEYS.model)) return 7;
  if (present(payload.o, V6_KEYS.options)) return 6;
  if (usesV5Inputs(payload)) return 5;
  if (payload.b !== undefined && payload.b !== null) return 4;
  if ((payload.k !== undefined && payload.k !== null) || usesV3Inputs(payload)) return 3;
  return payload.f !== undefined && payload.f !== null ? 2 : 1;
}

/** payload object → fragment string without '#' */
export async function encodeShare(payload) {
  const v = payloadVersion(payload);
  const json = JSON.stringify({ ...payload, v });
  const packed = await pipe(new TextEncoder().encode(json), new CompressionStream('deflate-raw'));
  return `v=${v}&s=${toBase64Url(packed)}`;
}

/** true when the fragment looks like a share link at all (so '#top' anchors are ignored) */
export function isShareFragment(fragment) {
  const f = fragment.replace(/^#/, '');
  return /(^|&)(v|s)=/.test(f);
}

/** fragment string (with or without '#') → payload object; throws ShareLinkError */
export async function decodeShare(fragment) {
  const f = fragment.replace(/^#/, '');
  if (f.length > MAX_FRAGMENT_CHARS) throw new ShareLinkError(`The share link is ${f.length} characters long, more than the ${MAX_FRAGMENT_CHARS} accepted.`);
  const params = new URLSearchParams(f);
  const v = params.get('v');
  if (v === null) throw new ShareLinkError('The share link has no version (v=…); it is incomplete.');
  if (!/^\d+$/.test(v)) throw new ShareLinkError(`The share link's version "${v.slice(0, 20)}" is not one this page reads: formats 1 to ${SHARE_VERSION} (whole numbers).`);
  if (Number(v) > SHARE_VERSION) throw new ShareLinkError(`This link was made by a newer version of Poseidon (link format ${Number(v)}); this page reads format ${SHARE_VERSION}. Open it with the newer planner.`);
  if (Number(v) < 1) throw new ShareLinkError(`The share link's version ${v} is not one Poseidon ever wrote.`);
  const data = params.get('s');
  if (!data) throw new ShareLinkError('The share link carries no data (s=…); it was probably truncated.');
  let bytes;
  try {
    bytes = await pipe(fromBase64Url(data), new DecompressionStream('deflate-raw'), MAX_PAYLOAD_BYTES);
  } catch (e) {
    if (e instanceof ShareLinkError) throw e;
    throw new ShareLinkError('The share link is corrupted or truncated: its data does not decompress.');
  }
  let payload;
  try {
    payload = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    if (e instanceof NonFiniteNumberError) throw new ShareLinkError(`The share link's data holds a number it cannot carry: ${e.message}.`);
    throw new ShareLinkError('The share link is corrupted: its data is not valid JSON.');
  }
  return validatePayload(payload, Number(v));
}

function checkRef(ref, what) {
  if (typeof ref === 'string') return;
  if (!isObj(ref)) throw new ShareLinkError(`The share link's ${what} is neither a preset id nor an object.`);
  if ('id' in ref && ref.id !== null && typeof ref.id !== 'string') throw new ShareLinkError(`The share link's ${what} preset id is not a string.`);
  if ('o' in ref && !isObj(ref.o)) throw new ShareLinkError(`The share link's ${what} overrides are not an object.`);
  if (!('id' in ref) && !('o' in ref)) throw new ShareLinkError(`The share link's ${what} has neither a preset id nor fields.`);
}

/**
 * Structural check of a decoded payload (values themselves are checked by the core). The version is
 * the payload's own `v`, else the fragment's.
 */
export function validatePayload(p, fragmentVersion = 1) {
  if (!isObj(p)) throw new ShareLinkError('The share link does not hold an object.');
  if (typeof p.v === 'number' && p.v > SHARE_VERSION) throw new ShareLinkError(`This link was made by a newer version of Poseidon (link format ${p.v}); this page reads format ${SHARE_VERSION}.`);
  const version = Number.isInteger(p.v) && p.v >= 1 ? p.v : Math.max(1, Math.min(SHARE_VERSION, Number(fragmentVersion) || 1));
  const known = KEYS[version] ?? KEYS[SHARE_VERSION];
  const unknown = Object.keys(p).filter((k) => !known.has(k));
  if (unknown.length) throw new ShareLinkError(`The share link has unknown fields (${unknown.slice(0, 5).join(', ')}); it was edited or made by another version.`);
  if (!('m' in p) || !('c' in p)) throw new ShareLinkError('The share link lacks the model or the cluster.');
  checkRef(p.m, 'model');
  checkRef(p.c, 'cluster');
  if ('d' in p && !isObj(p.d)) throw new ShareLinkError("The share link's custom devices are not an object.");
  for (const [id, dev] of Object.entries(p.d || {})) if (!isObj(dev)) throw new ShareLinkError(`The share link's custom device "${id.slice(0, 40)}" is not an object.`);
  if ('t' in p && !isObj(p.t)) throw new ShareLinkError("The share link's training settings are not an object.");
  if ('o' in p && !isObj(p.o)) throw new ShareLinkError("The share link's search options are not an object.");
  if ('p' in p && p.p !== null && !isObj(p.p)) throw new ShareLinkError("The share link's plan is not an object.");
  // the profile: a profile preset id, or {"o": the profile as pasted} (any JSON value: the core checks it)
  if ('f' in p && p.f !== null && typeof p.f !== 'string') {
    if (!isObj(p.f) || !('o' in p.f) || Object.keys(p.f).some((k) => k !== 'o')) throw new ShareLinkError("The share link's profile is neither a profile preset id nor {\"o\": profile}.");
  }
  // the calibration: {"<device id>": {device keys the calibration set}} (values: the core checks them)
  if ('k' in p && p.k !== null) {
    if (!isObj(p.k)) throw new ShareLinkError("The share link's calibration is not an object.");
    for (const [id, dev] of Object.entries(p.k)) if (!isObj(dev)) throw new ShareLinkError(`The share link's calibration of device "${id.slice(0, 40)}" is not an object.`);
  }
  // time to train and cost: {"t": token budget as typed, "p": {device: USD per GPU-hour}, "i": bill idle GPUs}
  if ('b' in p && p.b !== null) {
    if (!isObj(p.b) || Object.keys(p.b).some((k) => !['t', 'p', 'i'].includes(k))) throw new ShareLinkError("The share link's cost inputs are not {\"t\", \"p\", \"i\"}.");
    if ('t' in p.b && typeof p.b.t !== 'string') throw new ShareLinkError("The share link's token budget is not text.");
    if ('i' in p.b && typeof p.b.i !== 'boolean') throw new ShareLinkError("The share link's idle-GPU setting is not true or false.");
    if ('p' in p.b && (!isObj(p.b.p) || Object.values(p.b.p).some((x) => typeof x !== 'number' || !Number.isFinite(x) || x < 0))) {
      throw new ShareLinkError("The share link's prices are not non-negative numbers per device.");
    }
  }
  return p;
}

/** keys of `obj` whose values differ from `base` (deep, by JSON); removed keys map to null */
export function diff(base, obj) {
  const out = {};
  for (const k of new Set([...Object.keys(base || {}), ...Object.keys(obj || {})])) {
    const a = base?.[k];
    const b = obj?.[k];
    if (JSON.stringify(a) !== JSON.stringify(b)) out[k] = b === undefined ? null : b;
  }
  return out;
}

export function applyDiff(base, overrides) {
  const out = structuredClone(base || {});
  for (const [k, v] of Object.entries(overrides || {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}
