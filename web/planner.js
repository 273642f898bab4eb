// Running the core: live planning (every edit re-plans after a short pause, cancelling the search
// in progress), explicit runs, cancel, estimating a given plan, and the advice when nothing fits.
// The last result stays on screen, marked stale, until the new one arrives. No DOM: what it finds
// goes into the store (store.js), and the views that subscribe there draw it.
import { fmtInt, fmtTime } from './dom.js';
import { cleanObject, isEmbed, scenario, searchOptions } from './state.js';
import { hasBreakdown, searchDoneText } from './explain.js';
import { clearErrors, emit, perf, planUpdated, problemsOf, setAdvice, setResult, setSearchBest, setStale, setStatus, showCoreError, showError, state, subscribe } from './store.js';
import { call, getPool, restartWorker } from './engine.js';
import { PROBE_S, splitSearch } from './split-search.js';

/** pause after an edit before the search starts again */
export const LIVE_DELAY_MS = 350;
/** performance.now() when the running (or last) search started */
let searchStartMs = 0;
/** whether an input changed after time t (performance.now()) */
const editedSince = (t) => perf.lastEditMs !== null && perf.lastEditMs > t;
/** advice for "no feasible plan": per variant and in all (seconds) */
export const ADVICE_OPTIONS = { time_limit_s: 1, total_time_limit_s: 8 };

let planTimer = 0;
let searchSeq = 0; // the newest search; older ones that still report are ignored
let onPool = null; // the pool jobs' tag of the running search (null: it runs on the one worker)
// for the tests and the benchmark: the result on screen (as the core returned it) and its scenario
perf.result = () => ({ result: state.result, scenario: state.resultScenario });

/**
 * How long the pool's search first runs whole on the page's own worker: ?probe=S (tests and
 * benchmarks: 0 splits at once), else PROBE_S, and FIRST_PROBE_S for the page's first search:
 * its first call also compiles the module's hot code (0.4-0.5 s on 2 cores), and a small search
 * split over cold workers took 2-4 times as long as on the one warm worker (issue 36 item 11)
 */
export const FIRST_PROBE_S = 2;
let searchesStarted = 0;
function probeSeconds() {
  const v = Number(new URLSearchParams(globalThis.location?.search ?? '').get('probe') ?? NaN);
  if (Number.isFinite(v) && v >= 0) return v;
  return searchesStarted <= 1 ? Math.max(PROBE_S, FIRST_PROBE_S) : PROBE_S;
}

export function setRunning(running) {
  setStatus({ running });
}

const progress = (text) => setStatus({ progress: text });

export function progressText(p, elapsed) {
  // "this search's": the plan on screen may be better (the first view's, found when the page was built,
  // while the engine checks it), and a bare "best" under a higher headline read as a contradiction
  const best = p?.best ? ` · this search's best so far ${fmtInt(p.best.tokens_per_s)} tokens/s (${fmtTime(p.best.iteration_time_s)})` : '';
  return `Searching… evaluated ${fmtInt(p?.evaluated ?? 0)} plans · pruned ${fmtInt(p?.pruned ?? 0)} branches${best} · ${elapsed.toFixed(1)} s`;
}

/** An input changed (store.inputsChanged): the result on screen is stale, a search is scheduled. */
function inputsChanged() {
  clearErrors(['link']);
  const searches = Boolean(state.version) && !isEmbed;
  if (state.result) setStale(true, searches ? 're-planning…' : 'press Find plans');
  clearTimeout(planTimer);
  planTimer = 0;
  if (!searches) return;
  planTimer = setTimeout(() => { planTimer = 0; runSearch({ live: true }); }, LIVE_DELAY_MS);
}

/**
 * The problems of custom devices that no group uses (the scenario carries only the devices its
 * groups use, so the core never sees these): each is checked on a one-GPU cluster of its own, and
 * its problems come back with the paths of its fields (devices.<id>.<key>). [] when all are sound.
 */
async function unusedDeviceProblems() {
  const used = new Set((state.cluster.groups || []).map((g) => g.device));
  const problems = [];
  for (const [id, dev] of Object.entries(state.devices)) {
    if (used.has(id)) continue;
    const sc = { model: 'tiny-8l', training: { global_batch_size: 1 },
      cluster: { name: 'device check', groups: [{ device: cleanObject(dev), nodes: 1, gpus_per_node: 1, inter_node_bw_GBps: 1 }] } };
    const r = await call({ type: 'validate', scenario: sc, plan: { micro_batch_size: 1, num_micro_batches: 1, stages: [{ group: 0, num_layers: 8, tp: 1, dp: 1 }] } });
    for (const p of r?.error ? problemsOf(r.error) : []) {
      const m = /^cluster\.groups\[0\]\.device(.*)$/.exec(p.path);
      if (m) problems.push({ path: `devices.${id}${m[1]}`, message: p.message });
    }
  }
  return problems;
}

