// The results column: the sticky summary (best plan, time to train and cost, stale mark), the
// advice when nothing fits, top plans (sortable by time or cost), and the selected plan: what
// bounds it, GPUs used, stages, memory, a zoomable timeline. Every listed plan gets its timeline
// (the search returns it for the best plan only; the others are estimated again on selection).
import { h, clear, $, fmtInt, fmtPct, fmtTime } from './dom.js';
import { stageDiagram } from './render/stages.js';
import { timelineTable } from './render/timeline.js';
import { zoomableTimeline } from './render/zoom.js';
import { topPlansTable, baselinesTable, statsList, stagesTable, replicaMicroBatch } from './render/tables.js';
import { memoryBreakdown } from './render/memory.js';
import { criticalPathView, gpuUsageView, adviceView } from './render/explain.js';
import { hasMeasuredSource } from './profile.js';
import { batchHint, hasBreakdown } from './explain.js';
import { contextLine } from './context.js';
import { planScenario } from './plan-choices.js';
import { formatCost, formatDuration, parseTokens, sortPlans, tokensPhrase, trainingCost, unpricedNote } from './cost.js';
import { scheduleLabel } from './exports.js';
import { costOptions, clusterOfResult } from './cost-ui.js';
import { equivalentPlans } from './compare.js';
import { gloss } from './glossary.js';
import { deviceName, isEmbed, withDeviceNames } from './state.js';
import { emit, listPlan, selectPlan, selectedEstimate, state, subscribe } from './store.js';
import { ensureTimeline, timelineRequests } from './planner.js';
import { fastestStock, stockCheck } from './stock.js';

const abbr = (text, term = text) => h('abbr', { title: gloss(term) }, text);

/** time to train and cost of one plan with the current budget and prices */
export const costOf = (est, sc = state.resultScenario) => trainingCost(est, clusterOfResult(sc), costOptions());

/** with a batch tolerance the plan may train another global batch than the one asked: say which */
export function trainedBatchNote(est, training) {
  const trained = (est?.plan?.micro_batch_size ?? 0) * (est?.plan?.num_micro_batches ?? 0);
  const asked = training?.global_batch_size;
  if (!trained || !Number.isFinite(asked) || trained === asked) return '';
  const tol = Number(training?.global_batch_tolerance) || 0;
  return ` · global batch ${fmtInt(trained)} (${fmtInt(asked)} asked, within ±${+(100 * tol).toFixed(2)} %)`;
}

/**
 * Which plan a panel describes: the headline and every panel of the selected plan carry it as
 * data-plan-json, so a test (and a reader of the DOM) can see that they name one plan.
 */
export const planKey = (est) => (est?.plan ? JSON.stringify(est.plan) : '');

