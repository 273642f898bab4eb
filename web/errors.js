// Errors: the summary at the top of the inputs (never above the results, so they do not move) and
// the messages next to each field (core paths mapped to inputs). The summary holds up to three
// messages by kind: 'link' (a refused share link: stays until the next edit or link), 'inputs' (the
// core's problems with the inputs: until the next search) and 'other' (files, the engine).
import { $, $$ } from './dom.js';
import { state } from './state.js';

const messages = { link: '', inputs: '', other: '' };

function renderErrors() {
  const el = $('#error');
  const text = [messages.link, messages.inputs, messages.other].filter(Boolean).join('\n\n');
  el.textContent = text;
  el.hidden = !text;
  if (text) el.dataset.kind = messages.link ? 'link' : messages.inputs ? 'inputs' : 'other';
  else delete el.dataset.kind;
  // the sticky results summary says that there is something to fix (its height does not change)
  const jump = $('#error-jump');
  if (jump) jump.hidden = !text;
}

export function showError(message, kind = 'other') {
  messages[kind] = message;
  renderErrors();
}

/** clears the summary's messages of these kinds (and, with 'inputs', the messages next to the fields) */
export function clearErrors(kinds = ['inputs', 'other']) {
  for (const k of kinds) messages[k] = '';
  if (kinds.includes('inputs')) clearFieldErrors();
  renderErrors();
}

export const hasInputErrors = () => Boolean(messages.inputs);

export function clearFieldErrors() {
  // the runs field is not part of the scenario: its message stays until the next calibration
  for (const e of $$('.field-error:not(#runs-json-err)')) e.textContent = '';
  for (const i of $$('[aria-invalid="true"]:not(#runs-json)')) i.removeAttribute('aria-invalid');
}

export function normalisePath(path) {
  return String(path ?? '').replace(/^\$\.?/, '').replace(/^scenario\./, '');
}

/** core error path → the input that shows it (exact, custom device, or the nearest enclosing field) */
export function inputForPath(path) {
  const p = normalisePath(path);
  const exact = $$('[data-path]').find((el) => el.dataset.path === p);
  if (exact) return exact;
  const dev = /^cluster\.groups\[(\d+)\]\.device\.(.+)$/.exec(p);
  if (dev) {
    const g = state.cluster.groups[Number(dev[1])];
    const byDev = $$('[data-path]').find((el) => el.dataset.path === `devices.${g?.device}.${dev[2]}`);
    if (byDev) { $('#devices').open = true; return byDev; }
    return $$('[data-path]').find((el) => el.dataset.path === `cluster.groups[${dev[1]}].device`);
  }
  let best = null;
  for (const el of $$('[data-path]')) {
    const q = el.dataset.path;
    if ((p.startsWith(`${q}.`) || p.startsWith(`${q}[`)) && (!best || q.length > best.dataset.path.length)) best = el;
  }
  if (best) return best;
  return $$('[data-path]').find((el) => el.dataset.path.startsWith(`${p}.`) || el.dataset.path.startsWith(`${p}[`)) ?? null;
}

export function problemsOf(error) {
  const list = Array.isArray(error?.problems) && error.problems.length ? error.problems : [error];
  return list.filter(Boolean).map((x) => ({ path: normalisePath(x.path), message: String(x.message ?? '') }));
}

export function markFieldErrors(problems) {
  let first = null;
  for (const pr of problems) {
    const input = inputForPath(pr.path);
    if (!input) continue;
    input.setAttribute('aria-invalid', 'true');
    // open every collapsed section around it (inputs collapse into sections on phones)
    for (let d = input.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
    // a problem inside the field's value (e.g. profile.devices[0].points[2].tp) names the part
    const base = input.dataset.path;
    const rel = pr.path.length > base.length && pr.path.startsWith(base) && /^[.[]/.test(pr.path.slice(base.length))
      ? pr.path.slice(base.length).replace(/^\./, '') : '';
    const message = rel ? `${rel}: ${pr.message}` : pr.message;
    const err = document.getElementById(input.getAttribute('aria-describedby'));
    if (err) err.textContent = err.textContent ? `${err.textContent}; ${message}` : message;
    first ??= input;
  }
  return first;
}

/** an {error} result from the core: message in the error region, and next to each field it names */
export function showCoreError(error, context) {
  const problems = problemsOf(error);
  clearFieldErrors();
  markFieldErrors(problems);
  const lines = problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
  showError(`${context}\n${lines.join('\n')}`, 'inputs');
}