/** stops a scheduled or running search without touching what is shown */
export function stopSearch() {
  if (state.searchBest) setSearchBest(null);
  clearTimeout(planTimer);
  planTimer = 0;
  if (!state.running) return;
  searchSeq++;
  if (onPool) getPool().cancel(onPool);
  restartWorker(); // (a pool search runs whole on it first)
  onPool = null;
  setRunning(false);
}

/**
 * Searches the current inputs. live: started by an edit (focus stays where it is); otherwise an
 * explicit run, after which focus moves to the result if it was lost.
 */
export async function runSearch({ live = false } = {}) {
  clearTimeout(planTimer);
  planTimer = 0;
  if (state.running) stopSearch();
  emit('search-start');
  const token = ++searchSeq;
  searchesStarted++;
  clearErrors(['inputs', 'other']);
  const sc = scenario();
  state.lastProgress = null;
  state.searchScenario = sc;
  const t0 = performance.now();
  searchStartMs = t0;
  setStatus({ running: true, progress: 'Searching…' });
  try {
    // several cores: the search in slices on the worker pool, the same result (web/split-search.js)
    const pool = getPool();
    // a tag per search: a search being cancelled cannot touch the next one's jobs
    // (several blocks per group, half-node blocks and mixed stages are searched whole: the core
    // runs them in one call)
    const opts = searchOptions();
    const deviceProblems = await unusedDeviceProblems();
    if (token !== searchSeq) return;
    if (deviceProblems.length) {
      showCoreError({ problems: deviceProblems }, 'A custom device (used by no group) has a problem:');
      progress('Stopped: fix the inputs marked in the list above the inputs.');
      setStale(state.stale, 'fix the inputs');
      return;
    }
    onPool = pool.size > 1 && !opts.mixed_stages && !opts.split_nodes && (opts.group_blocks ?? 1) < 2 ? `search-${token}` : null;
    const onProgress = (p) => {
      if (token !== searchSeq) return;
      state.lastProgress = p;
      progress(progressText(p, (performance.now() - t0) / 1000));
      if (p.best) {
        if (perf.firstBestMs === null) {
          perf.firstBestMs = performance.now();
          performance.mark?.('poseidon:first-best');
        }
        // with nothing on screen yet, show the best so far; a stale result stays until the search ends
        if (!state.result) setSearchBest(p.best, sc);
      }
    };
    perf.searchWorkers = onPool ? pool.size : 1;
    const result = await (onPool ? splitSearch({ pool, scenario: sc, options: opts, onProgress, tag: onPool, probeS: probeSeconds(), runFirst: call })
      : call({ type: 'plan', scenario: sc, options: opts }, onProgress));
    if (token !== searchSeq) return;
    if (result?.error) {
      showCoreError(result.error, 'The search could not start:');
      progress('Stopped: fix the inputs marked in the list above the inputs.');
      setStale(state.stale, 'fix the inputs');
      return;
    }
    if (perf.firstBestMs === null && result.plans?.length) perf.firstBestMs = performance.now();
    result.profiled = Boolean(sc.profile);
    // inputs edited while it ran: the result is for the inputs before, and stays marked stale
    // until the search they scheduled replaces it
    // the line is cut at the summary's width on a phone: what matters most comes first
    const done = searchDoneText(result.stats || {}, { found: Boolean(result.plans?.length) });
    progress(done);
    // an explicit run moves the focus to the result if it was lost (the results view does it)
    showResult(result, sc, { stale: editedSince(t0), focus: !live });
    if (!result.plans?.length) requestAdvice(sc, token, done);
  } catch (e) {
    if (e.cancelled || token !== searchSeq) return;
    showError(`The planner engine failed: ${e.message}. It has been restarted; your inputs are kept.`);
    progress('');
    if (onPool) getPool().cancel(onPool);
    restartWorker();
  } finally {
    if (token === searchSeq) {
      onPool = null;
      setRunning(false);
    }
  }
}

/** puts a result on screen (the store's setResult: every view that subscribes draws it) */
export function showResult(result, sc, opts = {}) {
  setResult(result, sc, opts);
}

