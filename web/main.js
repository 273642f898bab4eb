// Poseidon page: wiring and start-up. Never calls wasm itself: everything that needs the core
// goes through worker.js (engine.js is the client).
import { h, $, $$ } from './dom.js';
import { modelFromHfConfig, HfConfigError } from './hf.js';
import { applyDefaults, byId, isEmbed, scenario, searchOptions } from './state.js';
import { perf, setResult, setStatus, state, subscribe } from './store.js';
import { loadFirstView, startEngine } from './engine.js';
import { DEVICE_SKIP } from './fields.js';
import { applyChanges, onInputChanged, renderAllForms, renderClusterForm, renderModelForm, setClusterPreset, setModelPreset } from './forms.js';
import { touchProfileSelect, attachPresetProfile, attachProfileText, loadProfileFile, loadProfilePresets, removeProfile, renderProfileForm, renderProfileStatus } from './profile-ui.js';
import { loadRunsFile, removeCalibration, runCalibration } from './calibration-ui.js';
import { wireRecord } from './record-run.js';
import { wirePhoneBar } from './phone-bar.js';
import { wireSummaryPin } from './summary-pin.js';
import { revealPane, wirePhoneTabs } from './phone-tabs.js';
import { clearErrors, showError } from './errors.js';
import { cancelSearch, runSearch, setRunning } from './planner.js';
import { openFragment, refusedLinkMessage, scheduleShareUrl } from './links.js';
import { loadPlanFile, loadScenarioFile, wireExports } from './export-ui.js';
import { onApplyVariant, postHeight, renderCosts, showFastestStock, timelineControl } from './results.js';
import { wireWhatIf } from './whatif-ui.js';
import './compare-ui.js'; // the comparison follows the top plans (it subscribes to the store)
import { wireCostForm } from './cost-ui.js';
import { GLOSSARY } from './glossary.js';
import { installScrollHints } from './scroll-hint.js';

function wireTheme() {
  const btn = $('#theme');
  const order = ['auto', 'light', 'dark'];
  const apply = (t) => {
    if (t === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = t;
    // the visible label is the accessible name (WCAG 2.5.3: a voice user says what they see);
    // the tooltip spells it out and says what a press does
    btn.textContent = `Theme: ${t}`;
    btn.title = `Colour theme: ${t === 'auto' ? 'automatic' : t} (press for ${order[(order.indexOf(t) + 1) % order.length]})`;
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
    // a custom device's price is entered in the price table, not copied from the preset it started from
    for (const k of ['price_usd_per_gpu_hour', 'price_source', 'price_as_of']) delete dev[k];
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
      $('#hf-config').removeAttribute('aria-invalid');
      clearErrors();
      onInputChanged();
    } catch (e) {
      if (!(e instanceof HfConfigError)) throw e;
      // the model on screen stays as it was: the message says what the config lacks
      notes.textContent = `Not imported: ${e.message}`;
      showError(e.message);
      $('#hf-config').setAttribute('aria-invalid', 'true');
    }
  });
  $('#profile-preset').addEventListener('change', touchProfileSelect);
  $('#profile-use-preset').addEventListener('click', attachPresetProfile);
  $('#profile-remove').addEventListener('click', removeProfile);
  $('#profile-attach').addEventListener('click', () => attachProfileText($('#profile-json').value, 'pasted profile'));
  $('#profile-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadProfileFile(f); e.target.value = ''; });
  $('#calibrate-run').addEventListener('click', runCalibration);
  wireRecord();
  $('#calibration-remove').addEventListener('click', removeCalibration);
  $('#runs-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadRunsFile(f); e.target.value = ''; });
  $('#run').addEventListener('click', () => runSearch());
  $('#cancel').addEventListener('click', cancelSearch);
  $('#cancel-bar').addEventListener('click', cancelSearch);
  $('#phone-bar-cancel').addEventListener('click', cancelSearch);
  wirePhoneTabs();
  wirePhoneBar();
  wireSummaryPin();
  $('#plan-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadPlanFile(f); e.target.value = ''; });
  $('#scenario-file').addEventListener('change', (e) => { const f = e.target.files?.[0]; if (f) loadScenarioFile(f); e.target.value = ''; });
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
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) runSearch();
  });
  // a link pasted into the address bar (the page's own updates use replaceState: no hashchange)
  window.addEventListener('hashchange', async (e) => {
    // the hash as changed (the page may rewrite the address bar before this event runs)
    const opened = await openFragment(new URL(e.newURL).hash);
    if (isEmbed && opened === 'error') { embedLinkRefused(); return; }
    if (opened === 'error') scheduleShareUrl();
    if (opened !== 'plan' && opened !== 'none') runSearch({ live: true });
  });
  // in-page links (skip links, "Problems", "Inputs ↓", the phone bar's): to their target (on a
  // phone, its tab shown first), with the focus, and without putting "#results" or "#error" in the
  // address bar in place of the share link
  document.addEventListener('click', (e) => {
    const a = e.target.closest?.('a[href^="#"]');
    const target = a && document.getElementById(a.getAttribute('href').slice(1));
    if (!target || e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    revealPane(target);
    if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
    target.scrollIntoView({ block: 'start' });
    target.focus({ preventScroll: true });
  });
  // results: sorting, the timeline's zoom buttons, advice variants, cost inputs
  $('#stock-best').addEventListener('click', showFastestStock);
  $('#sort-plans').addEventListener('change', (e) => { state.sortBy = e.target.value; renderCosts(); });
  $('#zoom-in').addEventListener('click', () => timelineControl()?.zoom(0.5));
  $('#zoom-out').addEventListener('click', () => timelineControl()?.zoom(2));
  $('#zoom-reset').addEventListener('click', () => timelineControl()?.reset());
  onApplyVariant((v) => { applyChanges(v.changes); });
  wireCostForm();
  wireWhatIf();
}