/** sc: the scenario the plan was planned for (during a search, the search's; else the result's) */
export function bestSummary(est, { partial = false, label = 'Best plan', sc = state.resultScenario } = {}) {
  const el = clear($('#best-plan'));
  el.dataset.planJson = planKey(est);
  if (!est) {
    el.textContent = state.result?.plans ? 'No feasible plan found for these inputs: see below what would make one fit.' : 'No plan yet.';
    return;
  }
  const stages = est.stages || [];
  // what was planned, first: a headline seen alone (an embed, a screenshot) says what it is for
  const context = contextLine(planScenario(sc, est.plan), state.presets);
  if (context) el.append(h('span', { class: 'context', 'data-testid': 'context-line' }, context));
  // the headline metrics as cards (a line of text on a phone); the text reads as before: "… · iteration 1.2 s · …"
  const card = (...kids) => h('span', { class: 'metric' }, ...kids);
  const sep = () => h('span', { class: 'sep', 'aria-hidden': 'true' }, ' · ');
  // the headline is one block: pinned, it is cut to two lines, three on a phone (style.css, .summary.pinned)
  el.append(h('span', { class: 'headline' },
    h('strong', { class: 'plan-label' }, `${label}: `),
    h('span', { class: 'metrics' },
      card(h('span', { class: 'tps', 'data-testid': 'best-tokens' }, `${fmtInt(est.tokens_per_s)} tokens/s`)),
      sep(), card(`iteration ${fmtTime(est.iteration_time_s)}`), sep(), card(abbr('MFU'), ` ${fmtPct(est.mfu)}`),
      sep(), card(`${est.num_gpus} GPU${est.num_gpus === 1 ? '' : 's'}`),
      sep(), card(`${stages.length} stage${stages.length === 1 ? '' : 's'}`,
        // the schedule may wrap: "(interleaved 1F1B, 2 chunks per stage)" on one line widened a phone's page
        (est.plan?.virtual_stages ?? 1) > 1 ? h('span', { class: 'schedule' }, ` (${scheduleLabel(est)})`) : ''),
      sep(), card(`micro-batch ${replicaMicroBatch(est)} per replica`)),
    trainedBatchNote(est, sc?.training),
    est.memory_fits === false ? ' · does not fit in memory' : '',
    // the Megatron-LM command of this plan needs nothing stock Megatron-LM lacks (stock.js); its place is
    // kept for every plan shown (style.css, .badge-slot), so the summary keeps its height when a search ends
    h('span', { class: 'badge-slot', 'data-testid': 'badge-slot' },
      partial ? h('span', { class: 'partial' }, ' (best so far)') : '', stockBadge(est, sc, partial))));
  const c = costOf(est, sc);
  const o = costOptions();
  // a token budget typed but not a number: say why the days and the total are missing
  const typed = String(state.budget?.tokens ?? '').trim();
  const badTokens = typed !== '' && Number.isNaN(parseTokens(typed));
  el.append(h('span', { class: 'costline', 'data-testid': 'cost-summary', 'data-partial': String(c.partial), title: unpricedNote(c) },
    o.tokens ? `${tokensPhrase(o.tokens)} in ${formatDuration(c.seconds)} · ` : '',
    `${formatCost(c)} per 1M tokens`, o.tokens ? ` · ${formatCost(c, 'totalUsd')} in all` : '',
    ` (${fmtInt(c.gpus)} GPU${c.gpus === 1 ? '' : 's'} at ${formatCost(c, 'usdPerHour')}/hour${c.partial ? `; no price for ${(c.missingLabels ?? c.missing).join(', ')}, not counted` : ''}`
    + `${c.invalid?.length ? `; the price of ${c.invalid.join(', ')} is not a valid price: fix it under Time to train and cost` : ''}`
    + `${badTokens ? `; the token budget "${typed.slice(0, 40)}" is not a number of tokens, so no time to train or total: fix it under Time to train and cost` : ''})`));
  if (est.memory_fits === false && est.problems?.length) el.append(h('div', { class: 'muted' }, est.problems.join('; ')));
}

/**
 * "runs on stock Megatron-LM" where its Megatron-LM command needs nothing stock Megatron-LM lacks
 * (stock.js); a layout that needs Megatron-Core's experimental --pipeline-model-parallel-layout says so
 */
function stockBadge(est, sc, partial) {
  if (partial) return '';
  const check = stockCheck(est, sc);
  if (!check.ok) return '';
  return h('span', { class: 'badge', 'data-testid': 'stock-badge', 'data-layout': String(check.layout),
    title: `its Megatron-LM command (Exports) runs on stock Megatron-LM as planned${check.layout ? ', with Megatron-Core\'s --pipeline-model-parallel-layout for its uneven layer split (experimental in Megatron-Core)' : ''}` },
  check.layout ? 'runs on stock Megatron-LM (layout flag)' : 'runs on stock Megatron-LM');
}

/** the stale mark: the result stays visible, dimmed, with a line that says why and what comes next */
export function renderStale() {
  const stale = Boolean(state.stale && state.result);
  $('#results').classList.toggle('stale', stale);
  const s = $('#stale');
  s.hidden = !stale;
  s.textContent = stale ? `Outdated: ${state.staleNext ?? 're-planning…'}` : '';
  s.title = gloss('stale');
}

let timeline = null; // the zoom controller of the timeline on screen
const PLAN_PANELS = ['#stage-diagram', '#stage-table', '#timeline-table', '#memory-breakdown', '#critical-path', '#gpu-usage', '#timeline'];

