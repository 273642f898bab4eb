// Measured profiles on the page (docs/formats.md, "Profile"): the profile presets the site ships,
// which of them fit the current inputs, and labels for the per-stage sources the core reports.
// No DOM, no wasm: node tests import this module. The core validates the profile itself.

import { NonFiniteNumberError, parseJson } from './json-text.js';

/**
 * Ids of presets/profiles/*.json. The core's presets() lists the profiles too, and the page takes
 * them from there; this list is the fallback for a module that does not, whose page then fetches
 * the contents from the site's presets/ folder (the scenario sends the id either way). A node test
 * checks this list against presets/profiles/ and against the module's list.
 */
export const PROFILE_PRESET_IDS = ['llama3.2-1b-a100-illustrative'];

/** the core refuses documents over 4 MiB; a profile file larger than that is refused here first */
export const MAX_PROFILE_BYTES = 4 * 1024 * 1024;

export class ProfileInputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ProfileInputError';
  }
}

/**
 * Text of a profile → its JSON value. Only the JSON syntax is checked here: any JSON value goes to
 * the core, whose messages (with their paths) are shown next to the profile field.
 */
export function parseProfileText(text) {
  const t = String(text ?? '').trim();
  if (!t) throw new ProfileInputError('The profile field is empty: paste a profile JSON or choose a file.');
  if (new TextEncoder().encode(t).length > MAX_PROFILE_BYTES) throw new ProfileInputError('The profile is larger than 4 MiB, the most the planner reads.');
  try {
    return parseJson(t);
  } catch (e) {
    if (e instanceof NonFiniteNumberError) throw new ProfileInputError(`The profile's ${e.message}.`);
    throw new ProfileInputError(`The profile is not valid JSON (${e.message}).`);
  }
}

const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

/** the device names a profile lists (defensive: a malformed profile gives what can be read) */
export function profileDevices(profile) {
  if (!isObj(profile) || !Array.isArray(profile.devices)) return [];
  return profile.devices.filter((d) => isObj(d) && typeof d.device === 'string').map((d) => d.device);
}

/**
 * The names the core matches a profile's `device` against, for the devices this cluster uses:
 * preset ids and names, and the names of inline/custom devices (docs/formats.md, Profile).
 *   cluster: {groups:[{device: id | object}]}; presetDevices: [{id, name}]; customDevices: {id: {name}}
 */
export function clusterDeviceNames(cluster, presetDevices = [], customDevices = {}) {
  const names = new Set();
  for (const g of cluster?.groups || []) {
    const d = g?.device;
    if (typeof d === 'string') {
      const custom = customDevices[d];
      const preset = presetDevices.find((p) => p.id === d);
      if (custom) {
        if (typeof custom.name === 'string') names.add(custom.name);
      } else {
        names.add(d);
        if (typeof preset?.name === 'string') names.add(preset.name);
      }
    } else if (isObj(d)) {
      if (typeof d.id === 'string') names.add(d.id);
      if (typeof d.name === 'string') names.add(d.name);
      if (typeof d.base === 'string') {
        names.add(d.base);
        const preset = presetDevices.find((p) => p.id === d.base);
        if (typeof preset?.name === 'string') names.add(preset.name);
      }
    }
  }
  return names;
}

/**
 * How a profile fits the inputs: `devices` = its devices that the cluster uses; `model` = the
 * preset's id starts with the model preset's id (the presets' naming: <model>-<device>-<note>).
 */
export function profileMatch(profile, { id = null, modelPreset = null, deviceNames = new Set() } = {}) {
  const devices = profileDevices(profile).filter((d) => deviceNames.has(d));
  const model = Boolean(id && modelPreset && id.startsWith(`${modelPreset}-`));
  return { devices, model, full: model && devices.length > 0 };
}

export const SOURCE_LABEL = { profile: 'measured', interpolated: 'interpolated', analytic: 'analytic' };
/** the parts of a stage's `source` in the order the page lists them */
export const SOURCE_PARTS = ['forward', 'backward', 'optimizer', 'links',
  'layer_forward', 'layer_backward', 'embedding_forward', 'embedding_backward', 'head_forward', 'head_backward'];
const SUMMARY_PARTS = ['forward', 'backward', 'optimizer', 'links'];

const label = (v) => SOURCE_LABEL[v] ?? String(v);

/**
 * A stage's `source` object → {text, detail}: text names forward, backward, optimizer and links
 * ("measured" when all four are the same), detail lists every part the core reported.
 */
export function sourceSummary(source) {
  if (!isObj(source)) return { text: 'analytic', detail: 'no source reported (analytic model)' };
  const vals = SUMMARY_PARTS.filter((k) => k in source).map((k) => source[k]);
  const same = vals.length && vals.every((v) => v === vals[0]);
  const text = same ? label(vals[0])
    : SUMMARY_PARTS.filter((k) => k in source).map((k) => `${k === 'optimizer' ? 'opt.' : k} ${label(source[k])}`).join(', ');
  const keys = [...SOURCE_PARTS.filter((k) => k in source), ...Object.keys(source).filter((k) => !SOURCE_PARTS.includes(k))];
  const detail = keys.map((k) => `${k.replace(/_/g, ' ')}: ${label(source[k])}`).join('; ');
  return { text, detail };
}

/** true when some stage of the estimate has a number that did not come from the analytic model */
export function hasMeasuredSource(est) {
  for (const st of est?.stages || []) {
    for (const src of [st.source, ...(Array.isArray(st.replicas) ? st.replicas.map((r) => r?.source) : [])]) {
      if (isObj(src) && Object.values(src).some((v) => v !== 'analytic')) return true;
    }
  }
  return false;
}