export function cancelSearch() {
  if (!state.running) return;
  const p = state.lastProgress;
  const sc = state.searchScenario;
  // inputs edited while it ran: its best plan is for the inputs before, and cancelling also drops
  // the search they scheduled, so the result stays marked stale until the next one
  const edited = editedSince(searchStartMs);
  stopSearch();
  state.staleNext = 'press Find plans';
  if (p?.best) {
    showResult({ plans: [p.best], baselines: [], stats: { evaluated: p.evaluated, pruned: p.pruned, infeasible: {}, elapsed_s: null, complete: false },
      profiled: Boolean(sc?.profile) }, sc, { stale: edited });
  }
  setStale(state.stale, 'press Find plans');
  progress(`Cancelled after ${fmtInt(p?.evaluated ?? 0)} plans evaluated${p?.best ? ': showing the best plan so far (incomplete)' : ''}.`
    + (edited ? ' The inputs changed since it started: press Find plans to search them.' : ''));
}

/**
 * Estimates a given plan (from a link or a file) with the current inputs; no search. Resolves to
 * null when it is shown, else to the core's error (also shown in the error summary).
 */
export async function estimatePlan(plan, origin) {
  stopSearch();
  emit('search-start');
  const sc = scenario();
  const res = await call({ type: 'estimate', scenario: sc, plan });
  if (res?.error) {
    // an embed has no inputs to mark: it says in place of the plan that its link is wrong (main.js)
    if (!isEmbed) showCoreError(res.error, origin === 'link' ? 'The shared plan does not fit these inputs:' : 'The plan file does not fit the current inputs:');
    return res.error;
  }
  showResult({ plans: [res], baselines: [], stats: null, fromLink: origin === 'link', fromFile: origin === 'file', profiled: Boolean(sc.profile) }, sc);
  if (perf.firstBestMs === null) perf.firstBestMs = performance.now();
  // the embed has no inputs and no Find plans: it points to the full planner instead
  const next = isEmbed ? 'open it in the full planner to change it or search' : 'edit any input or press Find plans to search';
  progress(origin === 'link' ? `Shared plan estimated (no search): ${next}.` : `Plan file estimated (no search): ${next}.`);
  return null;
}

/**
 * "No feasible plan": ask the core which changes make one fit (advice API), shown under the summary.
 * done: the search's status line, shown again when the advice is in (the headline says that no
 * plan fits and where to look: the status line gives the counts, not the same words).
 */
async function requestAdvice(sc, token, done) {
  setAdvice({ pending: true });
  let res;
  try {
    setStatus({ running: true, progress: 'Searching variants of the inputs that would make a plan fit…' });
    res = await call({ type: 'advise', scenario: sc, options: { ...ADVICE_OPTIONS, tp_per_stage: Boolean(searchOptions().tp_per_stage) } });
  } catch (e) {
    if (e.cancelled || token !== searchSeq) return;
    res = { error: { message: e.message } };
  } finally {
    if (token === searchSeq) setRunning(false);
  }
  if (token !== searchSeq || state.resultScenario !== sc) return;
  progress(res?.error ? `${done} The advice could not be computed.` : done);
  setAdvice(res);
}

subscribe('inputs', inputsChanged);

/**
 * The search returns the timeline of its best plan only: estimate plan i again (with the scenario
 * of the result) to get its timeline. Resolves to the plan's estimate, with timeline when it worked
 * (the store says so: 'selection' when it is the selected plan).
 */
export const timelineRequests = new Map();
export function ensureTimeline(i = state.selected) {
  const r = state.result;
  const est = r?.plans?.[i];
  if (!est || Array.isArray(est.timeline) || !est.plan || !state.resultScenario) return Promise.resolve(est);
  const key = `${i}`;
  if (timelineRequests.has(key)) return timelineRequests.get(key);
  const sc = state.resultScenario;
  const p = call({ type: 'estimate', scenario: sc, plan: est.plan }).then((full) => {
    if (state.result !== r || full?.error || !Array.isArray(full?.timeline)) return est;
    // keep the search's numbers (they are the same) and add what the estimate has beyond them
    // (a cancelled search's plan has the all-zero breakdown of a progress report: the estimate's replaces it)
    r.plans[i] = { ...full, ...est, timeline: full.timeline, breakdown: hasBreakdown(est) ? est.breakdown : full.breakdown };
    return r.plans[i];
  }, () => est).finally(() => timelineRequests.delete(key));
  timelineRequests.set(key, p);
  p.then((full) => { if (state.result === r && full !== est) planUpdated(i); });
  return p;
}
