// Poseidon page: inputs, worker management, share links, results. Never calls wasm itself:
// everything that needs the core goes through worker.js.
import { h, clear, $, $$, fmt, fmtInt, fmtPct, fmtTime } from './dom.js';
import { encodeShare, decodeShare, isShareFragment, ShareLinkError, diff, applyDiff, MAX_FRAGMENT_CHARS } from './share.js';
import { modelFromHfConfig, HfConfigError } from './hf.js';
import { planJson, topPlansCsv, chromeTrace, megatronArgs } from './exports.js';
import { stageDiagram } from './render/stages.js';
import { timelineSvg, timelinePng, timelineTable } from './render/timeline.js';
import { topPlansTable, baselinesTable, statsList, stagesTable } from './render/tables.js';
import { memoryBreakdown } from './render/memory.js';
import { CALIBRATION_KEYS, MAX_RUNS_BYTES, RunsInputError, checkRunsText, calibrationFromScenario, calibratedDevice,
  fittedValues, signedPercent } from './calibration.js';
import { PROFILE_PRESET_IDS, MAX_PROFILE_BYTES, ProfileInputError, parseProfileText, clusterDeviceNames, profileDevices,
  profileMatch, hasMeasuredSource } from './profile.js';

// ---------------------------------------------------------------- field descriptions

const MODEL_FIELDS = [
  { key: 'name', kind: 'text', label: 'name' },
  { key: 'num_layers', kind: 'int', label: 'layers' },
  { key: 'hidden_size', kind: 'int', label: 'hidden size' },
  { key: 'num_attention_heads', kind: 'int', label: 'attention heads' },
  { key: 'num_kv_heads', kind: 'int', label: 'KV heads', hint: '= heads' },
  { key: 'ffn_hidden_size', kind: 'int', label: 'FFN hidden size', hint: '4 × hidden' },
  { key: 'vocab_size', kind: 'int', label: 'vocabulary' },
  { key: 'seq_length', kind: 'int', label: 'sequence length' },
  { key: 'position_embedding', kind: 'select', label: 'position embedding', options: ['learned', 'rope'], def: 'learned' },
  { key: 'gated_mlp', kind: 'bool', label: 'gated MLP (SwiGLU)', def: false },
  { key: 'tied_embeddings', kind: 'bool', label: 'tied embeddings', def: false },
  { key: 'bias', kind: 'bool', label: 'biases', def: true },
];
const TRAINING_FIELDS = [
  { key: 'global_batch_size', kind: 'int', label: 'global batch (samples)' },
  { key: 'precision', kind: 'select', label: 'precision', options: ['bf16', 'fp16', 'fp32'], def: 'bf16' },
  { key: 'recompute', kind: 'select', label: 'recompute', options: ['none', 'selective', 'full'], def: 'none' },
  { key: 'sequence_parallel', kind: 'bool', label: 'sequence parallel', def: false },
  { key: 'distributed_optimizer', kind: 'bool', label: 'distributed optimizer', def: false },
  { key: 'flash_attention', kind: 'bool', label: 'flash attention', def: true },
  // omitDefault: unchecked leaves the key out (the core's default), so the scenario and links stay as before
  { key: 'tf32', kind: 'bool', label: 'TF32 matmuls (fp32 precision only)', def: false, omitDefault: true },
];
const CLUSTER_FIELDS = [
  { key: 'name', kind: 'text', label: 'cluster name' },
  { key: 'inter_group_bw_GBps', kind: 'num', label: 'inter-group GB/s per node', hint: 'min of the NICs' },
];
const SEARCH_FIELDS = [
  { key: 'top', kind: 'int', label: 'plans to keep' },
  { key: 'time_limit_s', kind: 'num', label: 'time limit (s)' },
  { key: 'exhaustive', kind: 'bool', label: 'exhaustive', def: false },
  { key: 'tp_per_stage', kind: 'bool', label: 'TP per stage (wider, slower search)', def: false },
];
const DEVICE_SKIP = new Set(['id', 'source', 'notes', 'vendor']);
const DEVICE_SELECTS = { intra_node_link: ['nvlink', 'nvlink_cube_mesh', 'pcie', 'pcie_host', 'infinity_fabric'] };
// a cluster group's links (docs/formats.md, "cluster"): '' = the device's own link type
const INTRA_LINKS = [['nvlink', 'NVLink'], ['nvlink_cube_mesh', 'NVLink hybrid cube-mesh (DGX-1)'], ['pcie', 'PCIe (peer-to-peer)'],
  ['pcie_host', 'PCIe, no peer-to-peer (host-staged)'], ['infinity_fabric', 'Infinity Fabric']];
const INTER_LINKS = [['infiniband', 'InfiniBand (RDMA)'], ['infiniband_host', 'InfiniBand without GPUDirect (host-staged)'],
  ['ethernet', 'Ethernet (NCCL over TCP)']];
const DEFAULT_INTER_LINK = 'infiniband';
const DEFAULT_STACK = 'megatron-core'; // the core's default training.stack

// The default scenario is docs/examples/demo.scenario.json: small enough to plan at once.
const DEFAULT_TRAINING = { global_batch_size: 64, precision: 'bf16', recompute: 'none', sequence_parallel: false, distributed_optimizer: false };
const DEFAULT_OPTIONS = { top: 5, exhaustive: false, time_limit_s: 10, tp_per_stage: false };
const DEFAULT_MODEL = 'gpt3-1.7b';
const DEFAULT_CLUSTER = 'demo-mixed-16';

// ---------------------------------------------------------------- state

const isEmbed = new URLSearchParams(location.search).get('embed') === '1';
if (isEmbed) document.documentElement.classList.add('embed');

const state = {
  presets: { devices: [], models: [], clusters: [], stacks: [] },
  version: '',
  modelPreset: null,
  model: {},
  clusterPreset: null,
  cluster: { name: 'Custom cluster', groups: [] },
  devices: {}, // custom devices by id
  training: { ...DEFAULT_TRAINING },
  options: { ...DEFAULT_OPTIONS },
  // measured profile: null, {preset: id} or {value: any JSON, label: where it came from}
  profile: null,
  profilePresets: [], // [{id, content|null}]: content fetched from presets/profiles/<id>.json
  // calibrated devices: null or {devices: {<device id used by groups>: {fitted keys, calibration}}}
  calibration: null,
  calibrationRun: null, // the last calibrate result shown in the panel: {report, calibration: {devices, inline}}
  result: null, // {plans, baselines, stats, profiled}
  selected: 0,
  running: false,
  lastProgress: null,
  lastScenario: null,
};
// milliseconds since navigation start (performance.now()), read by the tests and the benchmark
const perf = { scriptMs: performance.now(), firstBestMs: null, readyMs: null };
window.__poseidon = perf;

const byId = (list, id) => list.find((x) => x.id === id);
const presetModel = () => byId(state.presets.models, state.modelPreset);
const presetCluster = () => byId(state.presets.clusters, state.clusterPreset);
const isEmpty = (o) => Object.keys(o).length === 0;

// ---------------------------------------------------------------- worker

let worker = null;
let ready = null;
let compiledModule = null;
let seq = 0;
const pending = new Map(); // id → {resolve, reject, onProgress}

function spawnWorker() {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  ready = new Promise((resolve, reject) => {
    worker.onmessage = (ev) => {
      const msg = ev.data;
      if (msg.type === 'ready') {
        if (msg.module) compiledModule = msg.module;
        resolve(msg);
        return;
      }
      const p = pending.get(msg.id);
      if (msg.type === 'progress') {
        p?.onProgress?.(msg.progress);
      } else if (msg.type === 'result') {
        pending.delete(msg.id);
        p?.resolve(msg.result);
      } else if (msg.type === 'fatal') {
        console.error('planner engine failure:', msg.error.stack || msg.error.message);
        if (!p) { reject(new Error(msg.error.message)); return; }
        pending.delete(msg.id);
        p.reject(new Error(msg.error.message));
      }
    };
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      const err = new Error(`The planner engine failed to load: ${ev.message || 'worker error'}`);
      reject(err);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
  });
  worker.postMessage({ type: 'init', module: compiledModule });
  return ready;
}

async function call(msg, onProgress) {
  await ready;
  const id = ++seq;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ ...msg, id });
  });
}

function restartWorker() {
  worker?.terminate();
  const err = new Error('cancelled');
  err.cancelled = true;
  for (const p of pending.values()) p.reject(err);
  pending.clear();
  return spawnWorker();
}

// ---------------------------------------------------------------- scenario