function renderGlossary() {
  const dl = $('#glossary');
  for (const [term, text] of Object.entries(GLOSSARY)) dl.append(h('dt', {}, term), h('dd', {}, text));
}

/**
 * A plain visit: the inputs as the build made them (engine.js's loadFirstView), and its result
 * while the engine still loads if the inputs are those it searched; the engine's search of the
 * same inputs replaces it.
 */
function showFirstView(fv) {
  applyDefaults(fv.presets);
  renderAllForms();
  const sc = scenario();
  if (JSON.stringify(sc) !== JSON.stringify(fv.scenario) || JSON.stringify(searchOptions()) !== JSON.stringify(fv.options)) return;
  setResult(fv.result, sc);
  if (perf.firstBestMs === null) perf.firstBestMs = performance.now();
  perf.firstView = true; // read by the tests
  setStatus({ progress: 'Found when this page was built, by the same engine on these inputs; the engine is checking it…' });
}

async function start() {
  // phones: the inputs start as closed sections under the results (an error opens its section)
  if (matchMedia('(max-width: 900px)').matches) for (const d of $$('details.sec')) d.open = false;
  renderGlossary();
  installScrollHints();
  // the progress line is one line in the sticky summary: its full text is also its tooltip
  const progress = $('#progress');
  new MutationObserver(() => { progress.title = progress.textContent; }).observe(progress, { childList: true, characterData: true, subtree: true });
  wireTheme();
  wireInputs();
  wireExports();
  if (isEmbed) {
    wireEmbedDetails();
    $('#full-planner').href = new URL(`index.html${location.hash}`, location.href).href;
    new ResizeObserver(postHeight).observe(document.documentElement);
  }
  // the link the page was opened with (a first view's result rewrites the address as any result does)
  const openedHash = location.hash;
  const engine = startEngine(); // started by boot.js already
  const early = await Promise.race([loadFirstView(), engine.then(() => null, () => null)]);
  if (early) showFirstView(early);
  let info;
  try {
    info = await engine;
  } catch (e) {
    showError(`${e.message}\nThe page needs WebAssembly and module workers (a current Chrome, Firefox or Safari), served over http(s).`);
    $('#version').textContent = 'engine not loaded';
    return;
  }
  perf.readyMs = performance.now();
  state.version = info.version;
  $('#version').textContent = `engine ${info.version}`;
  const profilesLoaded = loadProfilePresets(info.presets?.profiles).then(() => renderProfileForm());
  if (!early || early.version !== info.version) {
    // (a first view of another version: its result goes; the engine's search makes this one's)
    if (early) setResult(null, null);
    applyDefaults(info.presets);
    renderAllForms();
  }
  setRunning(false);
  await profilesLoaded; // a link may name a profile preset: its contents show in the profile box
  window.__poseidonReady = true;
  const opened = await openFragment(openedHash);
  // live planning: the inputs (the link's or the defaults) are planned at once; a link's plan is shown as it is
  if (isEmbed && opened === 'error') embedLinkRefused();
  else if (opened !== 'plan') runSearch({ live: true });
  // the service worker caches the whole site (1.5 MB): not while the first plan is being made
  afterFirstPlan(registerServiceWorker);
}

/** fn runs once the first plan is on screen (or the first search has ended without one), when the page is idle */
function afterFirstPlan(fn) {
  const idle = () => (window.requestIdleCallback ? requestIdleCallback(() => fn(), { timeout: 2000 }) : setTimeout(fn, 0));
  if (!state.running) { idle(); return; }
  const off = subscribe('status', () => {
    if (state.running) return;
    off();
    idle();
  });
}

/**
 * An embed whose link the page refuses (corrupted, truncated, a newer format) shows the message in
 * place of the plan (docs/embedding.md): it has no inputs to fall back on, and planning the
 * defaults would pass another plan off as the embedded one.
 */
function embedLinkRefused() {
  setResult(null, null);
  const el = $('#best-plan');
  // said to a reader of someone else's page: nothing of theirs is kept or lost, the link is what
  // is wrong, and only whoever embedded it can replace it
  el.textContent = `This embedded plan cannot be shown: ${refusedLinkMessage()}`;
  el.append(h('span', { class: 'costline', 'data-testid': 'embed-refused-hint' },
    'The page that embeds it needs a new embed code: in the planner, open the plan and press Copy embed code.'));
  el.dataset.refused = 'true';
  // no empty panels under the message
  document.documentElement.classList.add('embed-refused');
  $('#error-jump').hidden = true;
  setStatus({ progress: '' });
}

/** the embed's details (what bounds the iteration, GPUs used, the stage table, memory) on request */
function wireEmbedDetails() {
  const btn = $('#embed-details');
  const show = (on) => {
    document.documentElement.classList.toggle('embed-details', on);
    btn.setAttribute('aria-expanded', String(on));
    btn.textContent = on ? 'Hide the details' : 'Show the details';
  };
  show(new URLSearchParams(location.search).get('details') === '1');
  btn.addEventListener('click', () => show(btn.getAttribute('aria-expanded') !== 'true'));
}

start();