/**
 * sources: show where each stage's numbers come from (a profile was attached, or the core says
 * some are measured); sc and result: the scenario and search result the plan belongs to.
 */
export function renderPlan(est, { timeline: drawTimeline = true, sources = false, pending = false, searching = false, sc = state.resultScenario, result = state.result } = {}) {
  const box = $('#timeline');
  timeline?.destroy();
  timeline = null;
  const key = planKey(est);
  for (const id of PLAN_PANELS) {
    clear($(id));
    $(id).dataset.planJson = key;
  }
  const note = $('#timeline-note');
  note.textContent = '';
  $('#zoom-range').textContent = '';
  if (!est) return;
  // the panels name devices as the inputs do (the core's ids stay in the files and data-plan-json)
  const shown = namedEstimate(est);
  $('#stage-diagram').append(stageDiagram(shown));
  $('#memory-breakdown').append(memoryBreakdown(shown));
  $('#stage-table').append(stagesTable(shown, { sources: sources || hasMeasuredSource(est) }));
  $('#critical-path').append(criticalPathView(shown, { searching }));
  $('#gpu-usage').append(gpuUsageView(shown, namedCluster(clusterOfResult(sc)), result, sc?.training?.global_batch_size));
  // while searching only the stages are redrawn: the timeline can have thousands of bars
  if (drawTimeline && Array.isArray(est.timeline) && est.timeline.length) {
    timeline = zoomableTimeline(box, est, {
      onDraw: (svg) => {
        // a large timeline is aggregated (render/timeline.js): say so under the figure too
        note.textContent = svg.getAttribute('data-note') ?? '';
        $('#zoom-range').textContent = timeline?.describe() ?? '';
      },
    });
    $('#timeline-table').append(timelineTable(est));
  } else {
    box.append(h('p', { class: 'muted' }, pending ? 'Drawing the timeline of this plan…' : 'The timeline is drawn when the search ends.'));
  }
}

/** the estimate with device names in place of ids, for the panels (never for files) */
export function namedEstimate(est) {
  if (!Array.isArray(est?.stages)) return est;
  return { ...est, stages: est.stages.map((st) => ({ ...st, device: deviceName(st.device),
    ...(Array.isArray(st.replicas) ? { replicas: st.replicas.map((r) => ({ ...r, device: deviceName(r.device) })) } : {}) })),
  // the core's notes name devices by id ("v100-sxm2-32gb has no bf16")
  ...(Array.isArray(est.notes) ? { notes: est.notes.map((n) => withDeviceNames(String(n))) } : {}) };
}

/** the core's advice with devices named as the inputs name them (its labels say "NVIDIA A100 SXM4 80GB" or an id) */
function namedAdvice(advice) {
  if (!Array.isArray(advice?.variants)) return advice;
  return { ...advice, variants: advice.variants.map((v) => ({ ...v, label: withDeviceNames(v.label ?? ''), ...(v.reason ? { reason: withDeviceNames(v.reason) } : {}) })) };
}

const namedCluster = (c) => (c?.groups ? { ...c, groups: c.groups.map((g) => ({ ...g, device: deviceName(g.device) })) } : c);

/** how often the best plan so far is redrawn while a search runs (each draw rebuilds every panel) */
export const SEARCH_DRAW_MS = 400;
const searchDraw = { est: null, sc: null, timer: 0, last: 0 };

/**
 * The best plan so far of a running search, with nothing else on screen: the headline and every
 * panel are drawn together from the one estimate (a headline that moved on alone would name one
 * plan over the panels of another), at most every SEARCH_DRAW_MS, the latest one last.
 */
function showSearchBest(est, sc) {
  searchDraw.est = est;
  searchDraw.sc = sc;
  if (searchDraw.timer) return;
  const wait = searchDraw.last + SEARCH_DRAW_MS - performance.now();
  if (wait <= 0) drawSearchBest();
  else searchDraw.timer = setTimeout(drawSearchBest, wait);
}

function drawSearchBest() {
  searchDraw.timer = 0;
  // a result arrived meanwhile: it is on screen, and it is the one to describe
  if (state.result || !searchDraw.est) return;
  const { est, sc } = searchDraw;
  searchDraw.last = performance.now();
  bestSummary(est, { partial: true, sc });
  renderPlan(est, { timeline: false, searching: true, sources: Boolean(sc?.profile), sc, result: null });
}

