// Calibration on the page (docs/calibration.md): what the page keeps of a calibrated scenario, and
// how it applies it. No DOM, no wasm: node tests import this module. The core does the fit.
//
// The page keeps a calibration as device overrides keyed by the device reference the cluster's
// groups use (a preset id or a custom device id): {"a100-sxm4-80gb": {"matmul_efficiency": 0.598,
// "framework_overhead_GiB": 0.595, "calibration": {...provenance}}}. Only the keys calibrate fits
// and the provenance are kept, so a calibrated preset device is sent as {"base": id, ...overrides}
// and a share link carries a few numbers per device (format 3, key "k").

import { fmt } from './dom.js';

/** device keys `poseidon calibrate` fits (docs/calibration.md, "The parameters") */
export const CALIBRATION_KEYS = ['matmul_efficiency', 'memory_bw_efficiency', 'intra_node_link_efficiency',
  'inter_node_link_efficiency', 'framework_overhead_GiB'];
/** the software stack's overheads it fits (they travel in the training settings, as a stack object) */
export const STACK_CALIBRATION_KEYS = ['host_us_per_kernel', 'pass_overhead_us', 'layer_overhead_us'];

/** the core reads documents of at most 4 MiB; a runs file larger than that is refused here first */
export const MAX_RUNS_BYTES = 4 * 1024 * 1024;

export class RunsInputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RunsInputError';
  }
}

/** the runs text as the core will read it; only emptiness and size are checked here (the core checks the rest) */
export function checkRunsText(text) {
  const t = String(text ?? '').trim();
  if (!t) throw new RunsInputError('The runs field is empty: paste a RUNS.json or choose a file.');
  if (new TextEncoder().encode(t).length > MAX_RUNS_BYTES) throw new RunsInputError('The runs file is larger than 4 MiB, the most the planner reads.');
  return t;
}

/**
 * A problem calibrate found in the runs, as the page says it. The core's path starts with its
 * argument's name, "runs", and the document's own key is "runs" too: "runs.runs[0].plan" is
 * runs[0].plan inside RUNS.json, said so; "runs" alone is the document (not valid JSON, not an
 * object), said as "The runs document …" rather than a bare "is not valid JSON"; so is a JSON
 * syntax error, whatever value the parser stopped in.
 */
