// Share and export buttons, plan files.
import { h, clear, $, fmt } from './dom.js';
import { planJson, scenarioJson, topPlansCsv, chromeTrace } from './exports.js';
import { megatronArgs } from './megatron.js';
import { timelineSvg, timelinePng } from './render/timeline.js';
import { byId, deviceName, deviceOf, isEmbed, presetModel, scenario, state } from './state.js';
import { clearErrors, showError } from './errors.js';
import { selectedEstimate } from './store.js';
import { clusterOfResult, costOptions } from './cost-ui.js';
import { ensureTimeline, estimatePlan } from './planner.js';
import { shareLink, shareUrl, updateShareUrl } from './links.js';
import { inputsFromScenario, ScenarioFileError } from './scenario-file.js';
import { NonFiniteNumberError, parseJson } from './json-text.js';
import { onInputChanged, renderAllForms } from './forms.js';
import { attachedProfileContent } from './profile-ui.js';
import { stackOf } from './stock.js';
import { contextLine } from './context.js';
import { planScenario } from './plan-choices.js';

export function download(name, type, data) {
  const blob = data instanceof Blob ? data : new Blob([data], { type });
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, class: 'sr-only' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export async function copyText(text, what) {
  $('#share-url').value = text;
  try {
    await navigator.clipboard.writeText(text);
    $('#copy-status').textContent = `${what} copied to the clipboard.`;
  } catch {
    $('#share-url').select();
    $('#copy-status').textContent = `${what} is in the field above: copy it with Ctrl+C.`;
  }
}

const attr = (t) => String(t).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** context: what was planned, in the frame's title (a screen reader's name for it) */
export function embedCode(url, context = '') {
  return `<iframe src="${url}" title="${attr(context ? `Poseidon parallelism plan: ${context}` : 'Poseidon parallelism plan')}" width="100%" height="480" loading="lazy" class="poseidon-embed"></iframe>\n`
    + '<script>addEventListener("message", (e) => { if (e.data && e.data.type === "poseidon:resize") '
    + 'for (const f of document.querySelectorAll("iframe.poseidon-embed")) if (f.contentWindow === e.source) f.height = Math.min(4000, Math.max(200, Number(e.data.height) || 480)); });</script>\n';
}

/** the selected plan with its timeline (plans after the first are estimated again for it) */
async function selectedWithTimeline() {
  const est = await ensureTimeline(state.selected);
  if (!Array.isArray(est?.timeline) || !est.timeline.length) {
    $('#copy-status').textContent = 'The timeline of this plan could not be computed, so the file would be empty: select the plan again once the search has finished.';
    return null;
  }
  return est;
}

/** what the result on screen was planned for, in one line (web/context.js) */
const planContext = () => contextLine(planScenario(state.resultScenario ?? state.lastScenario ?? scenario(), selectedEstimate()?.plan), state.presets);

/** the full scenario of the result on screen (preset model and cluster resolved to their objects) */
function resultScenarioFull() {
  const sc = state.resultScenario ?? state.lastScenario ?? scenario();
  const model = typeof sc.model === 'string' ? byId(state.presets.models, sc.model) ?? presetModel() : sc.model;
  return { sc, model };
}

