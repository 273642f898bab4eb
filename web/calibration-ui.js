// The "Calibrate with my measurements" box (docs/calibration.md).
import { h, clear, $, fmt, fmtSignedPct, fmtTime, scrollTable } from './dom.js';
import { CALIBRATION_KEYS, STACK_CALIBRATION_KEYS, MAX_RUNS_BYTES, RunsInputError, checkRunsText, calibrationFromScenario, fittedText, fittedValues, runsProblemText } from './calibration.js';
import { byId, deviceOf, isEmpty, scenario } from './state.js';
import { inputsChanged as onInputChanged, inputsReplaced as renderAllForms, state, subscribe } from './store.js';
import { call, restartWorker } from './engine.js';
import { clearErrors, clearFieldErrors, markFieldErrors, pathWithin, problemsOf, showError } from './errors.js';
import { runSearch } from './planner.js';

/** the calibrated devices in force, with their fitted values, and a button to remove them */
export function renderCalibrationStatus() {
  const status = $('#calibration-status');
  if (!status) return;
  const cal = state.calibration?.devices ?? {};
  const ids = Object.keys(cal);
  const stack = calibratedStack();
  $('#calibration-remove').disabled = !ids.length && !stack;
  status.classList.toggle('attached', ids.length > 0 || Boolean(stack));
  clear(status);
  if (!ids.length && !stack) {
    status.textContent = 'No calibration: every device uses its preset values.';
    return;
  }
  const used = new Set((state.cluster.groups || []).map((g) => g.device).filter((d) => typeof d === 'string'));
  const items = ids.map((id) => h('li', { 'data-device': id }, h('strong', {}, deviceOf(id)?.name ?? id), ` (${id}): ${fittedText(fittedValues(cal[id]))}`,
    used.has(id) ? '' : h('span', { class: 'muted' }, ' — not in this cluster, so unused')));
  if (stack) {
    const fitted = Object.entries(stack.calibration.fitted ?? {}).map(([key, v]) => ({ key, from: v?.from, to: stack[key] ?? v?.to }));
    items.push(h('li', { 'data-stack': String(stack.base ?? '') }, h('strong', {}, `stack ${stack.base ?? stack.name ?? ''}`), `: ${fittedText(fitted)}`));
  }
  status.append(`Calibrated ${[ids.length ? `device${ids.length === 1 ? '' : 's'}` : '', stack ? 'stack' : ''].filter(Boolean).join(' and ')}`
    + ' (estimates and searches use these values):', h('ul', { class: 'calibrated' }, items));
}

/** the training stack when it carries fitted overheads (calibrate's `calibration` key), else null */
function calibratedStack() {
  const st = state.training?.stack;
  return st && typeof st === 'object' && st.calibration && typeof st.calibration === 'object' ? st : null;
}

export function runsFieldError(message) {
  $('#runs-json').setAttribute('aria-invalid', 'true');
  $('#runs-json-err').textContent = message;
  $('#calibrate-paste').open = true;
}

export function clearRunsError() {
  $('#runs-json').removeAttribute('aria-invalid');
  $('#runs-json-err').textContent = '';
}

/** an {error} from calibrate: problems in the runs next to the runs field, scenario problems next to their fields */
export function showCalibrationError(error) {
  const problems = problemsOf(error);
  const inRuns = (p) => pathWithin(p.path, 'runs');
  const runs = problems.filter(inRuns);
  const others = problems.filter((p) => !inRuns(p));
  if (runs.length) runsFieldError(runs.map(runsProblemText).join('; '));
  if (others.length) { clearFieldErrors(); markFieldErrors(others); }
  // the runs' problems as next to the field (runs[0].plan, not the core's runs.runs[0].plan)
  showError(`The calibration failed:\n${problems.map((p) => (inRuns(p) ? runsSummaryText(p) : p.path ? `${p.path}: ${p.message}` : p.message)).join('\n')}`);
}

/** a runs problem in the error summary: "In the runs: runs[0].plan: …", or "The runs document …" */
function runsSummaryText(p) {
  const t = runsProblemText(p);
  return /^The runs document/.test(t) ? t : `In the runs: ${t}`;
}

/** a failed or refused calibration: no report of earlier runs stays with an Apply button */
function dropCalibrationReport() {
  state.calibrationRun = null;
  renderCalibrationReport();
}

export let calibrating = false;
let failed = false; // the last calibration failed: its messages stay until a later good result
export async function runCalibration() {
  if (calibrating) return;
  clearRunsError();
  clearErrors(['other']);
  let runs;
  try {
    runs = checkRunsText($('#runs-json').value);
  } catch (e) {
    if (!(e instanceof RunsInputError)) throw e;
    runsFieldError(e.message);
    dropCalibrationReport();
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
    dropCalibrationReport();
    return;
  } finally {
    calibrating = false;
    $('#calibrate-run').disabled = false;
  }
  if (res?.error) {
    failed = true;
    progress.textContent = 'The calibration failed: see the messages next to the runs.';
    showCalibrationError(res.error);
    dropCalibrationReport();
    return;
  }
  let calibration;
  try {
    calibration = calibrationFromScenario(refs, res.scenario, (id) => state.devices[id] ?? byId(state.presets.devices, id));
  } catch (e) {
    if (!(e instanceof RunsInputError)) throw e;
    progress.textContent = e.message;
    dropCalibrationReport();
    return;
  }
  clearErrors(['other']);
  failed = false;
  state.calibrationRun = { report: res.report, calibration };
  progress.textContent = '';
  renderCalibrationReport();
}

export const PARAM_ORDER = (k) => { const i = CALIBRATION_KEYS.indexOf(k); return i < 0 ? CALIBRATION_KEYS.length : i; };

