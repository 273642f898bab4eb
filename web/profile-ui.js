// The "Measured profile" box (docs/formats.md, "Profile").
import { h, clear, $, fmt } from './dom.js';
import { PROFILE_PRESET_IDS, MAX_PROFILE_BYTES, ProfileInputError, parseProfileText, clusterDeviceNames, profileDevices, profileMatch } from './profile.js';
import { profilePreset } from './state.js';
import { inputsChanged as onInputChanged, showError, state, subscribe } from './store.js';
import { coreRefuses } from './errors.js';

let profileSelectTouched = false;
/** the user chose a preset in the list: keep it selected over the matching one */
export function touchProfileSelect() { profileSelectTouched = true; }

/** the attached profile's contents when the page knows them (a preset's are fetched from the site) */
export function attachedProfileContent() {
  if (!state.profile) return null;
  if (state.profile.preset) return profilePreset(state.profile.preset)?.content ?? null;
  return state.profile.value;
}

export const deviceNames = () => clusterDeviceNames(state.cluster, state.presets.devices, state.devices);

export function presetMatches() {
  const names = deviceNames();
  return state.profilePresets.map((p) => ({ ...p, match: profileMatch(p.content, { id: p.id, modelPreset: state.modelPreset, deviceNames: names }) }));
}

/** the preset list (matching presets marked), the attached profile's status, the buttons */
export function renderProfileForm() {
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
  renderProfileStatus(list);
}

/**
 * The attached profile's status: what it is, which of its devices this cluster uses, whether it
 * was made for another model (a preset's id names its model), and whether the core refuses it
 * (then the search stops until it is fixed or removed, and the status must not read as in use).
 */
export function renderProfileStatus(list = presetMatches()) {
  const status = $('#profile-status');
  const hint = $('#profile-hint');
  if (!status || !hint) return;
  const refused = Boolean(state.profile) && coreRefuses('profile');
  status.classList.toggle('attached', Boolean(state.profile) && !refused);
  status.classList.toggle('refused', refused);
  if (!state.profile) {
    const full = list.find((p) => p.match.full);
    status.textContent = 'No profile: every time comes from the analytic model.';
    hint.textContent = full ? `The preset “${full.content?.name ?? full.id}” matches this model and cluster: attach it to use its measured times.` : '';
    return;
  }
  const content = attachedProfileContent();
  const name = typeof content?.name === 'string' ? content.name : null;
  const what = state.profile.preset ? `preset “${name ?? state.profile.preset}” (${state.profile.preset})` : `${state.profile.label}${name ? ` “${name}”` : ''}`;
  if (refused) {
    status.textContent = `Attached but refused: ${what}. The planner does not accept it (the message is under the profile box), so nothing is planned until it is fixed or removed.`;
    hint.textContent = '';
    return;
  }
  const devs = profileDevices(content);
  const names = deviceNames();
  const used = devs.filter((d) => names.has(d));
  const applies = !devs.length ? ''
    : used.length ? ` It has measurements for ${used.join(', ')} in this cluster.`
      : ` None of its devices (${devs.join(', ')}) is in this cluster, so every time stays analytic.`;
  const preset = state.profile.preset ? list.find((p) => p.id === state.profile.preset) : null;
  const otherModel = preset && !preset.match.model
    ? ` It was measured for another model than ${state.modelPreset ? `“${state.modelPreset}”` : 'this custom one'} (its id names the model it is for): its block times are that model's.` : '';
  status.textContent = `Attached: ${what}.${applies}${otherModel}`;
  hint.textContent = 'The stage table of a result says, per stage, which numbers are measured, interpolated or analytic.';
}

export function profileFieldError(message) {
  $('#profile-json').setAttribute('aria-invalid', 'true');
  $('#profile-json-err').textContent = message;
  $('#profile-paste').open = true;
}

export function attachProfile(profile) {
  state.profile = profile;
  $('#profile-json').removeAttribute('aria-invalid');
  $('#profile-json-err').textContent = '';
  renderProfileForm();
  onInputChanged();
}

export function attachPresetProfile() {
  const id = $('#profile-preset').value;
  if (!id) return;
  const content = profilePreset(id)?.content;
  if (content) $('#profile-json').value = `${JSON.stringify(content, null, 2)}\n`;
  attachProfile({ preset: id });
}

/** Attaches pasted/uploaded text. Only JSON syntax is checked here; the core checks the rest (shown next to the field). */
export function attachProfileText(text, label) {
  let value;
  try {
    value = parseProfileText(text);
  } catch (e) {
    if (!(e instanceof ProfileInputError)) throw e;
    // the box's text is not what is attached: say that the attached profile stays as it was
    const kept = state.profile ? ' The profile attached before stays attached.' : '';
    profileFieldError(`${e.message}${kept}`);
    showError(`${e.message}${kept}`);
    return false;
  }
  attachProfile({ value, label });
  return true;
}

export function removeProfile() {
  state.profile = null;
  $('#profile-json').removeAttribute('aria-invalid');
  $('#profile-json-err').textContent = '';
  renderProfileForm();
  onInputChanged();
}

export async function loadProfileFile(file) {
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
export async function loadProfilePresets(fromCore) {
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

// the box follows the inputs (the matching presets), a new set of inputs, and the core's verdict on the profile
subscribe('inputs', () => renderProfileForm());
subscribe('forms', () => renderProfileForm());
subscribe('errors', () => renderProfileStatus());