export function runsProblemText({ path, message }) {
  const rel = String(path ?? '').replace(/^runs(?=$|[.[])\.?/, '');
  const m = String(message ?? '');
  // a syntax error is the text's, wherever the parser was (the core names the value it was in:
  // "runs", "runs[0]"); its line and column say where
  if (/^is not valid JSON\b/.test(m)) return `The runs document ${m}`;
  if (rel) return `${rel}: ${m}`;
  return /^is /.test(m) ? `The runs document ${m}` : `The runs document: ${m}`;
}

const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The calibration a calibrated scenario carries, as overrides per device reference.
 *   refs: the device reference of each group of the scenario that was calibrated (a string id, or
 *         null for a group whose device was written inline)
 *   calibrated: the `scenario` the core's calibrate returned (its cluster inline, groups in the same order)
 *   baseOf(id): the device the reference stands for (preset or custom), to keep only what differs
 * Returns {devices: {id: overrides}, inline: {groupIndex: calibrated device}, stack}: inline devices
 * are replaced whole (they are part of the cluster); `stack` is the calibrated scenario's
 * training.stack when calibrate fitted its overheads (it then carries a `calibration` key), else null.
 */
export function calibrationFromScenario(refs, calibrated, baseOf) {
  const groups = calibrated?.cluster?.groups;
  if (!Array.isArray(groups)) throw new RunsInputError('The calibrated scenario has no cluster groups.');
  const devices = {};
  const inline = {};
  groups.forEach((g, i) => {
    const dev = g?.device;
    if (!isObj(dev)) return;
    const ref = refs[i];
    if (typeof ref !== 'string') {
      if (isObj(dev.calibration)) inline[i] = dev;
      return;
    }
    if (devices[ref]) return; // groups that share a device share its calibration
    const base = baseOf(ref) ?? {};
    const o = {};
    for (const k of [...CALIBRATION_KEYS, 'calibration']) {
      if (dev[k] !== undefined && !same(base[k], dev[k])) o[k] = dev[k];
    }
    if (Object.keys(o).length) devices[ref] = o;
  });
  const st = calibrated?.training?.stack;
  const stack = isObj(st) && isObj(st.calibration) ? st : null;
  return { devices, inline, stack };
}

/** the device a group sends: its reference with the calibration's overrides, or the reference as it is */
export function calibratedDevice(ref, overrides, customDevice) {
  if (!isObj(overrides) || !Object.keys(overrides).length) return null;
  if (isObj(customDevice)) return { ...customDevice, ...overrides };
  return { base: ref, ...overrides };
}

/** [{key, from, to}] of a device's fitted values (from its provenance, else the overrides themselves) */
export function fittedValues(overrides) {
  const fitted = isObj(overrides?.calibration?.fitted) ? overrides.calibration.fitted : null;
  const out = [];
  for (const k of CALIBRATION_KEYS) {
    if (fitted && isObj(fitted[k])) out.push({ key: k, from: fitted[k].from, to: fitted[k].to });
    else if (overrides?.[k] !== undefined) out.push({ key: k, from: undefined, to: overrides[k] });
  }
  return out;
}

/**
 * "matmul_efficiency 0.72 → 0.6, …": a value the fit left where it was (the same at the shown
 * precision) reads "0.85 (unchanged)", not "0.85 → 0.85"
 */
export function fittedText(values) {
  if (!values.length) return 'no fitted value';
  return values.map(({ key, from, to }) => {
    if (from === undefined) return `${key} ${fmt(to, 4)}`;
    const a = fmt(from, 4), b = fmt(to, 4);
    return a === b ? `${key} ${b} (unchanged)` : `${key} ${a} → ${b}`;
  }).join(', ');
}

/**
 * "Record what this plan measured" (issue 36 item 8): a measured seconds per iteration and an
 * optional peak memory, as typed, → the run for RUNS.json, or a RunsInputError whose message names
 * the field. plan: the plan on screen; extra: {name, model, global_batch_size} when the run's
 * differ from the scenario's.
 */
export function recordedRun(plan, timeText, memoryText, extra = {}) {
  const number = (text, what, optional) => {
    const t = String(text ?? '').trim();
    if (!t && optional) return undefined;
    if (!t) throw new RunsInputError(`${what}: enter the seconds one training iteration took, a number above 0 (e.g. 1.32).`);
    const v = Number(t);
    if (!Number.isFinite(v) || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) throw new RunsInputError(`${what}: "${t.slice(0, 40)}" is not a number.`);
    if (!(v > 0) || v > 1e6) throw new RunsInputError(`${what}: ${t} is out of range; enter a number above 0 and at most 1,000,000.`);
    return v;
  };
  if (!plan || typeof plan !== 'object') throw new RunsInputError('No plan on screen to record: plan first, then record what it measured.');
  const run = { name: extra.name ?? 'recorded on the page', iteration_time_s: number(timeText, 'Measured seconds per iteration', false) };
  const mem = number(memoryText, 'Peak memory per GPU (GiB)', true);
  if (mem !== undefined) run.peak_memory_GiB = mem;
  if (extra.model !== undefined) run.model = extra.model;
  if (extra.global_batch_size !== undefined) run.global_batch_size = extra.global_batch_size;
  run.plan = structuredClone(plan);
  return run;
}

/** RUNS.json text with one more run: an empty text starts a document; text that is not one is refused, naming the runs field */
export function appendRun(text, run) {
  const t = String(text ?? '').trim();
  let doc = { name: 'runs recorded on the page', runs: [] };
  if (t) {
    try { doc = JSON.parse(t); } catch { throw new RunsInputError('The runs field (RUNS.json) is not valid JSON: fix it or clear it, then add the run again.'); }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc) || (doc.runs !== undefined && !Array.isArray(doc.runs))) {
      throw new RunsInputError('The runs field (RUNS.json) is not a runs document ({"runs": [...]}): fix it or clear it, then add the run again.');
    }
    doc.runs ??= [];
  }
  if (doc.runs.length >= 100) throw new RunsInputError('The runs field already holds 100 runs, the most calibrate takes.');
  doc.runs.push(run);
  return `${JSON.stringify(doc, null, 2)}\n`;
}