/** the fit: fitted values, what was not fitted and why, each run's error before and after */
export function renderCalibrationReport() {
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
  // the software stack's overheads (shared by every run), after the devices
  for (const key of STACK_CALIBRATION_KEYS) {
    const p = r.stack?.parameters?.[key];
    if (p && typeof p === 'object') (p.status === 'fitted' ? fitted : notFitted).push({ device: `stack ${r.stack.stack}`, key, p });
  }
  box.append(scrollTable(h('table', { class: 'data calib', 'data-testid': 'calibration-fitted' },
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
  const err = (x) => h('span', { class: `err${Math.abs(x) > 0.1 ? ' big' : ''}` }, fmtSignedPct(x));
  // a run the fit predicts less well than the presets did (by more than half a point)
  const worse = (x) => Number.isFinite(x.error_before) && Number.isFinite(x.error_after) && Math.abs(x.error_after) > Math.abs(x.error_before) + 0.005;
  box.append(scrollTable(h('table', { class: 'data calib', 'data-testid': 'calibration-runs' },
    h('caption', {}, 'Iteration time per run: measured, and predicted before and after the fit (error = predicted / measured − 1)'),
    h('thead', {}, h('tr', {}, ['run', 'measured', 'before', 'after'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, runs.map((x) => h('tr', {},
      h('th', { scope: 'row' }, String(x.name ?? '')),
      h('td', {}, fmtTime(x.measured_s)),
      h('td', { 'data-error': String(x.error_before) }, fmtTime(x.predicted_before_s), ' ', err(x.error_before)),
      h('td', { 'data-error': String(x.error_after), 'data-worse': worse(x) ? 'true' : null }, fmtTime(x.predicted_after_s), ' ', err(x.error_after),
        worse(x) ? h('span', { class: 'muted' }, ' (worse)') : null)))))));
  const worseRuns = runs.filter(worse);
  if (worseRuns.length) {
    box.append(h('p', { class: 'muted note', 'data-testid': 'calibration-worse' },
      `${worseRuns.map((x) => x.name).join(', ')} ${worseRuns.length === 1 ? 'is' : 'are'} predicted less well after the fit: a fitted value is shared by every `
      + 'run on that device (and a stack\'s by every run), so the fit trades a few runs for the others. A run that matters most can be given alone, '
      + 'or with runs like it, to fit for it.'));
  }
  const mem = runs.filter((x) => Number.isFinite(x.peak_memory_GiB));
  if (mem.length) {
    box.append(scrollTable(h('table', { class: 'data calib', 'data-testid': 'calibration-memory' },
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
    disabled: isEmpty(run.calibration.devices) && isEmpty(run.calibration.inline) && !run.calibration.stack }, 'Plan with the calibrated scenario');
  apply.addEventListener('click', applyCalibration);
  box.append(h('div', { class: 'profile-row' }, apply));
}

/** "Plan with the calibrated scenario": the devices become the calibrated ones, then a search */
export async function applyCalibration() {
  const run = state.calibrationRun;
  if (!run) return;
  state.calibration = isEmpty(run.calibration.devices) ? null : { devices: structuredClone(run.calibration.devices) };
  for (const [i, dev] of Object.entries(run.calibration.inline)) {
    const g = state.cluster.groups[Number(i)];
    // an inline device (part of the cluster) is replaced whole, if the group still has it
    if (g && g.device && typeof g.device === 'object' && g.device.name === dev.name) g.device = structuredClone(dev);
  }
  // fitted stack overheads: the stack the runs were calibrated with, with the fitted values on top
  // (a training setting, so it travels in links and shows as a custom stack)
  if (run.calibration.stack) state.training.stack = structuredClone(run.calibration.stack);
  $('#calibrate-progress').textContent = 'The calibrated devices are in use: searching…';
  renderAllForms();  // the stack field shows the fitted overheads
  onInputChanged();
  await runSearch();
  $('#calibrate-progress').textContent = '';
}

export function removeCalibration() {
  state.calibration = null;
  // a calibrated stack goes back to the values it had before the fit
  const st = calibratedStack();
  if (st) {
    const back = { ...st };
    for (const [key, v] of Object.entries(st.calibration.fitted ?? {})) if (Number.isFinite(v?.from)) back[key] = v.from;
    delete back.calibration;
    const base = typeof back.base === 'string' ? back.base : null;
    const preset = base ? byId(state.presets.stacks ?? [], base) : null;
    // nothing left but the preset's own values: the preset id itself
    const same = preset && Object.entries(back).every(([k, v]) => k === 'base' || preset[k] === v);
    state.training.stack = same ? base : back;
    renderAllForms();
  }
  onInputChanged();
}

export async function loadRunsFile(file) {
  if (file.size > MAX_RUNS_BYTES) {
    runsFieldError(`${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a runs file is at most 4 MiB.`);
    return;
  }
  $('#runs-json').value = await file.text();
  $('#calibrate-paste').open = true;
  await runCalibration();
}

// a later good result (a search or estimate of the inputs as they are now): the failed calibration's
// messages are stale and go (the runs text stays, to be fixed and calibrated again)
subscribe('result', () => {
  if (!failed || !state.result?.plans?.length || state.stale) return;
  failed = false;
  clearRunsError();
  if ($('#calibrate-progress').textContent.startsWith('The calibration failed')) $('#calibrate-progress').textContent = '';
});

// the box follows the inputs (which calibrated devices the cluster uses) and a new set of inputs
subscribe('inputs', () => renderCalibrationStatus());
subscribe('forms', () => { renderCalibrationStatus(); renderCalibrationReport(); });
