// Page state: the inputs as the user edits them, the result shown, and the scenario the core
// receives (preset ids where the inputs equal a preset).
import { diff } from './share.js';
import { calibratedDevice } from './calibration.js';
import { DEFAULT_TOKENS } from './cost.js';
import { renameDevices, shortDeviceName } from './context.js';

// What a link without training inputs means (the page's first default, docs/examples/demo.scenario.json);
// links made by the page always carry their own.
export const DEFAULT_TRAINING = { global_batch_size: 64, precision: 'bf16', recompute: 'none', sequence_parallel: false, distributed_optimizer: false };
// A plain visit's inputs, docs/examples/page.scenario.json: a 2026 workload (an MoE model on H100s
// beside a GB200 NVL72 rack) whose plans the first view shows at once (web/first-view.mjs).
export const PAGE_TRAINING = { ...DEFAULT_TRAINING, global_batch_size: 1024 };
export const DEFAULT_OPTIONS = { top: 5, exhaustive: false, time_limit_s: 10, tp_per_stage: false };
export const DEFAULT_MODEL = 'qwen3-30b-a3b';
export const DEFAULT_CLUSTER = 'h100-plus-gb200';

export const isEmbed = new URLSearchParams(location.search).get('embed') === '1';
if (isEmbed) document.documentElement.classList.add('embed');

export const state = {
  presets: { devices: [], models: [], clusters: [], stacks: [] },
  version: '',
  modelPreset: null,
  model: {},
  clusterPreset: null,
  cluster: { name: 'Custom cluster', groups: [] },
  devices: {}, // custom devices by id
  training: { ...PAGE_TRAINING },
  options: { ...DEFAULT_OPTIONS },
  // measured profile: null, {preset: id} or {value: any JSON, label: where it came from}
  profile: null,
  profilePresets: [], // [{id, content|null}]: content fetched from presets/profiles/<id>.json
  // calibrated devices: null or {devices: {<device id used by groups>: {fitted keys, calibration}}}
  calibration: null,
  calibrationRun: null, // the last calibrate result shown in the panel: {report, calibration: {devices, inline}}
  // time to train and cost: the token budget as typed, prices per GPU-hour the user entered (by device
  // reference; others use cost.js's defaults), and whether the cluster's idle GPUs are billed too
  budget: { tokens: DEFAULT_TOKENS, prices: {}, idle: false },
  result: null, // {plans, baselines, stats, profiled, fromLink?, fromFile?}
  resultScenario: null, // the scenario the result on screen was computed for
  stale: false, // the inputs changed since: the result is shown, marked stale, until the new one arrives
  staleNext: 're-planning…', // what the stale mark says comes next: a search, fixing the inputs, or Find plans
  advice: null, // for a result without plans: the core's advice, or {pending: true}
  selected: 0, // index into result.plans
  sortBy: 'time', // top plans ordered by 'time' or 'cost'
  running: false,
  progressText: '', // the progress line: what the search is doing or did
  searchBest: null, // a running search's best plan so far, with nothing else on screen: {est, sc}
  lastProgress: null,
  lastScenario: null,
  searchScenario: null,
  phoneTab: 'results', // on a narrow screen (phone-tabs.js), the pane shown: 'results' or 'inputs'
};
// milliseconds since navigation start (performance.now()), read by the tests and the benchmark
export const perf = { scriptMs: performance.now(), firstBestMs: null, readyMs: null, lastEditMs: null, lastResultMs: null };
window.__poseidon = perf;

export const byId = (list, id) => list.find((x) => x.id === id);
export const presetModel = () => byId(state.presets.models, state.modelPreset);
export const presetCluster = () => byId(state.presets.clusters, state.clusterPreset);
export const isEmpty = (o) => Object.keys(o).length === 0;

