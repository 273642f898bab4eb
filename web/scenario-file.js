// A scenario file (docs/formats.md, "Scenario": what `poseidon plan S.json` reads) → the page's
// inputs. Only the shape is checked here (objects where objects go, preset ids that exist); the
// values are the core's to check, like typed input. Pure (no DOM), tested in node.

import { NonFiniteNumberError, parseJson } from './json-text.js';

export class ScenarioFileError extends Error {}

const KEYS = ['model', 'cluster', 'training', 'profile'];
// informational strings a scenario may carry (docs/formats.md, "Scenario"); the page keeps neither
const INFO_KEYS = ['name', 'notes'];
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const kindOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v).slice(0, 40)}`);
const fail = (path, message) => { throw new ScenarioFileError(`${path}: ${message}`); };
// a preset's own descriptive keys, not copied into an edited copy of it
const PRESET_ONLY = ['id', 'source', 'notes', 'price_usd_per_gpu_hour', 'price_source', 'price_as_of'];
const withoutPresetKeys = (o) => Object.fromEntries(Object.entries(o).filter(([k]) => !PRESET_ONLY.includes(k)));

/**
 * a preset reference: "id", {"base": id, ...overrides} (or "preset" in place of "base", as the core
 * reads it: docs/formats.md, "Preset references with overrides") or an inline object → {preset, value}
 */
function resolve(ref, list, path, what) {
  const ids = () => (list.length > 6 ? `${list.slice(0, 6).map((p) => p.id).join(', ')}, …` : list.map((p) => p.id).join(', '));
  if (typeof ref === 'string') {
    const preset = list.find((p) => p.id === ref);
    if (!preset) fail(path, `"${ref.slice(0, 60)}" is not a ${what} preset of this planner (${ids()})`);
    return { preset: ref, value: structuredClone(preset) };
  }
  if (!isObject(ref)) fail(path, `is ${kindOf(ref)}; a ${what} preset id or an object is expected`);
  if ('base' in ref && 'preset' in ref) fail(`${path}.preset`, `${kindOf(ref.preset)} beside base ${kindOf(ref.base)}; expected one of the two (they mean the same)`);
  if ('base' in ref || 'preset' in ref) {
    const key = 'base' in ref ? 'base' : 'preset';
    const id = ref[key];
    const preset = typeof id === 'string' ? list.find((p) => p.id === id) : null;
    if (!preset) fail(`${path}.${key}`, `${typeof id === 'string' ? `"${id.slice(0, 60)}"` : kindOf(id)} is not a ${what} preset of this planner (${ids()})`);
    const { [key]: _, ...overrides } = ref;
    return { preset: id, value: { ...structuredClone(preset), ...structuredClone(overrides) } };
  }
  return { preset: null, value: structuredClone(ref) };
}

/**
 * text of a scenario file → {modelPreset, model, clusterPreset, cluster, devices, training, profile};
 * presets: {models, clusters, devices} (full objects with id), profileIds: the profile presets.
 * Inline devices of the cluster's groups become custom devices ("custom-1", …; one per distinct
 * device). Throws ScenarioFileError "<JSON path>: <what is wrong>".
 */
export function inputsFromScenario(text, presets, profileIds = []) {
  let sc;
  try {
    sc = parseJson(text);
  } catch (e) {
    if (e instanceof NonFiniteNumberError) throw new ScenarioFileError(e.message);
    throw new ScenarioFileError(`it is not valid JSON (${e.message})`);
  }
  if (!isObject(sc)) fail('(top level)', `is ${kindOf(sc)}; a scenario is an object with model, cluster and training`);
  for (const k of Object.keys(sc)) {
    if (INFO_KEYS.includes(k)) {
      if (typeof sc[k] !== 'string') fail(k, `is ${kindOf(sc[k])}; expected a string`);
    } else if (!KEYS.includes(k)) {
      fail(k, `unknown key; a scenario has ${KEYS.join(', ')} (profile optional; name and notes informational)`);
    }
  }
  for (const k of ['model', 'cluster', 'training']) if (!(k in sc)) fail(k, 'missing; a scenario has model, cluster and training');
  const m = resolve(sc.model, presets.models || [], 'model', 'model');
  const c = resolve(sc.cluster, presets.clusters || [], 'cluster', 'cluster');
  if (!Array.isArray(c.value.groups)) fail('cluster.groups', `is ${kindOf(c.value.groups)}; a list of groups is expected`);
  const devices = {};
  const seen = new Map(); // JSON of an inline device → its custom id
  c.value.groups = c.value.groups.map((g, i) => {
    const path = `cluster.groups[${i}]`;
    if (!isObject(g)) fail(path, `is ${kindOf(g)}; a group object is expected`);
    if (!isObject(g.device)) return g; // a preset id (the core checks it) or a value the core refuses with its path
    const ref = 'base' in g.device || 'preset' in g.device;
    const dev = ref ? resolve(g.device, presets.devices || [], `${path}.device`, 'device').value : structuredClone(g.device);
    const key = JSON.stringify(dev);
    if (!seen.has(key)) {
      const id = `custom-${seen.size + 1}`;
      const clean = ref ? withoutPresetKeys(dev) : dev;
      const from = g.device.base ?? g.device.preset;
      if (typeof clean.name !== 'string' || !clean.name) clean.name = `Custom ${seen.size + 1}${typeof from === 'string' ? ` (from ${from})` : ''}`;
      devices[id] = clean;
      seen.set(key, id);
    }
    return { ...g, device: seen.get(key) };
  });
  if (!isObject(sc.training)) fail('training', `is ${kindOf(sc.training)}; an object is expected (global_batch_size, precision, …)`);
  let profile = null;
  if (typeof sc.profile === 'string') {
    if (!profileIds.includes(sc.profile)) fail('profile', `"${sc.profile.slice(0, 60)}" is not a profile preset of this planner (${profileIds.join(', ') || 'none'})`);
    profile = { preset: sc.profile };
  } else if (sc.profile !== undefined && sc.profile !== null) {
    profile = { value: structuredClone(sc.profile) };
  }
  return { modelPreset: m.preset, model: m.value, clusterPreset: c.preset, cluster: c.value, devices, training: structuredClone(sc.training), profile };
}