/** a drawing of the search's best plan still to come is dropped (a result, or another search) */
function dropSearchBest() {
  clearTimeout(searchDraw.timer);
  searchDraw.timer = 0;
  searchDraw.est = null;
  searchDraw.sc = null;
}

export const timelineControl = () => timeline;

const noTimeline = new WeakSet(); // estimates whose timeline could not be had (not asked again until selected again)

// another plan selected: one whose timeline could not be had is asked again
subscribe('selection', ({ reselected } = {}) => {
  const est = selectedEstimate();
  if (est && reselected) noTimeline.delete(est);
  renderResult();
});

/** fetches the selected plan's timeline when it has none, then draws it */
function fetchTimeline() {
  const r = state.result;
  const i = state.selected;
  const est = r?.plans?.[i];
  if (!est || Array.isArray(est.timeline) || !est.plan || noTimeline.has(est) || timelineRequests.has(`${i}`)) return false;
  ensureTimeline(i).then((full) => {
    if (state.result !== r) return;
    if (!Array.isArray(full?.timeline)) noTimeline.add(est);
  });
  return true;
}

function planLabel(r) {
  return r?.fromLink ? 'Shared plan' : r?.fromFile ? 'Loaded plan' : 'Best plan';
}

const expandedFolds = new Set(); // plans whose other layer splits are shown
let foldsFor = null;

/** the summary and the top plans: re-priced without redrawing the selected plan (budget and price edits) */
export function renderCosts() {
  const r = state.result;
  const plans = r?.plans || [];
  if (r) {
    // the summary follows the selected plan (docs/web.md: "the best or selected plan's" numbers)
    const i = plans[state.selected] ? state.selected : 0;
    bestSummary(plans[i] ?? null, { label: i > 0 ? `Selected plan #${i + 1}` : planLabel(r) });
    // the table is drawn anew: a plan button that had the focus (it was just pressed, or the
    // keyboard is on it) keeps it in the new table, so it never falls to the body
    const focused = document.activeElement?.closest?.('#top-plans button[data-plan], #top-plans button[data-fold]');
    const focusSel = focused ? (focused.dataset.plan !== undefined ? `button[data-plan="${focused.dataset.plan}"]` : `button[data-fold="${focused.dataset.fold}"]`) : null;
    const top = clear($('#top-plans'));
    if (plans.length) {
      const opts = costOptions();
      const cluster = clusterOfResult();
      const costs = plans.map((p) => trainingCost(p, cluster, opts));
      const order = sortPlans(plans, state.sortBy, cluster, opts);
      // other layer splits of a listed plan's stages at its time are folded under it
      if (foldsFor !== r) { foldsFor = r; expandedFolds.clear(); }
      const onToggle = (i) => { if (!expandedFolds.delete(i)) expandedFolds.add(i); renderCosts(); };
      top.append(topPlansTable(plans, state.selected, selectPlan,
        { order, costs, budget: Boolean(opts.tokens), equivalent: equivalentPlans(plans), expanded: expandedFolds, onToggle }));
      if (focusSel) top.querySelector(focusSel)?.focus();
    }
  }
  // the comparison and the what-if follow the top plans (they subscribe to 'rendered')
  emit('rendered');
}