/** the inputs a plain visit starts with: the default model and cluster presets (web/first-view.mjs makes the same) */
export function applyDefaults(presets) {
  state.presets = { devices: [], models: [], clusters: [], stacks: [], ...presets };
  const { models, clusters } = state.presets;
  state.modelPreset = (byId(models, DEFAULT_MODEL) ?? models[0])?.id ?? null;
  state.model = structuredClone(presetModel() ?? {});
  state.clusterPreset = (byId(clusters, DEFAULT_CLUSTER) ?? clusters[0])?.id ?? null;
  state.cluster = structuredClone(presetCluster() ?? { name: 'Custom cluster', groups: [] });
}


export function cleanObject(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

export function modelForScenario() {
  const p = presetModel();
  if (p && isEmpty(diff(p, state.model))) return state.modelPreset;
  return cleanObject(state.model);
}

/** the calibration's overrides for a device reference, or null */
export function calibrationOf(ref) {
  const o = typeof ref === 'string' ? state.calibration?.devices?.[ref] : null;
  return o && typeof o === 'object' && !isEmpty(o) ? o : null;
}

export function clusterForScenario() {
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

export function scenario() {
  const sc = { model: modelForScenario(), training: cleanObject(state.training), cluster: clusterForScenario() };
  if (state.profile) sc.profile = state.profile.preset ?? state.profile.value;
  return sc;
}

/** the block counts the recompute select's "blocks" searches */
export const RECOMPUTE_BLOCK_CHOICES = [1, 2, 4, 8];

/** the search options that fix a grid size for every stage (docs/search.md, "Fixed grids") */
export const GRID_SIZE_KEYS = ['cp_sizes', 'ep_sizes', 'etp_sizes'];

export function searchOptions() {
  const o = cleanObject(state.options);
  // the precision select's "bf16,fp8" is the core's list (options.precisions); "any" stays a word
  if (typeof o.precisions === 'string' && o.precisions !== 'any') o.precisions = o.precisions.split(',');
  // the recompute select's "blocks" is "any" with the block counts (options.recompute_num_layers)
  if (o.recompute === 'blocks') Object.assign(o, { recompute: 'any', recompute_num_layers: RECOMPUTE_BLOCK_CHOICES });
  // a fixed size's select ("2") is the core's list of one ([2]); a list from a file stays a list
  for (const k of GRID_SIZE_KEYS) {
    if (o[k] === 'searched') delete o[k];
    else if (typeof o[k] === 'string' || typeof o[k] === 'number') o[k] = String(o[k]).split(',').map((x) => (/^\s*\d+\s*$/.test(x) ? Number(x) : x.trim()));
  }
  return o;
}

export const profilePreset = (id) => state.profilePresets.find((p) => p.id === id) ?? null;
export const deviceOf = (ref) => (typeof ref === 'string' ? state.devices[ref] ?? byId(state.presets.devices, ref) ?? null : null);

// "NVIDIA A100 SXM4 80GB" → "A100 SXM4 80GB", as the group table and the context line show it
const shortName = (name) => shortDeviceName(String(name));

/**
 * A device reference of the core (preset or custom id; '+' joins a mixed stage's) → the name the
 * inputs show. Every panel, note and human-readable export names devices with it; ids stay in the
 * machine-readable files (plan and scenario JSON, the trace's resources).
 */
export function deviceName(ref) {
  if (typeof ref !== 'string') return ref?.name ? shortName(ref.name) : typeof ref?.base === 'string' ? deviceName(ref.base) : 'inline device';
  return ref.split('+').map((id) => {
    const d = state.devices[id] ?? state.presets.devices.find((x) => x.id === id);
    return d?.name ? shortName(d.name) : id;
  }).join('+');
}

/** text (the core's advice, a note) with every known device named as the inputs name it, not by id or full name */
export function withDeviceNames(text) {
  const pairs = [];
  for (const d of state.presets.devices) pairs.push([d.id, deviceName(d.id)], [d.name, deviceName(d.id)]);
  for (const [id, d] of Object.entries(state.devices)) pairs.push([id, deviceName(id)], [d?.name, deviceName(id)]);
  return renameDevices(text, pairs);
}
