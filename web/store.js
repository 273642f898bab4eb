// The one owner of the page's state (issue 36 item 12): inputs -> state -> search -> results.
// The forms change the inputs in `state` and say so (inputsChanged); the search (planner.js)
// subscribes, searches, and puts what it finds here (setResult, setSearchBest, setStatus); the
// views (results, links, what-if, errors, the boxes) subscribe and draw. No view imports the
// search's internals or another view to tell it something: they meet here, so web/ has no import
// circle (tests/web/pure.test.mjs walks the imports) and every panel draws from the one plan the
// store holds. No DOM here.
import { state, perf } from './state.js';

export { state, perf };

/**
 * Topics: 'inputs' (an input changed), 'forms' (the inputs were replaced: every form is drawn
 * anew), 'search-start', 'status' (running, the progress line), 'stale' (the stale mark),
 * 'search-best' (a running search's best plan so far, or null), 'result' (a new result on screen;
 * detail {focus}), 'selection' (another plan of the result, or its timeline arrived), 'advice',
 * 'errors' (the error summary; detail {fields: 'clear' | problems}), 'prices' (budget or prices:
 * re-priced, no search), 'rendered' (the results were drawn or re-priced), 'phone-tab' (a narrow
 * screen shows the other pane: inputs or results).
 */
const subscribers = new Map();

/** fn(detail) runs on every emit of topic; returns a function that unsubscribes */
export function subscribe(topic, fn) {
  if (!subscribers.has(topic)) subscribers.set(topic, []);
  subscribers.get(topic).push(fn);
  return () => { const l = subscribers.get(topic); const i = l.indexOf(fn); if (i >= 0) l.splice(i, 1); };
}

export function emit(topic, detail) {
  for (const fn of [...(subscribers.get(topic) ?? [])]) fn(detail);
}

// ------------------------------------------------------------------ inputs

/** an input changed: whatever shows or uses the inputs follows (the search is scheduled) */
export function inputsChanged() {
  perf.lastEditMs = performance.now();
  emit('inputs');
}

/** the inputs were replaced wholesale (a link, a file, applied advice): the forms are drawn anew */
export function inputsReplaced() {
  emit('forms');
}

// ------------------------------------------------------------------ search and results

/** running and the progress line (either may be left out) */
export function setStatus({ running, progress } = {}) {
  if (running !== undefined) state.running = running;
  if (progress !== undefined) state.progressText = progress;
  emit('status');
}

export function setStale(stale, next = state.staleNext) {
  state.stale = stale;
  state.staleNext = next;
  emit('stale');
}

/** a running search's best plan so far (est, with the scenario searched), or null */
export function setSearchBest(est, sc = null) {
  state.searchBest = est ? { est, sc } : null;
  emit('search-best');
}

/** puts a result on screen with the scenario it belongs to; stale when the inputs changed since */
export function setResult(result, sc, { stale = false, focus = false } = {}) {
  state.searchBest = null;
  state.result = result;
  state.resultScenario = sc;
  state.lastScenario = sc;
  state.stale = stale;
  state.selected = 0;
  state.advice = null;
  emit('result', { focus });
  perf.lastResultMs = performance.now();
}

/** another plan of the result on screen */
export function selectPlan(i) {
  state.selected = i;
  emit('selection', { reselected: true });
}

/** adds a plan (e.g. a baseline) to the result on screen and selects it; returns its index */
export function listPlan(est) {
  state.result = { ...state.result, plans: [...(state.result?.plans ?? []), est] };
  selectPlan(state.result.plans.length - 1);
  return state.selected;
}

/** the result's plan i changed (its timeline arrived) */
export function planUpdated(i) {
  if (i === state.selected) emit('selection', { reselected: false });
}

export function setAdvice(advice) {
  state.advice = advice;
  emit('advice');
}

/** the plan of the result on screen that is selected, or null */
export function selectedEstimate() {
  return state.result?.plans?.[state.selected] ?? null;
}

// ------------------------------------------------------------------ layout

/** on a narrow screen, the pane shown: 'inputs' or 'results' (phone-tabs.js draws it, phone-bar.js follows) */
export function setPhoneTab(tab) {
  if (tab !== 'inputs' && tab !== 'results') return;
  state.phoneTab = tab;
  emit('phone-tab');
}

// ------------------------------------------------------------------ errors

/** the error summary's messages by kind ('link', 'inputs', 'other') and the core's problems behind 'inputs' */
export const errors = { link: '', inputs: '', other: '', inputContext: '', inputProblems: [] };

export function normalisePath(path) {
  return String(path ?? '').replace(/^\$\.?/, '').replace(/^scenario\./, '');
}

/** the core's {error} as a list of {path, message} */
export function problemsOf(error) {
  const list = Array.isArray(error?.problems) && error.problems.length ? error.problems : [error];
  return list.filter(Boolean).map((x) => ({ path: normalisePath(x.path), message: String(x.message ?? '') }));
}

export function showError(message, kind = 'other') {
  errors[kind] = message;
  if (kind === 'inputs') errors.inputProblems = []; // plain text: no problems behind it
  emit('errors', {});
}

/** clears the summary's messages of these kinds (and, with 'inputs', the messages next to the fields) */
export function clearErrors(kinds = ['inputs', 'other']) {
  for (const k of kinds) errors[k] = '';
  if (kinds.includes('inputs')) errors.inputProblems = [];
  emit('errors', kinds.includes('inputs') ? { fields: 'clear' } : {});
}

/** an {error} result from the core: in the summary, and next to each field it names */
export function showCoreError(error, context) {
  const problems = problemsOf(error);
  errors.inputContext = context;
  errors.inputProblems = problems;
  errors.inputs = `${context}\n${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('\n')}`;
  emit('errors', { fields: problems });
}