function cleanObject(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

function modelForScenario() {
  const p = presetModel();
  if (p && isEmpty(diff(p, state.model))) return state.modelPreset;
  return cleanObject(state.model);
}

/** the calibration's overrides for a device reference, or null */
function calibrationOf(ref) {
  const o = typeof ref === 'string' ? state.calibration?.devices?.[ref] : null;
  return o && typeof o === 'object' && !isEmpty(o) ? o : null;
}

function clusterForScenario() {
  const p = presetCluster();
  const calibrated = (state.cluster.groups || []).some((g) => calibrationOf(g.device));
  if (p && !calibrated && isEmpty(diff(p, state.cluster))) return state.clusterPreset;
  const c = cleanObject(state.cluster);
  c.groups = (state.cluster.groups || []).map((g) => {
    const out = cleanObject(g);
    const custom = typeof g.device === 'string' && state.devices[g.device] ? cleanObject(state.devices[g.device]) : null;
    if (custom) out.device = custom;
    // a calibrated device: the preset as {"base": id, ...fitted values}, a custom one with them merged in
    const cal = calibratedDevice(g.device, calibrationOf(g.device), custom);
    if (cal) out.device = cal;
    return out;
  });
  return c;
}

function scenario() {
  const sc = { model: modelForScenario(), training: cleanObject(state.training), cluster: clusterForScenario() };
  if (state.profile) sc.profile = state.profile.preset ?? state.profile.value;
  return sc;
}

function searchOptions() {
  return cleanObject(state.options);
}

// ---------------------------------------------------------------- forms

function parseValue(kind, raw) {
  if (kind === 'bool') return raw;
  const t = String(raw).trim();
  if (t === '') return undefined;
  if (kind === 'int' || kind === 'num') {
    // numbers go to the core as numbers; anything else goes as the text, so the core's message names it
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : t;
  }
  return t;
}

/** One labelled input bound to obj[key]; path is the scenario JSON path used for error messages. */
function fieldInput(field, getObj, path, onChange) {
  const obj = getObj();
  const id = `f-${path.replace(/[^a-zA-Z0-9]+/g, '-')}`;
  const errId = `${id}-err`;
  let input;
  const commit = (value) => {
    const o = getObj();
    if (value === undefined || (field.omitDefault && value === field.def)) delete o[field.key];
    else o[field.key] = value;
    onChange();
  };
  if (field.kind === 'bool') {
    input = h('input', { type: 'checkbox', id });
    input.checked = obj[field.key] ?? field.def ?? false;
    input.addEventListener('change', () => commit(input.checked));
  } else if (field.kind === 'select') {
    input = h('select', { id }, field.options.map((o) => h('option', { value: o }, o)));
    input.value = obj[field.key] ?? field.def;
    input.addEventListener('change', () => commit(input.value));
  } else {
    input = h('input', { type: 'text', id, inputmode: field.kind === 'int' ? 'numeric' : field.kind === 'num' ? 'decimal' : null,
      autocomplete: 'off', spellcheck: 'false', placeholder: field.hint ?? '' });
    input.value = obj[field.key] === undefined ? '' : String(obj[field.key]);
    input.addEventListener('input', () => commit(parseValue(field.kind, input.value)));
  }
  input.dataset.path = path;
  input.setAttribute('aria-describedby', errId);
  const err = h('span', { class: 'field-error', id: errId, 'data-error-for': path });
  if (field.kind === 'bool') return h('div', { class: 'field check' }, input, h('label', { for: id }, field.label), err);
  return h('div', { class: 'field' }, h('label', { for: id }, field.label), input, err);
}

function renderFields(container, fields, getObj, prefix, onChange) {
  clear(container);
  for (const f of fields) container.append(fieldInput(f, getObj, `${prefix}.${f.key}`, onChange));
}

function presetOptions(select, list, selected, customLabel) {
  clear(select);
  select.append(h('option', { value: '' }, customLabel));
  for (const p of list) select.append(h('option', { value: p.id }, `${p.name ?? p.id} (${p.id})`));
  select.value = selected ?? '';
}

function markModified() {
  const mm = presetModel();
  const mo = $('#model-preset').options[$('#model-preset').selectedIndex];
  if (mo && mm) mo.textContent = `${mm.name ?? mm.id} (${mm.id})${isEmpty(diff(mm, state.model)) ? '' : ' — modified'}`;
  const cc = presetCluster();
  const co = $('#cluster-preset').options[$('#cluster-preset').selectedIndex];
  if (co && cc) co.textContent = `${cc.name ?? cc.id} (${cc.id})${isEmpty(diff(cc, state.cluster)) ? '' : ' — modified'}`;
}

function onInputChanged() {
  markModified();
  renderProfileForm();
  renderTf32Note();
  renderCalibrationStatus();
  scheduleValidate();
}

function renderModelForm() {
  presetOptions($('#model-preset'), state.presets.models, state.modelPreset, 'Custom model');
  renderFields($('#model-fields'), MODEL_FIELDS, () => state.model, 'model', onInputChanged);
  markModified();
}

function deviceChoices() {
  return [
    ...state.presets.devices.map((d) => ({ id: d.id, label: `${d.name ?? d.id}` })),
    ...Object.entries(state.devices).map(([id, d]) => ({ id, label: `${d.name ?? id} (custom)` })),
  ];
}

function renderClusterForm() {
  presetOptions($('#cluster-preset'), state.presets.clusters, state.clusterPreset, 'Custom cluster');
  const body = clear($('#groups'));
  const groups = state.cluster.groups || [];
  groups.forEach((g, i) => {
    const path = `cluster.groups[${i}]`;
    const devId = `f-group-${i}-device`;
    const sel = h('select', { id: devId, 'aria-label': `group ${i} device`, 'aria-describedby': `${devId}-err` });
    const choices = deviceChoices();
    const current = typeof g.device === 'string' ? g.device : null;
    for (const c of choices) sel.append(h('option', { value: c.id }, c.label));
    if (current && !choices.some((c) => c.id === current)) sel.append(h('option', { value: current }, `${current} (unknown)`));
    if (!current) sel.append(h('option', { value: '' }, 'inline device'));
    sel.value = current ?? '';
    sel.dataset.path = `${path}.device`;
    const links = groupLinkSelects(g, i);
    sel.addEventListener('change', () => { g.device = sel.value; links.update(); onInputChanged(); });
    const cell = (field) => {
      const wrap = fieldInput(field, () => g, `${path}.${field.key}`, onInputChanged);
      wrap.querySelector('label').classList.add('sr-only');
      wrap.querySelector('label').textContent = `group ${i} ${field.label}`;
      return h('td', {}, wrap);
    };
    const remove = h('button', { type: 'button', 'aria-label': `remove group ${i}`, disabled: groups.length <= 1 }, '×');
    remove.addEventListener('click', () => { groups.splice(i, 1); renderClusterForm(); onInputChanged(); });
    body.append(h('tr', {},
      h('td', {}, sel, h('span', { class: 'field-error', id: `${devId}-err`, 'data-error-for': `${path}.device` })),
      cell({ key: 'nodes', kind: 'int', label: 'nodes' }),
      cell({ key: 'gpus_per_node', kind: 'int', label: 'GPUs per node' }),
      cell({ key: 'inter_node_bw_GBps', kind: 'num', label: 'NIC GB/s per node' }),
      h('td', {}, remove)));
    body.append(h('tr', { class: 'group-links' }, h('td', { colspan: 5 }, links.row)));
  });
  renderFields($('#cluster-fields'), CLUSTER_FIELDS, () => state.cluster, 'cluster', onInputChanged);
  renderCustomDevices();
  markModified();
}

const linkLabel = (list, v) => list.find(([k]) => k === v)?.[1] ?? v;

/** the link type a group's device brings (preset, custom or inline device), or null */
function groupDeviceLink(g) {
  const d = typeof g.device === 'string' ? (state.devices[g.device] ?? byId(state.presets.devices, g.device)) : g.device;
  return typeof d?.intra_node_link === 'string' ? d.intra_node_link : null;
}

/**
 * The group's link selects: intra-node link ('' = the device's) and inter-node link (InfiniBand by
 * default). Choosing a default removes the key, so an unchanged preset cluster stays the preset.
 */
function groupLinkSelects(g, i) {
  const path = `cluster.groups[${i}]`;
  const make = (key, label, options, value) => {
    const id = `f-group-${i}-${key}`;
    const sel = h('select', { id, 'aria-describedby': `${id}-err` }, options.map(([v, t]) => h('option', { value: v }, t)));
    if (!options.some(([v]) => v === value)) sel.append(h('option', { value }, `${value} (unknown)`));
    sel.value = value;
    sel.dataset.path = `${path}.${key}`;
    const wrap = h('div', { class: 'field' }, h('label', { for: id }, h('span', { class: 'sr-only' }, `group ${i}: `), label), sel,
      h('span', { class: 'field-error', id: `${id}-err`, 'data-error-for': `${path}.${key}` }));
    return { sel, wrap };
  };
  const devLink = () => groupDeviceLink(g);
  const intraDefault = () => `the device's: ${devLink() ? linkLabel(INTRA_LINKS, devLink()) : 'unknown'}`;
  const intra = make('intra_node_link', 'link within a node', [['', intraDefault()], ...INTRA_LINKS], g.intra_node_link ?? '');
  const inter = make('inter_node_link', 'link between nodes', INTER_LINKS, g.inter_node_link ?? DEFAULT_INTER_LINK);
  intra.sel.addEventListener('change', () => {
    if (intra.sel.value === '') delete g.intra_node_link;
    else g.intra_node_link = intra.sel.value;
    onInputChanged();
  });
  inter.sel.addEventListener('change', () => {
    const inPreset = presetCluster()?.groups?.[i]?.inter_node_link !== undefined;
    if (inter.sel.value === DEFAULT_INTER_LINK && !inPreset) delete g.inter_node_link;
    else g.inter_node_link = inter.sel.value;
    onInputChanged();
  });
  return {
    row: h('div', { class: 'fields links' }, intra.wrap, inter.wrap),
    update: () => { intra.sel.options[0].textContent = intraDefault(); },
  };
}

function renderCustomDevices() {
  const box = clear($('#custom-devices'));
  for (const [id, dev] of Object.entries(state.devices)) {
    const fields = Object.keys(dev).filter((k) => !DEVICE_SKIP.has(k) && (dev[k] === null || typeof dev[k] !== 'object')).map((k) => (
      k === 'name' ? { key: k, kind: 'text', label: 'name' }
        : DEVICE_SELECTS[k] ? { key: k, kind: 'select', label: k, options: DEVICE_SELECTS[k] }
          : typeof dev[k] === 'boolean' ? { key: k, kind: 'bool', label: k } : { key: k, kind: 'num', label: k }));
    const grid = h('div', { class: 'fields' });
    renderFields(grid, fields, () => state.devices[id], `devices.${id}`, () => { onInputChanged(); });
    const remove = h('button', { type: 'button' }, `Remove ${id}`);
    remove.addEventListener('click', () => {
      delete state.devices[id];
      for (const g of state.cluster.groups) if (g.device === id) g.device = state.presets.devices[0]?.id ?? '';
      renderClusterForm();
      onInputChanged();
    });
    box.append(h('div', { class: 'custom-device' }, h('strong', {}, id), grid, remove));
  }
  const base = $('#device-base');
  clear(base);
  for (const d of state.presets.devices) base.append(h('option', { value: d.id }, d.name ?? d.id));
}

// ---------------------------------------------------------------- software stack, TF32

const stackPreset = (id) => byId(state.presets.stacks || [], id);

/** one line from a stack's physical settings (presets/stacks/*.json, docs/model.md) */
function stackSummary(st) {
  const parts = [];
  if (typeof st.fused_elementwise === 'boolean') parts.push(st.fused_elementwise ? 'fused element-wise kernels' : 'unfused element-wise kernels (memory-bound)');
  if (typeof st.p2p_blocking === 'boolean') parts.push(st.p2p_blocking ? 'blocking pipeline sends' : 'asynchronous pipeline sends');
  if (typeof st.grad_fp32 === 'boolean') parts.push(st.grad_fp32 ? 'fp32 gradients' : 'half-precision gradients');
  if (Number.isFinite(st.pass_overhead_us)) parts.push(`${fmt(st.pass_overhead_us, 0)} µs host time per micro-batch pass`);
  if (Number.isFinite(st.allocator_reserve_fraction)) parts.push(`allocator reserve ${fmtPct(st.allocator_reserve_fraction)}`);
  return parts.join(' · ');
}

function renderStackDescription(value) {
  const box = clear($('#stack-desc'));
  const st = typeof value === 'string' ? stackPreset(value) : null;
  if (value && typeof value === 'object') {
    const base = typeof value.base === 'string' ? stackPreset(value.base) : null;
    box.append(h('p', { class: 'muted' }, base
      ? `Based on “${base.name ?? base.id}”, with ${Object.keys(value).filter((k) => k !== 'base').join(', ') || 'no changes'} changed.`
      : `A stack written out in full${typeof value.name === 'string' ? `: “${value.name}”` : ''}.`));
    return;
  }
  if (!st) {
    box.append(h('p', { class: 'muted' }, `This version of the planner has no stack preset “${String(value)}”.`));
    return;
  }
  box.append(h('p', { class: 'muted stack-summary' }, stackSummary(st)));
  if (st.notes || st.source) {
    box.append(h('details', { class: 'stack-notes' }, h('summary', {}, 'What this stack assumes'),
      st.notes ? h('p', {}, String(st.notes)) : null,
      st.source ? h('p', { class: 'muted' }, `Sources: ${String(st.source)}`) : null));
  }
}

/** "Software stack": the core's stack presets; an object stack (from a link) shows as "custom" */
function renderStackField() {
  const box = clear($('#stack-field'));
  const stacks = state.presets.stacks || [];
  if (!stacks.length) return; // an engine without stacks: the field would only produce errors
  const cur = state.training.stack;
  const id = 'f-training-stack';
  const sel = h('select', { id, 'aria-describedby': `${id}-err` },
    stacks.map((st) => h('option', { value: st.id }, `${st.name ?? st.id}${st.id === DEFAULT_STACK ? ' (default)' : ''}`)));
  let value = cur ?? DEFAULT_STACK;
  if (cur && typeof cur === 'object') {
    value = '';
    sel.append(h('option', { value: '' }, typeof cur.base === 'string' ? `custom, based on ${cur.base}` : 'custom stack (from the link)'));
  } else if (!stackPreset(value)) {
    sel.append(h('option', { value }, `${value} (unknown)`));
  }
  sel.value = value;
  sel.dataset.path = 'training.stack';
  sel.addEventListener('change', () => {
    if (sel.value === '') return; // the custom stack stays as it is until a preset is chosen
    state.training.stack = sel.value;
    renderStackDescription(sel.value);
    onInputChanged();
  });
  box.append(h('div', { class: 'field' }, h('label', { for: id }, 'Software stack (training framework)'), sel,
    h('span', { class: 'field-error', id: `${id}-err`, 'data-error-for': 'training.stack' })),
  h('div', { id: 'stack-desc', 'aria-live': 'polite' }));
  renderStackDescription(cur ?? DEFAULT_STACK);
}

/** TF32 only changes fp32 matmuls: say so next to the checkbox */
function renderTf32Note() {
  const note = $('#tf32-note');
  if (!note) return;
  const fp32 = state.training.precision === 'fp32';
  note.textContent = fp32
    ? (state.training.tf32
      ? 'TF32 on: fp32 matmuls run at the device\'s TF32 tensor-core rate where it has one (A100 and later); V100, T4 and other cards without TF32 stay at their fp32 rate.'
      : 'TF32 off (PyTorch\'s default for matmuls): fp32 matmuls run at the device\'s fp32 rate, often 1/8 to 1/16 of its tensor-core peak.')
    : `TF32 only matters with precision fp32; with ${state.training.precision ?? 'bf16'} the matmuls already run on tensor cores${state.training.tf32 ? ', so this checkbox changes nothing' : ''}.`;
}

function renderSimpleForms() {
  renderFields($('#training-fields'), TRAINING_FIELDS, () => state.training, 'training', onInputChanged);
  renderStackField();
  renderTf32Note();
  renderFields($('#search-fields'), SEARCH_FIELDS, () => state.options, 'options', () => {});
}

function renderAllForms() {
  renderModelForm();
  renderClusterForm();
  renderSimpleForms();
  renderProfileForm();
  renderCalibrationStatus();
  renderCalibrationReport();
}

function setModelPreset(id) {
  const p = byId(state.presets.models, id);
  state.modelPreset = p ? id : null;
  if (p) state.model = structuredClone(p);
  renderModelForm();
  onInputChanged();
}

function setClusterPreset(id) {
  const p = byId(state.presets.clusters, id);
  state.clusterPreset = p ? id : null;
  if (p) state.cluster = structuredClone(p);
  renderClusterForm();
  onInputChanged();
}

// ---------------------------------------------------------------- measured profile

let profileSelectTouched = false;
const profilePreset = (id) => state.profilePresets.find((p) => p.id === id) ?? null;

/** the attached profile's contents when the page knows them (a preset's are fetched from the site) */
function attachedProfileContent() {
  if (!state.profile) return null;
  if (state.profile.preset) return profilePreset(state.profile.preset)?.content ?? null;
  return state.profile.value;
}

const deviceNames = () => clusterDeviceNames(state.cluster, state.presets.devices, state.devices);

function presetMatches() {
  const names = deviceNames();
  return state.profilePresets.map((p) => ({ ...p, match: profileMatch(p.content, { id: p.id, modelPreset: state.modelPreset, deviceNames: names }) }));
}

/** the preset list (matching presets marked), the attached profile's status, the buttons */
function renderProfileForm() {
  const sel = $('#profile-preset');
  const list = presetMatches();
  const full = list.find((p) => p.match.full);
  const valid = (id) => list.some((p) => p.id === id);
  const pick = state.profile?.preset ?? ((profileSelectTouched && valid(sel.value)) ? sel.value : full?.id ?? (valid(sel.value) ? sel.value : list[0]?.id ?? ''));
  clear(sel);
  if (!list.length) sel.append(h('option', { value: '' }, 'no profile presets'));
  for (const p of list) {
    const tag = p.match.full ? ' — matches this model and cluster' : p.match.devices.length ? ' — its devices are in this cluster' : '';
    sel.append(h('option', { value: p.id }, `${p.content?.name ?? p.id}${tag}`));
  }
  sel.value = pick;
  $('#profile-use-preset').disabled = !list.length;
  $('#profile-remove').disabled = !state.profile;
  const status = $('#profile-status');
  const hint = $('#profile-hint');
  status.classList.toggle('attached', Boolean(state.profile));
  if (!state.profile) {
    status.textContent = 'No profile: every time comes from the analytic model.';
    hint.textContent = full ? `The preset “${full.content?.name ?? full.id}” matches this model and cluster: attach it to use its measured times.` : '';
    return;
  }
  const content = attachedProfileContent();
  const name = typeof content?.name === 'string' ? content.name : null;
  const what = state.profile.preset ? `preset “${name ?? state.profile.preset}” (${state.profile.preset})` : `${state.profile.label}${name ? ` “${name}”` : ''}`;
  const devs = profileDevices(content);
  const names = deviceNames();
  const used = devs.filter((d) => names.has(d));
  const applies = !devs.length ? ''
    : used.length ? ` It has measurements for ${used.join(', ')} in this cluster.`
      : ` None of its devices (${devs.join(', ')}) is in this cluster, so every time stays analytic.`;
  status.textContent = `Attached: ${what}.${applies}`;
  hint.textContent = 'The stage table of a result says, per stage, which numbers are measured, interpolated or analytic.';
}

function profileFieldError(message) {
  $('#profile-json').setAttribute('aria-invalid', 'true');
  $('#profile-json-err').textContent = message;
  $('#profile-paste').open = true;
}

function attachProfile(profile) {
  state.profile = profile;
  $('#profile-json').removeAttribute('aria-invalid');
  $('#profile-json-err').textContent = '';
  renderProfileForm();
  onInputChanged();
}

function attachPresetProfile() {
  const id = $('#profile-preset').value;
  if (!id) return;
  const content = profilePreset(id)?.content;
  if (content) $('#profile-json').value = `${JSON.stringify(content, null, 2)}\n`;
  attachProfile({ preset: id });
}

/** Attaches pasted/uploaded text. Only JSON syntax is checked here; the core checks the rest (shown next to the field). */
function attachProfileText(text, label) {
  let value;
  try {
    value = parseProfileText(text);
  } catch (e) {
    if (!(e instanceof ProfileInputError)) throw e;
    profileFieldError(e.message);
    showError(e.message);
    return false;
  }
  attachProfile({ value, label });
  return true;
}

function removeProfile() {
  state.profile = null;
  $('#profile-json').removeAttribute('aria-invalid');
  $('#profile-json-err').textContent = '';
  renderProfileForm();
  onInputChanged();
}

async function loadProfileFile(file) {
  if (file.size > MAX_PROFILE_BYTES) {
    const msg = `${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a profile is at most 4 MiB.`;
    profileFieldError(msg);
    showError(msg);
    return;
  }
  const text = await file.text();
  $('#profile-json').value = text;
  attachProfileText(text, `file ${file.name}`);
}

/** Profile presets: from the core's presets() if it ever lists them, else the site's presets/profiles/<id>.json. */
async function loadProfilePresets(fromCore) {
  if (Array.isArray(fromCore)) {
    state.profilePresets = fromCore.filter((p) => typeof p?.id === 'string').map((p) => ({ id: p.id, content: p }));
    return;
  }
  state.profilePresets = PROFILE_PRESET_IDS.map((id) => ({ id, content: null }));
  await Promise.all(state.profilePresets.map(async (p) => {
    try {
      const res = await fetch(new URL(`presets/profiles/${encodeURIComponent(p.id)}.json`, import.meta.url));
      if (res.ok) p.content = await res.json();
    } catch {
      // offline without a cached copy: the preset is still attached by id (the core has it built in)
    }
  }));
}

// ---------------------------------------------------------------- calibration (docs/calibration.md)

const deviceOf = (ref) => (typeof ref === 'string' ? state.devices[ref] ?? byId(state.presets.devices, ref) ?? null : null);

/** the calibrated devices in force, with their fitted values, and a button to remove them */
function renderCalibrationStatus() {
  const status = $('#calibration-status');
  if (!status) return;
  const cal = state.calibration?.devices ?? {};
  const ids = Object.keys(cal);
  $('#calibration-remove').disabled = !ids.length;
  status.classList.toggle('attached', ids.length > 0);
  clear(status);
  if (!ids.length) {
    status.textContent = 'No calibration: every device uses its preset values.';
    return;
  }
  const used = new Set((state.cluster.groups || []).map((g) => g.device).filter((d) => typeof d === 'string'));
  status.append(`Calibrated device${ids.length === 1 ? '' : 's'} (estimates and searches use these values):`,
    h('ul', { class: 'calibrated' }, ids.map((id) => {
      const values = fittedValues(cal[id]).map((v) => `${v.key} ${v.from === undefined ? '' : `${fmt(v.from, 4)} → `}${fmt(v.to, 4)}`);
      return h('li', { 'data-device': id }, h('strong', {}, deviceOf(id)?.name ?? id), ` (${id}): ${values.join(', ') || 'no fitted value'}`,
        used.has(id) ? '' : h('span', { class: 'muted' }, ' — not in this cluster, so unused'));
    })));
}

function runsFieldError(message) {
  $('#runs-json').setAttribute('aria-invalid', 'true');
  $('#runs-json-err').textContent = message;
  $('#calibrate-paste').open = true;
}

function clearRunsError() {
  $('#runs-json').removeAttribute('aria-invalid');
  $('#runs-json-err').textContent = '';
}

/** an {error} from calibrate: problems in the runs next to the runs field, scenario problems next to their fields */
function showCalibrationError(error) {
  const problems = problemsOf(error);
  const inRuns = (p) => p.path === 'runs' || p.path.startsWith('runs.') || p.path.startsWith('runs[');
  const runs = problems.filter(inRuns);
  const others = problems.filter((p) => !inRuns(p));
  if (runs.length) runsFieldError(runs.map((p) => { const rel = p.path.replace(/^runs\.?/, ''); return rel ? `${rel}: ${p.message}` : p.message; }).join('; '));
  if (others.length) { clearFieldErrors(); markFieldErrors(others); }
  showError(`The calibration failed:\n${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('\n')}`);
}

let calibrating = false;
async function runCalibration() {
  if (calibrating) return;
  clearRunsError();
  let runs;
  try {
    runs = checkRunsText($('#runs-json').value);
  } catch (e) {
    if (!(e instanceof RunsInputError)) throw e;
    runsFieldError(e.message);
    return;
  }
  const sc = scenario();
  // which device each group used: the fitted values come back per group, and are kept per device
  const refs = (state.cluster.groups || []).map((g) => (typeof g.device === 'string' ? g.device : null));
  const progress = $('#calibrate-progress');
  calibrating = true;
  $('#calibrate-run').disabled = true;
  progress.textContent = 'Calibrating…';
  let res;
  try {
    res = await call({ type: 'calibrate', scenario: sc, runs });
  } catch (e) {
    progress.textContent = e.cancelled ? 'Calibration cancelled.' : `The planner engine failed while calibrating: ${e.message}.`;
    if (!e.cancelled) restartWorker();
    return;
  } finally {
    calibrating = false;
    $('#calibrate-run').disabled = false;
  }
  if (res?.error) {
    progress.textContent = 'The calibration failed: see the messages next to the runs.';
    showCalibrationError(res.error);
    return;
  }
  let calibration;
  try {
    calibration = calibrationFromScenario(refs, res.scenario, (id) => state.devices[id] ?? byId(state.presets.devices, id));
  } catch (e) {
    if (!(e instanceof RunsInputError)) throw e;
    progress.textContent = e.message;
    return;
  }
  if ($('#error').dataset.kind !== 'link') $('#error').hidden = true;
  state.calibrationRun = { report: res.report, calibration };
  progress.textContent = '';
  renderCalibrationReport();
}

const PARAM_ORDER = (k) => { const i = CALIBRATION_KEYS.indexOf(k); return i < 0 ? CALIBRATION_KEYS.length : i; };

/** the fit: fitted values, what was not fitted and why, each run's error before and after */
function renderCalibrationReport() {
  const box = clear($('#calibration-report'));
  const run = state.calibrationRun;
  if (!run) return;
  const r = run.report || {};
  const runs = Array.isArray(r.runs) ? r.runs : [];
  const memory = Number.isFinite(r.memory_rms_log_error_before)
    ? ` Peak memory: ${fmt(r.memory_rms_log_error_before, 4)} before, ${fmt(r.memory_rms_log_error_after, 4)} after.` : '';
  box.append(h('p', { class: 'calib-summary' }, `Fitted on ${runs.length} run${runs.length === 1 ? '' : 's'}: RMS log error of the iteration time ${fmt(r.rms_log_error_before, 4)} before, ${fmt(r.rms_log_error_after, 4)} after${r.converged === false ? ' (the fit did not converge)' : ''}.${memory}`));
  const fitted = [];
  const notFitted = [];
  for (const d of r.devices || []) {
    for (const [key, p] of Object.entries(d.parameters || {}).sort(([a], [b]) => PARAM_ORDER(a) - PARAM_ORDER(b))) {
      (p.status === 'fitted' ? fitted : notFitted).push({ device: String(d.device), key, p });
    }
  }
  box.append(h('div', { class: 'scroll-x' }, h('table', { class: 'data calib', 'data-testid': 'calibration-fitted' },
    h('caption', {}, 'Fitted values'),
    h('thead', {}, h('tr', {}, ['device: parameter', 'before', 'after'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, fitted.length ? fitted.map(({ device, key, p }) => h('tr', { 'data-device': device, 'data-parameter': key },
      h('th', { scope: 'row' }, h('span', { class: 'muted' }, `${device}: `), h('wbr'), key), h('td', {}, fmt(p.from, 4)),
      h('td', { class: 'to' }, `${fmt(p.to, 6)}${p.at_bound ? ' (at its bound)' : ''}`)))
      : h('tr', {}, h('td', { colspan: 3 }, 'No parameter was fitted.'))))));
  if (notFitted.length) {
    box.append(h('details', { class: 'calib-notfitted' }, h('summary', {}, `Not fitted (${notFitted.length}): kept as they were`),
      h('ul', {}, notFitted.map(({ device, key, p }) => h('li', {}, h('strong', {}, `${device} ${key}`), ` ${fmt(p.from, 4)}: ${p.reason ?? p.status}`)))));
  }
  const err = (x) => h('span', { class: `err${Math.abs(x) > 0.1 ? ' big' : ''}` }, signedPercent(x));
  box.append(h('div', { class: 'scroll-x' }, h('table', { class: 'data calib', 'data-testid': 'calibration-runs' },
    h('caption', {}, 'Iteration time per run: measured, and predicted before and after the fit (error = predicted / measured − 1)'),
    h('thead', {}, h('tr', {}, ['run', 'measured', 'before', 'after'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, runs.map((x) => h('tr', {},
      h('th', { scope: 'row' }, String(x.name ?? '')),
      h('td', {}, fmtTime(x.measured_s)),
      h('td', { 'data-error': String(x.error_before) }, fmtTime(x.predicted_before_s), ' ', err(x.error_before)),
      h('td', { 'data-error': String(x.error_after) }, fmtTime(x.predicted_after_s), ' ', err(x.error_after))))))));
  const mem = runs.filter((x) => Number.isFinite(x.peak_memory_GiB));
  if (mem.length) {
    box.append(h('div', { class: 'scroll-x' }, h('table', { class: 'data calib', 'data-testid': 'calibration-memory' },
      h('caption', {}, 'Peak memory per run, GiB'),
      h('thead', {}, h('tr', {}, ['run', 'measured', 'before', 'after'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, mem.map((x) => h('tr', {},
        h('th', { scope: 'row' }, String(x.name ?? '')),
        h('td', {}, fmt(x.peak_memory_GiB, 2)),
        h('td', {}, fmt(x.predicted_memory_before_GiB, 2), ' ', err(x.memory_error_before)),
        h('td', {}, fmt(x.predicted_memory_after_GiB, 2), ' ', err(x.memory_error_after))))))));
  }
  if (Array.isArray(r.warnings) && r.warnings.length) {
    box.append(h('ul', { class: 'calib-warnings' }, r.warnings.map((w) => h('li', {}, String(w)))));
  }
  const apply = h('button', { type: 'button', id: 'calibrate-apply', class: 'primary', 'data-testid': 'calibrate-apply',
    disabled: isEmpty(run.calibration.devices) && isEmpty(run.calibration.inline) }, 'Plan with the calibrated scenario');
  apply.addEventListener('click', applyCalibration);
  box.append(h('div', { class: 'profile-row' }, apply));
}

/** "Plan with the calibrated scenario": the devices become the calibrated ones, then a search */
async function applyCalibration() {
  const run = state.calibrationRun;
  if (!run) return;
  state.calibration = isEmpty(run.calibration.devices) ? null : { devices: structuredClone(run.calibration.devices) };
  for (const [i, dev] of Object.entries(run.calibration.inline)) {
    const g = state.cluster.groups[Number(i)];
    // an inline device (part of the cluster) is replaced whole, if the group still has it
    if (g && g.device && typeof g.device === 'object' && g.device.name === dev.name) g.device = structuredClone(dev);
  }
  $('#calibrate-progress').textContent = 'The calibrated devices are in use: searching…';
  onInputChanged();
  if (state.running) cancelSearch();
  await runSearch();
  $('#calibrate-progress').textContent = '';
}

function removeCalibration() {
  state.calibration = null;
  onInputChanged();
}

async function loadRunsFile(file) {
  if (file.size > MAX_RUNS_BYTES) {
    runsFieldError(`${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a runs file is at most 4 MiB.`);
    return;
  }
  $('#runs-json').value = await file.text();
  $('#calibrate-paste').open = true;
  await runCalibration();
}

// ---------------------------------------------------------------- errors

function showError(message) {
  const el = $('#error');
  el.textContent = message;
  el.hidden = false;
}

function clearErrors() {
  const el = $('#error');
  el.textContent = '';
  el.hidden = true;
  clearFieldErrors();
}

function clearFieldErrors() {
  // the runs field is not part of the scenario: its message stays until the next calibration
  for (const e of $$('.field-error:not(#runs-json-err)')) e.textContent = '';
  for (const i of $$('[aria-invalid="true"]:not(#runs-json)')) i.removeAttribute('aria-invalid');
}

function normalisePath(path) {
  return String(path ?? '').replace(/^\$\.?/, '').replace(/^scenario\./, '');
}

/** core error path → the input that shows it (exact, custom device, or the nearest enclosing field) */
function inputForPath(path) {
  const p = normalisePath(path);
  const exact = $$('[data-path]').find((el) => el.dataset.path === p);
  if (exact) return exact;
  const dev = /^cluster\.groups\[(\d+)\]\.device\.(.+)$/.exec(p);
  if (dev) {
    const g = state.cluster.groups[Number(dev[1])];
    const byDev = $$('[data-path]').find((el) => el.dataset.path === `devices.${g?.device}.${dev[2]}`);
    if (byDev) { $('#devices').open = true; return byDev; }
    return $$('[data-path]').find((el) => el.dataset.path === `cluster.groups[${dev[1]}].device`);
  }
  let best = null;
  for (const el of $$('[data-path]')) {
    const q = el.dataset.path;
    if ((p.startsWith(`${q}.`) || p.startsWith(`${q}[`)) && (!best || q.length > best.dataset.path.length)) best = el;
  }
  if (best) return best;
  return $$('[data-path]').find((el) => el.dataset.path.startsWith(`${p}.`) || el.dataset.path.startsWith(`${p}[`)) ?? null;
}

function problemsOf(error) {
  const list = Array.isArray(error?.problems) && error.problems.length ? error.problems : [error];
  return list.filter(Boolean).map((x) => ({ path: normalisePath(x.path), message: String(x.message ?? '') }));
}

function markFieldErrors(problems) {
  let first = null;
  for (const pr of problems) {
    const input = inputForPath(pr.path);
    if (!input) continue;
    input.setAttribute('aria-invalid', 'true');
    const details = input.closest('details');
    if (details) details.open = true;
    // a problem inside the field's value (e.g. profile.devices[0].points[2].tp) names the part
    const base = input.dataset.path;
    const rel = pr.path.length > base.length && pr.path.startsWith(base) && /^[.[]/.test(pr.path.slice(base.length))
      ? pr.path.slice(base.length).replace(/^\./, '') : '';
    const message = rel ? `${rel}: ${pr.message}` : pr.message;
    const err = document.getElementById(input.getAttribute('aria-describedby'));
    if (err) err.textContent = err.textContent ? `${err.textContent}; ${message}` : message;
    first ??= input;
  }
  return first;
}

/** an {error} result from the core: message in the error region, and next to each field it names */
function showCoreError(error, context) {
  const problems = problemsOf(error);
  clearFieldErrors();
  markFieldErrors(problems);
  const lines = problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
  showError(`${context}\n${lines.join('\n')}`);
}

let validateTimer = 0;
function scheduleValidate() {
  clearTimeout(validateTimer);
  validateTimer = setTimeout(validateNow, 300);
}

/** Checks the scenario with the core while idle: estimate on a trivial plan, keeping scenario errors. */
async function validateNow() {
  if (state.running || !state.version) return;
  const sc = scenario();
  const layers = typeof sc.model === 'object' ? sc.model.num_layers : presetModel()?.num_layers;
  const gbs = sc.training.global_batch_size;
  const plan = { micro_batch_size: 1, num_micro_batches: Number.isInteger(gbs) ? gbs : 1,
    stages: [{ group: 0, num_layers: Number.isInteger(layers) ? layers : 1, tp: 1, dp: 1 }] };
  let res;
  try {
    res = await call({ type: 'validate', scenario: sc, plan });
  } catch {
    return;
  }
  if (state.running) return;
  const problems = res?.error ? problemsOf(res.error).filter((p) => !p.path.startsWith('plan')) : [];
  clearFieldErrors();
  if (problems.length) {
    markFieldErrors(problems);
    showError(`The inputs have a problem:\n${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('\n')}`);
  } else if ($('#error').dataset.kind !== 'link') {
    $('#error').hidden = true;
  }
}

// ---------------------------------------------------------------- results

function bestSummary(est, { partial = false, label = 'Best plan' } = {}) {
  const el = clear($('#best-plan'));
  if (!est) {
    el.textContent = 'No feasible plan found for these inputs.';
    return;
  }
  const stages = est.stages || [];
  el.append(
    h('strong', {}, `${label}: `),
    h('span', { class: 'tps', 'data-testid': 'best-tokens' }, `${fmtInt(est.tokens_per_s)} tokens/s`),
    ` · iteration ${fmtTime(est.iteration_time_s)} · MFU ${fmtPct(est.mfu)} · ${est.num_gpus} GPUs · ${stages.length} stage${stages.length === 1 ? '' : 's'}`,
    est.memory_fits === false ? ' · does not fit in memory' : '',
    partial ? h('span', { class: 'partial' }, ' (best so far)') : '');
  if (est.memory_fits === false && est.problems?.length) el.append(h('div', { class: 'muted' }, est.problems.join('; ')));
}

let lastPlanRender = 0;
/** sources: show where each stage's numbers come from (a profile was attached, or the core says some are measured) */
function renderPlan(est, { timeline = true, sources = false } = {}) {
  const diagram = clear($('#stage-diagram'));
  const stages = clear($('#stage-table'));
  const tl = clear($('#timeline'));
  const table = clear($('#timeline-table'));
  const note = $('#timeline-note');
  const memory = clear($('#memory-breakdown'));
  note.textContent = '';
  if (!est) return;
  diagram.append(stageDiagram(est));
  memory.append(memoryBreakdown(est));
  stages.append(stagesTable(est, { sources: sources || hasMeasuredSource(est) }));
  // while searching only the stages are redrawn: the timeline can have thousands of bars
  if (timeline && Array.isArray(est.timeline) && est.timeline.length) {
    const svg = timelineSvg(est);
    tl.append(svg);
    // a large timeline is aggregated (render/timeline.js): say so under the figure too
    note.textContent = svg.getAttribute('data-note') ?? '';
    table.append(timelineTable(est));
  } else {
    tl.append(h('p', { class: 'muted' }, 'The timeline is drawn when the search ends.'));
  }
  lastPlanRender = performance.now();
}

function selectedEstimate() {
  return state.result?.plans?.[state.selected] ?? null;
}

function renderResult() {
  const r = state.result;
  const plans = r?.plans || [];
  bestSummary(plans[0] ?? null, { label: r?.fromLink ? 'Shared plan' : r?.fromFile ? 'Loaded plan' : 'Best plan' });
  const top = clear($('#top-plans'));
  if (plans.length) top.append(topPlansTable(plans, state.selected, (i) => { state.selected = i; renderResult(); updateShareUrl(); }));
  renderPlan(selectedEstimate(), { sources: Boolean(r?.profiled) });
  clear($('#baselines')).append(baselinesTable(r?.baselines, plans[0]));
  const stats = clear($('#stats'));
  if (r?.stats) stats.append(statsList(r.stats));
  else stats.append(h('p', { class: 'muted' }, r?.fromLink ? 'Opened from a share link (estimate only, no search).' : 'No search statistics.'));
  const has = Boolean(selectedEstimate());
  for (const id of ['copy-link', 'copy-embed', 'export-plan', 'export-svg', 'export-png', 'export-trace', 'export-megatron']) $(`#${id}`).disabled = !has;
  $('#export-csv').disabled = !plans.length;
  $('#megatron').hidden = true;
  postHeight();
}

function setRunning(running) {
  state.running = running;
  $('#run').disabled = running || !state.version;
  $('#cancel').disabled = !running;
  $('#run').textContent = running ? 'Searching…' : 'Find plans';
}

function progressText(p, elapsed) {
  const best = p?.best ? ` · best ${fmtInt(p.best.tokens_per_s)} tokens/s (${fmtTime(p.best.iteration_time_s)})` : '';
  return `Searching… evaluated ${fmtInt(p?.evaluated ?? 0)} · pruned ${fmtInt(p?.pruned ?? 0)}${best} · ${elapsed.toFixed(1)} s`;
}

async function runSearch() {
  if (state.running) return;
  clearErrors();
  const sc = scenario();
  state.lastScenario = sc;
  state.lastProgress = null;
  setRunning(true);
  const t0 = performance.now();
  $('#progress').textContent = 'Searching…';
  try {
    const result = await call({ type: 'plan', scenario: sc, options: searchOptions() }, (p) => {
      state.lastProgress = p;
      $('#progress').textContent = progressText(p, (performance.now() - t0) / 1000);
      if (p.best) {
        if (perf.firstBestMs === null) {
          perf.firstBestMs = performance.now();
          performance.mark?.('poseidon:first-best');
        }
        bestSummary(p.best, { partial: true });
        if (performance.now() - lastPlanRender > 400) renderPlan(p.best, { timeline: false, sources: Boolean(sc.profile) });
      }
    });
    if (result?.error) {
      showCoreError(result.error, 'The search could not start:');
      $('#progress').textContent = 'Stopped: fix the inputs marked above.';
      return;
    }
    if (perf.firstBestMs === null && result.plans?.length) perf.firstBestMs = performance.now();
    result.profiled = Boolean(sc.profile);
    state.result = result;
    state.selected = 0;
    renderResult();
    const s = result.stats || {};
    $('#progress').textContent = `Done: evaluated ${fmtInt(s.evaluated)} · pruned ${fmtInt(s.pruned)} in ${fmtTime(s.elapsed_s)}${s.complete === false ? ' (time limit reached: best found so far)' : ''}.`;
    updateShareUrl();
  } catch (e) {
    if (e.cancelled) return;
    showError(`The planner engine failed: ${e.message}. It has been restarted; your inputs are kept.`);
    $('#progress').textContent = '';
    restartWorker();
  } finally {
    setRunning(false);
  }
}

function cancelSearch() {
  if (!state.running) return;
  const p = state.lastProgress;
  restartWorker();
  setRunning(false);
  if (p?.best) {
    state.result = { plans: [p.best], baselines: [], stats: { evaluated: p.evaluated, pruned: p.pruned, infeasible: {}, elapsed_s: null, complete: false },
      profiled: Boolean(state.lastScenario?.profile) };
    state.selected = 0;
    renderResult();
    updateShareUrl();
  }
  $('#progress').textContent = `Cancelled after ${fmtInt(p?.evaluated ?? 0)} evaluated${p?.best ? ': showing the best plan so far (incomplete)' : ''}.`;
}

async function estimatePlan(plan, origin) {
  const sc = scenario();
  state.lastScenario = sc;
  const res = await call({ type: 'estimate', scenario: sc, plan });
  if (res?.error) {
    showCoreError(res.error, origin === 'link' ? 'The shared plan does not fit these inputs:' : 'The plan file does not fit the current inputs:');
    return false;
  }
  state.result = { plans: [res], baselines: [], stats: null, fromLink: origin === 'link', fromFile: origin === 'file', profiled: Boolean(sc.profile) };
  state.selected = 0;
  renderResult();
  if (perf.firstBestMs === null) perf.firstBestMs = performance.now();
  return true;
}

// ---------------------------------------------------------------- share links

function sharePayload() {
  const p = { app: state.version };
  const ref = (presetObj, presetId, current) => {
    if (!presetObj) return { o: cleanObject(current) };
    const d = diff(presetObj, current);
    return isEmpty(d) ? presetId : { id: presetId, o: d };
  };
  p.m = ref(presetModel(), state.modelPreset, state.model);
  p.c = ref(presetCluster(), state.clusterPreset, state.cluster);
  if (!isEmpty(state.devices)) p.d = state.devices;
  p.t = cleanObject(state.training);
  p.o = cleanObject(state.options);
  if (state.profile) p.f = state.profile.preset ?? { o: state.profile.value };
  if (state.calibration?.devices && !isEmpty(state.calibration.devices)) p.k = state.calibration.devices;
  const est = selectedEstimate();
  if (est?.plan) p.p = est.plan;
  return p;
}

let shareNote = '';
async function shareUrl(page = 'index.html') {
  const payload = sharePayload();
  let frag = await encodeShare(payload);
  shareNote = '';
  if (frag.length > MAX_FRAGMENT_CHARS && payload.f && typeof payload.f === 'object') {
    // a large pasted profile does not fit in a link: leave it out, and say so
    delete payload.f;
    frag = await encodeShare(payload);
    shareNote = `The attached profile is too large for a link (a link holds at most ${fmtInt(MAX_FRAGMENT_CHARS)} characters), so this link leaves it out: share the profile file with it.`;
  }
  return new URL(`${page}#${frag}`, new URL('./', location.href)).href;
}

function showShareNote() {
  const el = $('#copy-status');
  if (shareNote) el.textContent = shareNote;
  else if (el.dataset.note) el.textContent = '';
  if (shareNote) el.dataset.note = '1';
  else delete el.dataset.note;
}

async function updateShareUrl() {
  try {
    const url = await shareUrl();
    showShareNote();
    $('#share-url').value = url;
    if (!isEmbed) history.replaceState(null, '', `${location.pathname}${location.search}#${url.split('#')[1]}`);
  } catch {
    // the link can always be made again with "Copy link"
  }
}

/** Applies a decoded payload. Everything is checked before anything changes (inputs are kept on error). */
function applyPayload(p) {
  const resolve = (ref, list, what) => {
    if (typeof ref === 'string') {
      const preset = byId(list, ref);
      if (!preset) throw new ShareLinkError(`The link names the ${what} preset "${ref.slice(0, 60)}", which this version of the planner does not have.`);
      return { preset: ref, value: structuredClone(preset) };
    }
    if (ref.id !== undefined && ref.id !== null) {
      const preset = byId(list, ref.id);
      if (!preset) throw new ShareLinkError(`The link names the ${what} preset "${String(ref.id).slice(0, 60)}", which this version of the planner does not have.`);
      return { preset: ref.id, value: applyDiff(preset, ref.o) };
    }
    return { preset: null, value: structuredClone(ref.o) };
  };
  const m = resolve(p.m, state.presets.models, 'model');
  const c = resolve(p.c, state.presets.clusters, 'cluster');
  if (!Array.isArray(c.value.groups)) throw new ShareLinkError("The link's cluster has no list of groups.");
  if (c.value.groups.some((g) => g === null || typeof g !== 'object' || Array.isArray(g))) throw new ShareLinkError("The link's cluster groups are not objects.");
  let profile = null;
  if (typeof p.f === 'string') {
    if (!profilePreset(p.f)) throw new ShareLinkError(`The link names the profile preset "${p.f.slice(0, 60)}", which this version of the planner does not have.`);
    profile = { preset: p.f };
  } else if (p.f && typeof p.f === 'object') {
    profile = { value: structuredClone(p.f.o), label: 'profile from the link' };
  }
  state.modelPreset = m.preset;
  state.model = m.value;
  state.clusterPreset = c.preset;
  state.cluster = c.value;
  state.devices = structuredClone(p.d || {});
  state.training = { ...structuredClone(p.t || DEFAULT_TRAINING) };
  state.options = { ...DEFAULT_OPTIONS, ...structuredClone(p.o || {}) };
  state.profile = profile;
  state.calibration = p.k && !isEmpty(p.k) ? { devices: structuredClone(p.k) } : null;
  state.calibrationRun = null; // a fit shown in the panel belongs to the inputs before the link
  const content = attachedProfileContent();
  if (profile && content !== null && content !== undefined) $('#profile-json').value = `${JSON.stringify(content, null, 2)}\n`;
  renderAllForms();
  return p.p || null;
}

function snapshotInputs() {
  return structuredClone({ modelPreset: state.modelPreset, model: state.model, clusterPreset: state.clusterPreset,
    cluster: state.cluster, devices: state.devices, training: state.training, options: state.options, profile: state.profile,
    calibration: state.calibration, calibrationRun: state.calibrationRun });
}

/** Opens a share link: 'none' (no link), 'error' (refused, inputs kept), 'inputs' or 'plan'. */
async function openFragment(fragment) {
  if (!fragment || !isShareFragment(fragment)) return 'none';
  const before = snapshotInputs();
  let plan;
  try {
    const payload = await decodeShare(fragment);
    plan = applyPayload(payload);
  } catch (e) {
    Object.assign(state, before);
    renderAllForms();
    const msg = e instanceof ShareLinkError ? e.message : `The share link could not be read (${e.message}).`;
    showError(`${msg}\nYour current inputs are unchanged and the planner works as usual.`);
    $('#error').dataset.kind = 'link';
    return 'error';
  }
  delete $('#error').dataset.kind;
  clearErrors();
  if (!plan) return 'inputs';
  const ok = await estimatePlan(plan, 'link');
  if (ok) $('#share-url').value = location.href;
  return ok ? 'plan' : 'error';
}

// ---------------------------------------------------------------- exports

function download(name, type, data) {
  const blob = data instanceof Blob ? data : new Blob([data], { type });
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, class: 'sr-only' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function copyText(text, what) {
  $('#share-url').value = text;
  try {
    await navigator.clipboard.writeText(text);
    $('#copy-status').textContent = `${what} copied to the clipboard.`;
  } catch {
    $('#share-url').select();
    $('#copy-status').textContent = `${what} is in the field above: copy it with Ctrl+C.`;
  }
}

function embedCode(url) {
  return `<iframe src="${url}" title="Poseidon parallelism plan" width="100%" height="480" loading="lazy" class="poseidon-embed"></iframe>\n`
    + '<script>addEventListener("message", (e) => { if (e.data && e.data.type === "poseidon:resize") '
    + 'for (const f of document.querySelectorAll("iframe.poseidon-embed")) if (f.contentWindow === e.source) f.height = Math.min(4000, Math.max(200, Number(e.data.height) || 480)); });</script>\n';
}

function wireExports() {
  $('#copy-link').addEventListener('click', async () => {
    const url = await shareUrl();
    if (!isEmbed) history.replaceState(null, '', `${location.pathname}${location.search}#${url.split('#')[1]}`);
    await copyText(url, 'Link');
    if (shareNote) $('#copy-status').textContent += ` ${shareNote}`;
  });
  $('#copy-embed').addEventListener('click', async () => copyText(embedCode(await shareUrl('embed.html')), 'Embed code'));
  $('#export-plan').addEventListener('click', () => download('poseidon-plan.json', 'application/json', planJson(selectedEstimate())));
  $('#export-csv').addEventListener('click', () => download('poseidon-top-plans.csv', 'text/csv', topPlansCsv(state.result.plans)));
  $('#export-svg').addEventListener('click', () => {
    const svg = timelineSvg(selectedEstimate(), { standalone: true, width: 1200 });
    download('poseidon-timeline.svg', 'image/svg+xml', `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(svg)}\n`);
  });
  $('#export-png').addEventListener('click', () => {
    timelinePng(selectedEstimate(), { width: 1200, scale: 2 }).toBlob((blob) => download('poseidon-timeline.png', 'image/png', blob), 'image/png');
  });
  $('#export-trace').addEventListener('click', () => download('poseidon-trace.json', 'application/json', chromeTrace(selectedEstimate())));
  $('#export-megatron').addEventListener('click', () => {
    const sc = state.lastScenario ?? scenario();
    const full = { ...sc, model: typeof sc.model === 'string' ? presetModel() ?? byId(state.presets.models, sc.model) : sc.model };
    const r = megatronArgs(selectedEstimate(), full);
    const pre = $('#megatron');
    pre.hidden = false;
    if (r.ok) {
      pre.textContent = r.text;
      download('poseidon-megatron-args.txt', 'text/plain', r.text);
    } else {
      pre.textContent = `This plan cannot be expressed as Megatron-LM arguments:\n- ${r.reasons.join('\n- ')}\n`;
    }
  });
}

async function loadPlanFile(file) {
  clearErrors();
  if (file.size > 4 * 1024 * 1024) { showError(`${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a plan file is at most 4 MiB.`); return; }
  let obj;
  try {
    obj = JSON.parse(await file.text());
  } catch (e) {
    showError(`${file.name} is not a plan file: it is not valid JSON (${e.message}).`);
    return;
  }
  // a plan, an estimate (with "plan"), or a plan() result (with "plans")
  const plan = obj?.stages ? obj : obj?.plan?.stages ? obj.plan : obj?.plans?.[0]?.plan?.stages ? obj.plans[0].plan : null;
  if (!plan || typeof plan !== 'object') {
    showError(`${file.name} is not a plan file: it has no "stages" (a plan, an estimate or a search result is expected).`);
    return;
  }
  await estimatePlan(plan, 'file');
  updateShareUrl();
}

// ---------------------------------------------------------------- embed sizing, theme, offline

let lastHeight = 0;
function postHeight() {
  if (!isEmbed || window.parent === window) return;
  const height = Math.ceil(document.documentElement.scrollHeight);
  if (height === lastHeight) return;
  lastHeight = height;
  window.parent.postMessage({ type: 'poseidon:resize', height }, '*');
}

function wireTheme() {
  const btn = $('#theme');
  const order = ['auto', 'light', 'dark'];
  const apply = (t) => {
    if (t === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = t;
    btn.textContent = `Theme: ${t}`;
    btn.setAttribute('aria-label', `Colour theme: ${t === 'auto' ? 'automatic' : t}`);
  };
  let theme = 'auto';
  try { theme = localStorage.getItem('poseidon-theme') || 'auto'; } catch { /* storage blocked */ }
  const param = new URLSearchParams(location.search).get('theme');
  if (order.includes(param)) theme = param;
  apply(order.includes(theme) ? theme : 'auto');
  btn.addEventListener('click', () => {
    theme = order[(order.indexOf(theme) + 1) % order.length];
    try { localStorage.setItem('poseidon-theme', theme); } catch { /* storage blocked */ }
    apply(theme);
  });
}

function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || !/^https?:$/.test(location.protocol)) return;
  if (new URLSearchParams(location.search).has('nosw')) return;
  navigator.serviceWorker.register(new URL('./sw.js', import.meta.url)).catch(() => {});
}

// ---------------------------------------------------------------- start

function wireInputs() {
  $('#model-preset').addEventListener('change', (e) => {
    if (e.target.value) setModelPreset(e.target.value);
    else { state.modelPreset = null; renderModelForm(); onInputChanged(); }
  });
  $('#cluster-preset').addEventListener('change', (e) => {
    if (e.target.value) setClusterPreset(e.target.value);
    else { state.clusterPreset = null; renderClusterForm(); onInputChanged(); }
  });
  $('#add-group').addEventListener('click', () => {
    const last = state.cluster.groups.at(-1) || { device: state.presets.devices[0]?.id, nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 100 };
    state.cluster.groups.push({ device: last.device, nodes: last.nodes, gpus_per_node: last.gpus_per_node, inter_node_bw_GBps: last.inter_node_bw_GBps });
    renderClusterForm();
    onInputChanged();
  });
  $('#add-device').addEventListener('click', () => {
    const base = byId(state.presets.devices, $('#device-base').value) || {};
    let n = 1;
    while (state.devices[`custom-${n}`]) n++;
    const id = `custom-${n}`;
    const dev = structuredClone(base);
    for (const k of DEVICE_SKIP) delete dev[k];
    dev.name = `Custom ${n} (from ${base.name ?? base.id ?? 'scratch'})`;
    state.devices[id] = dev;
    renderClusterForm();
    $('#devices').open = true;
    onInputChanged();
  });
  $('#hf-apply').addEventListener('click', () => {
    const notes = $('#hf-notes');
    try {
      const { model, notes: n } = modelFromHfConfig($('#hf-config').value);
      state.modelPreset = null;
      state.model = model;
      renderModelForm();
      notes.textContent = n.length ? `Imported. Notes: ${n.join('; ')}.` : 'Imported: check the fields above.';
      clearErrors();
      onInputChanged();
    } catch (e) {
      if (!(e instanceof HfConfigError)) throw e;
      notes.textContent = '';
      showError(e.message);
      $('#hf-config').setAttribute('aria-invalid', 'true');
    }
  });
  $('#profile-preset').addEventListener('change', () => { profileSelectTouched = true; });
  $('#profile-use-preset').addEventListener('click', attachPresetProfile);
  $('#profile-remove').addEventListener('click', removeProfile);
  $('#profile-attach').addEventListener('click', () => attachProfileText($('#profile-json').value, 'pasted profile'));
  $('#profile-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadProfileFile(f); e.target.value = ''; });
  $('#calibrate-run').addEventListener('click', runCalibration);
  $('#calibration-remove').addEventListener('click', removeCalibration);
  $('#runs-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadRunsFile(f); e.target.value = ''; });
  $('#run').addEventListener('click', runSearch);
  $('#cancel').addEventListener('click', cancelSearch);
  $('#plan-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadPlanFile(f); e.target.value = ''; });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    const f = e.dataTransfer?.files?.[0];
    // a file dropped on the profile box is a profile; anywhere else, a plan
    if (f && e.target instanceof Element && e.target.closest('#profile-fs')) loadProfileFile(f);
    else if (f && e.target instanceof Element && e.target.closest('#calibrate-fs')) loadRunsFile(f);
    else if (f) loadPlanFile(f);
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.running) cancelSearch();
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !state.running) runSearch();
  });
  window.addEventListener('hashchange', () => { if (!state.running) openFragment(location.hash); });
}

function defaults() {
  const models = state.presets.models;
  const clusters = state.presets.clusters;
  state.modelPreset = (byId(models, DEFAULT_MODEL) ?? models[0])?.id ?? null;
  state.model = structuredClone(presetModel() ?? {});
  state.clusterPreset = (byId(clusters, DEFAULT_CLUSTER) ?? clusters[0])?.id ?? null;
  state.cluster = structuredClone(presetCluster() ?? { name: 'Custom cluster', groups: [] });
}

async function start() {
  wireTheme();
  wireInputs();
  wireExports();
  if (isEmbed) {
    $('#full-planner').href = new URL(`index.html${location.hash}`, location.href).href;
    new ResizeObserver(postHeight).observe(document.documentElement);
  }
  let info;
  try {
    info = await spawnWorker();
  } catch (e) {
    showError(`${e.message}\nThe page needs WebAssembly and module workers (a current Chrome, Firefox or Safari), served over http(s).`);
    $('#version').textContent = 'engine not loaded';
    return;
  }
  perf.readyMs = performance.now();
  state.version = info.version;
  state.presets = { devices: [], models: [], clusters: [], stacks: [], ...info.presets };
  $('#version').textContent = `engine ${info.version}`;
  const profilesLoaded = loadProfilePresets(info.presets?.profiles).then(() => renderProfileForm());
  defaults();
  renderAllForms();
  setRunning(false);
  await profilesLoaded; // a link may name a profile preset: its contents show in the profile box
  window.__poseidonReady = true;
  const opened = await openFragment(location.hash);
  // the embed shows one plan: the link's, or the best for the link's (or default) inputs
  if (isEmbed && (opened === 'none' || opened === 'inputs')) await runSearch();
  registerServiceWorker();
}

start();