export function renderResult() {
  dropSearchBest();
  const r = state.result;
  const plans = r?.plans || [];
  renderCosts();
  if (!r) bestSummary(null);
  renderStale();
  const adviceSec = $('#advice-sec');
  adviceSec.hidden = !(r && !plans.length && state.advice);
  clear($('#advice'));
  if (!adviceSec.hidden) $('#advice').append(adviceView(namedAdvice(state.advice), isEmbed ? null : applyVariant));
  renderBatchHint(r);
  const sel = selectedEstimate();
  const pending = fetchTimeline() || timelineRequests.has(`${state.selected}`);
  renderPlan(sel, { sources: Boolean(r?.profiled), pending });
  clear($('#baselines')).append(baselinesTable(r?.baselines, plans[0]));
  const stats = clear($('#stats'));
  if (r?.stats) stats.append(statsList(r.stats));
  else stats.append(h('p', { class: 'muted' }, r?.fromLink ? 'Opened from a share link (estimate only, no search).' : 'No search statistics.'));
  const has = Boolean(sel);
  $('#stock-best').disabled = !plans.length || Boolean(state.stale);
  if (!plans.length) $('#stock-status').textContent = '';
  for (const id of ['copy-embed', 'export-plan', 'export-scenario', 'export-svg', 'export-png', 'export-trace', 'open-perfetto', 'export-megatron']) $(`#${id}`).disabled = !has;
  $('#copy-link').disabled = !state.version;
  $('#export-csv').disabled = !plans.length;
  $('#megatron-box').hidden = true;
  postHeight();
}

/** the core's note on an awkward exact batch in the page's words, its tolerance one click away (not in an embed) */
function renderBatchHint(r) {
  const el = clear($('#batch-hint'));
  const hint = r?.plans?.length ? batchHint(r.stats) : null;
  el.hidden = !hint;
  if (!hint) return;
  el.append(hint.text);
  if (!isEmbed) {
    el.append(' ', h('button', { type: 'button', 'data-testid': 'batch-hint-apply',
      onclick: () => applyVariant({ changes: { 'training.global_batch_tolerance': hint.tolerance } }) }, `Allow batches ${fmtInt(hint.lo)}–${fmtInt(hint.hi)}`));
  }
}

let applyHook = () => {};
/** onApply(variant) applies an advice variant's changes to the inputs (wired by main.js) */
export function onApplyVariant(cb) { applyHook = cb; }
function applyVariant(v) { applyHook(v); }

// embedded in a page (?embed=1 in an iframe): the parent sizes the frame to the page
let lastHeight = 0;
export function postHeight() {
  if (!isEmbed || window.parent === window) return;
  const height = Math.ceil(document.documentElement.scrollHeight);
  if (height === lastHeight) return;
  lastHeight = height;
  window.parent.postMessage({ type: 'poseidon:resize', height }, '*');
}

// ------------------------------------------------------------------ what the store says

/** the progress line (in the sticky summary) and Find plans / Cancel */
function renderStatus() {
  $('#progress').textContent = state.progressText ?? '';
  // Find plans stays enabled (it restarts a running search), so keyboard focus never falls off it
  $('#run').disabled = !state.version;
  $('#cancel').disabled = !state.running;
  $('#cancel-bar').hidden = !state.running;
}

subscribe('status', renderStatus);
subscribe('stale', renderStale);
subscribe('advice', renderResult);
subscribe('search-best', () => {
  const b = state.searchBest;
  if (b) showSearchBest(b.est, b.sc);
  else dropSearchBest();
});
subscribe('result', ({ focus } = {}) => {
  // an embed that refused a link shows this result instead (a link pasted into its address bar)
  document.documentElement.classList.remove('embed-refused');
  delete $('#best-plan').dataset.refused;
  renderResult();
  // after an explicit run whose focus was lost, the focus goes to the result, never the body
  if (focus && (document.activeElement === document.body || !document.activeElement)) $('#best-plan').focus();
});
subscribe('prices', renderCosts);

/** "Fastest plan stock Megatron-LM can run": selects it in the top plans, or shows the Megatron-LM style baseline */
export function showFastestStock() {
  const best = fastestStock();
  const status = $('#stock-status');
  if (!best) { status.textContent = 'None of the plans found (nor the Megatron-LM style baseline) runs on stock Megatron-LM as planned.'; return; }
  if (best.index >= 0) {
    selectPlan(best.index);
    status.textContent = best.index === 0 ? 'The best plan runs on stock Megatron-LM.' : `Plan #${best.index + 1}: the fastest of the plans found that stock Megatron-LM can run.`;
    return;
  }
  // the baseline is faster than every listed stock plan: put it on screen as a plan of its own
  const n = listPlan(best.est) + 1;
  status.textContent = `Plan #${n}: the Megatron-LM style baseline (one TP, PP and DP, equal layers), faster than every plan found that stock Megatron-LM can run.`;
}
