// Share links: the current inputs (and the selected plan, unless it is stale) in the URL fragment,
// kept up to date after every edit (history.replaceState), and opening them.
import { $, fmtInt } from './dom.js';
import { encodeShare, decodeShare, isShareFragment, ShareLinkError, diff, applyDiff, MAX_FRAGMENT_CHARS } from './share.js';
import { DEFAULT_OPTIONS, DEFAULT_TRAINING, byId, cleanObject, isEmbed, isEmpty, presetCluster, presetModel, profilePreset, state } from './state.js';
import { attachedProfileContent } from './profile-ui.js';
import { clearErrors, inputsReplaced, problemsOf, selectedEstimate, showError, subscribe } from './store.js';
import { estimatePlan, stopSearch } from './planner.js';
import { DEFAULT_TOKENS } from './cost.js';

export function sharePayload() {
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
  const b = {};
  if ((state.budget.tokens ?? '') !== DEFAULT_TOKENS) b.t = state.budget.tokens ?? '';
  if (!isEmpty(state.budget.prices)) b.p = state.budget.prices;
  if (state.budget.idle) b.i = true;
  if (!isEmpty(b)) p.b = b;
  // the plan shown, unless the inputs changed since (a stale plan with new inputs would not open)
  const est = state.stale ? null : selectedEstimate();
  if (est?.plan) p.p = est.plan;
  return p;
}

/**
 * The link to the inputs and plan shown, and what it leaves out in words ('' when nothing). Each call
 * returns its own note: the address bar's updates and a click on "Copy link" overlap (the encoding
 * is asynchronous), and a note shared between them was cleared by one while the other showed it.
 */
export async function shareLink(page = 'index.html') {
  const payload = sharePayload();
  let frag = await encodeShare(payload);
  let note = '';
  if (frag.length > MAX_FRAGMENT_CHARS && payload.f && typeof payload.f === 'object') {
    // a large pasted profile does not fit in a link: leave it out, and say so
    delete payload.f;
    frag = await encodeShare(payload);
    note = `The attached profile is too large for a link (a link holds at most ${fmtInt(MAX_FRAGMENT_CHARS)} characters), so this link leaves it out: share the profile file with it.`;
  }
  return { url: new URL(`${page}#${frag}`, new URL('./', location.href)).href, note };
}

export const shareUrl = async (page = 'index.html') => (await shareLink(page)).url;

/** the copy status says what the link leaves out, and forgets a note that no longer applies */
export function showShareNote(note) {
  const el = $('#copy-status');
  if (note) el.textContent = note;
  else if (el.dataset.note) el.textContent = '';
  if (note) el.dataset.note = '1';
  else delete el.dataset.note;
}

let urlSeq = 0;
let urlTimer = 0;
/** the address bar follows the inputs: updated shortly after each edit */
export function scheduleShareUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(updateShareUrl, 150);
}

export async function updateShareUrl() {
  clearTimeout(urlTimer);
  const seq = ++urlSeq;
  try {
    const { url, note } = await shareLink();
    if (seq !== urlSeq) return; // a newer update is on its way
    showShareNote(note);
    $('#share-url').value = url;
    if (!isEmbed) history.replaceState(null, '', `${location.pathname}${location.search}#${url.split('#')[1]}`);
  } catch {
    // the link can always be made again with "Copy link"
  }
}

/** Applies a decoded payload. Everything is checked before anything changes (inputs are kept on error). */
export function applyPayload(p) {
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
  state.budget = { tokens: typeof p.b?.t === 'string' ? p.b.t : DEFAULT_TOKENS, prices: structuredClone(p.b?.p ?? {}), idle: p.b?.i === true };
  const content = attachedProfileContent();
  if (profile && content !== null && content !== undefined) $('#profile-json').value = `${JSON.stringify(content, null, 2)}\n`;
  inputsReplaced();
  return p.p || null;
}

export function snapshotInputs() {
  return structuredClone({ modelPreset: state.modelPreset, model: state.model, clusterPreset: state.clusterPreset,
    cluster: state.cluster, devices: state.devices, training: state.training, options: state.options, profile: state.profile,
    calibration: state.calibration, calibrationRun: state.calibrationRun, budget: state.budget });
}

/** Opens a share link: 'none' (no link), 'error' (refused, inputs kept), 'inputs' or 'plan'. */
let refusal = '';
/** why the last link was refused, with its fragment ('' if none was) */
export const refusedLinkMessage = () => refusal;

export async function openFragment(fragment) {
  if (!fragment || !isShareFragment(fragment)) return 'none';
  stopSearch();
  const before = snapshotInputs();
  let plan;
  try {
    const payload = await decodeShare(fragment);
    plan = applyPayload(payload);
  } catch (e) {
    Object.assign(state, before);
    inputsReplaced();
    const msg = e instanceof ShareLinkError ? e.message : `The share link could not be read (${e.message}).`;
    // the address bar moves on to the inputs shown: the refused link stays readable here
    const shown = fragment.length > 120 ? `${fragment.slice(0, 120)}… (${fmtInt(fragment.length)} characters)` : fragment;
    refusal = `${msg}\nThe link's fragment: ${shown}`;
    // an embed has no inputs of its own to keep: it says what the link is (main.js, embedLinkRefused)
    showError(isEmbed ? refusal : `${refusal}\nYour current inputs are unchanged and the planner works as usual.`, 'link');
    return 'error';
  }
  clearErrors(['link', 'inputs', 'other']);
  if (!plan) return 'inputs';
  const error = await estimatePlan(plan, 'link');
  if (!error) $('#share-url').value = location.href;
  // the link's plan does not fit its own inputs (a link from another planner version)
  else refusal = `the plan in the link does not fit the link's inputs in this version of the planner (${problemsOf(error).map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ') || error.message}).`;
  return error ? 'error' : 'plan';
}

// the address bar follows the inputs (shortly after each edit) and the plan on screen
subscribe('inputs', scheduleShareUrl);
subscribe('prices', scheduleShareUrl);
subscribe('result', updateShareUrl);
subscribe('selection', ({ reselected } = {}) => { if (reselected) updateShareUrl(); });
