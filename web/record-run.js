// "Record what this plan measured" (issue 36 item 8), in the Calibrate box: the plan on screen,
// its measured seconds per iteration and, optionally, its peak memory become a run of RUNS.json
// (the runs field below), so calibrating needs no hand-written JSON. "Add and calibrate" fits at once.
import { $ } from './dom.js';
import { appendRun, recordedRun, RunsInputError } from './calibration.js';
import { modelForScenario } from './state.js';
import { selectedEstimate, state, subscribe } from './store.js';
import { runCalibration } from './calibration-ui.js';

function setError(id, message) {
  const input = $(`#${id}`);
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
  $(`#${id}-err`).textContent = message;
}

/** which plan a run would record: the selected plan of the result on screen, unless it is stale */
function planToRecord() {
  if (!state.result || state.stale) return null;
  return selectedEstimate();
}

export function renderRecord() {
  const est = planToRecord();
  const i = state.selected;
  $('#record-plan').textContent = est
    ? `The plan on screen: ${i > 0 ? `plan #${i + 1}` : 'the best plan'}, ${est.stages?.length ?? 0} stage${est.stages?.length === 1 ? '' : 's'} on ${est.num_gpus} GPUs, micro-batch ${est.plan?.micro_batch_size} × ${est.plan?.num_micro_batches}.`
    : state.result ? 'The plan on screen is outdated: wait for the new one (or press Find plans), then record it.' : 'No plan on screen yet.';
  $('#record-add').disabled = !est;
  $('#record-calibrate').disabled = !est;
}

/** the run for the plan on screen, with the model and batch it was planned for when the inputs now differ */
function buildRun() {
  const est = planToRecord();
  const sc = state.resultScenario ?? {};
  const extra = { name: `${state.selected > 0 ? `plan #${state.selected + 1}` : 'best plan'} recorded ${new Date().toISOString().slice(0, 16).replace('T', ' ')}` };
  const batch = sc.training?.global_batch_size;
  if (batch !== undefined && batch !== state.training.global_batch_size) extra.global_batch_size = batch;
  if (sc.model !== undefined && JSON.stringify(sc.model) !== JSON.stringify(modelForScenario())) extra.model = sc.model;
  return recordedRun(est?.plan, $('#record-time').value, $('#record-memory').value, extra);
}

async function addRun(calibrate) {
  setError('record-time', '');
  setError('record-memory', '');
  const status = $('#record-status');
  let text;
  try {
    text = appendRun($('#runs-json').value, buildRun());
  } catch (e) {
    if (!(e instanceof RunsInputError)) throw e;
    const field = /^Peak memory/.test(e.message) ? 'record-memory' : /^Measured seconds/.test(e.message) ? 'record-time' : null;
    if (field) setError(field, e.message);
    status.textContent = `Not added: ${e.message}`;
    return;
  }
  $('#runs-json').value = text;
  const n = JSON.parse(text).runs.length;
  $('#record-time').value = '';
  $('#record-memory').value = '';
  status.textContent = `Added: ${n} run${n === 1 ? '' : 's'} in the runs below.${calibrate ? ' Calibrating…' : ' Press Calibrate (or Add and calibrate) to fit the devices to them.'}`;
  if (calibrate) {
    await runCalibration();
    status.textContent = `Added: ${n} run${n === 1 ? '' : 's'} in the runs below, calibrated: see the fit below.`;
  }
}

export function wireRecord() {
  $('#record-add').addEventListener('click', () => addRun(false));
  $('#record-calibrate').addEventListener('click', () => addRun(true));
}

// the plan it records follows the result on screen
for (const topic of ['result', 'selection', 'stale']) subscribe(topic, renderRecord);