export function wireExports() {
  $('#copy-link').addEventListener('click', async () => {
    const { url, note } = await shareLink();
    if (!isEmbed) history.replaceState(null, '', `${location.pathname}${location.search}#${url.split('#')[1]}`);
    await copyText(url, 'Link');
    if (note) $('#copy-status').textContent += ` ${note}`;
  });
  $('#copy-embed').addEventListener('click', async () => copyText(embedCode(await shareUrl('embed.html'), planContext()), 'Embed code'));
  $('#export-plan').addEventListener('click', () => download('poseidon-plan.json', 'application/json',
    planJson(selectedEstimate(), { context: planContext(), version: state.version })));
  // the scenario the plan on screen was estimated for, as the page sent it to the core, and the
  // plan: `poseidon estimate S --plan P` gives the same numbers (issue 36 item 7)
  $('#export-scenario').addEventListener('click', () => {
    const sc = state.resultScenario ?? state.lastScenario;
    if (!sc || !selectedEstimate()) return;
    download('poseidon-scenario.json', 'application/json', scenarioJson(sc, { context: planContext(), version: state.version }));
    download('poseidon-plan.json', 'application/json', planJson(selectedEstimate(), { context: planContext(), version: state.version }));
    $('#copy-status').textContent = 'Downloaded poseidon-scenario.json and poseidon-plan.json: poseidon estimate poseidon-scenario.json --plan poseidon-plan.json gives the numbers on screen.';
  });
  $('#export-csv').addEventListener('click', () => download('poseidon-top-plans.csv', 'text/csv', topPlansCsv(state.result.plans)));
  $('#export-svg').addEventListener('click', async () => {
    const est = await selectedWithTimeline();
    if (!est) return;
    const svg = timelineSvg(est, { standalone: true, width: 1200, title: planContext() });
    download('poseidon-timeline.svg', 'image/svg+xml', `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(svg)}\n`);
  });
  $('#export-png').addEventListener('click', async () => {
    const est = await selectedWithTimeline();
    if (!est) return;
    timelinePng(est, { width: 1200, scale: 2, title: planContext() }).toBlob((blob) => download('poseidon-timeline.png', 'image/png', blob), 'image/png');
  });
  const trace = async () => {
    const est = await selectedWithTimeline();
    if (est) download('poseidon-trace.json', 'application/json', chromeTrace(est, 'Poseidon plan', { context: planContext() }));
    return Boolean(est);
  };
  $('#export-trace').addEventListener('click', trace);
  // "Open in Perfetto": the trace is downloaded and the page says how to open it there; nothing is
  // sent to Perfetto (or anywhere) by this page
  $('#open-perfetto').addEventListener('click', async () => {
    if (!(await trace())) return;
    $('#perfetto-help').hidden = false;
    $('#perfetto-link').focus();
  });
  $('#export-megatron').addEventListener('click', () => {
    const { sc, model } = resultScenarioFull();
    const cluster = clusterOfResult();
    const r = megatronArgs(selectedEstimate(), { model, training: sc.training }, {
      cluster, modelId: typeof sc.model === 'string' ? sc.model : state.modelPreset, tokens: costOptions().tokens, version: state.version,
      stack: stackOf(sc.training), deviceOf, deviceName, context: planContext() });
    const box = $('#megatron-box');
    const pre = $('#megatron');
    const notes = clear($('#megatron-notes'));
    box.hidden = false;
    pre.hidden = false;
    if (!r.ok) {
      pre.textContent = `No command for this plan: ${r.reasons.join('; ')}.\n`;
      return;
    }
    for (const u of r.unsupported) notes.append(h('li', { class: 'unsupported' }, `Stock Megatron-LM cannot run this part as planned: ${u}.`));
    for (const n of r.notes) notes.append(h('li', {}, n));
    pre.textContent = r.text;
    download('poseidon-megatron.sh', 'text/x-shellscript', r.script);
  });
}

/**
 * A scenario file (as the CLI reads it: model, cluster, training, optional profile) replaces the
 * model, cluster, custom devices, training and profile inputs and re-plans; search options, budget
 * and prices stay. A file that is not one is refused with the JSON path of the problem, the inputs kept.
 */
export async function loadScenarioFile(file, text = null) {
  clearErrors();
  if (file.size > 4 * 1024 * 1024) { showError(`${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a scenario file is at most 4 MiB.`); return false; }
  let inputs;
  try {
    inputs = inputsFromScenario(text ?? await file.text(), state.presets, state.profilePresets.map((p) => p.id));
  } catch (e) {
    if (!(e instanceof ScenarioFileError)) throw e;
    showError(`${file.name} is not a scenario file: ${e.message}\nYour inputs are unchanged.`);
    return false;
  }
  Object.assign(state, inputs);
  if (inputs.profile?.value !== undefined) inputs.profile.label = `profile from ${file.name}`;
  state.calibration = null; // a calibration belongs to the devices of the inputs before the file
  state.calibrationRun = null;
  const content = attachedProfileContent();
  if (inputs.profile && content !== null && content !== undefined) $('#profile-json').value = `${JSON.stringify(content, null, 2)}\n`;
  renderAllForms();
  $('#copy-status').textContent = `Scenario loaded from ${file.name}.`;
  onInputChanged();
  return true;
}

export async function loadPlanFile(file) {
  clearErrors();
  if (file.size > 4 * 1024 * 1024) { showError(`${file.name} is ${fmt(file.size / 1048576, 1)} MiB; a plan file is at most 4 MiB.`); return; }
  let obj;
  try {
    obj = parseJson(await file.text());
  } catch (e) {
    showError(e instanceof NonFiniteNumberError ? `${file.name}: ${e.message}.` : `${file.name} is not a plan file: it is not valid JSON (${e.message}).`);
    return;
  }
  // a plan, an estimate (with "plan"), or a plan() result (with "plans")
  const plan = obj?.stages ? obj : obj?.plan?.stages ? obj.plan : obj?.plans?.[0]?.plan?.stages ? obj.plans[0].plan : null;
  // a scenario file dropped on the page (or chosen as a plan) loads as a scenario
  if (!plan && obj && typeof obj === 'object' && 'model' in obj && 'cluster' in obj) { await loadScenarioFile(file, JSON.stringify(obj)); return; }
  if (!plan || typeof plan !== 'object') {
    showError(`${file.name} is not a plan file: it has no "stages" (a plan, an estimate or a search result is expected).`);
    return;
  }
  await estimatePlan(plan, 'file');
  updateShareUrl();
}
