// Errors: the summary at the top of the inputs (never above the results, so they do not move) and
// the messages next to each field (core paths mapped to inputs). The summary holds up to three
// messages by kind: 'link' (a refused share link: stays until the next edit or link), 'inputs' (the
// core's problems with the inputs: until the next search) and 'other' (files, the engine).
// The messages live in the store (store.js: showError, clearErrors, showCoreError, which the
// search reports through); this module draws them whenever they change.
import { $, $$, h } from './dom.js';
import { errors, normalisePath, problemsOf, showError, clearErrors, showCoreError, state, subscribe } from './store.js';
import { detailText, inWords } from './words.js';

export { normalisePath, problemsOf, showError, clearErrors, showCoreError };

/** true when a JSON path is `key` or inside it ("profile", "profile.devices[0]", not "profiles") */
export const pathWithin = (path, key) => path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`);

/** true when the core's current problems include one inside the scenario's `key` (e.g. "profile") */
export const coreRefuses = (key) => errors.inputProblems.some((p) => pathWithin(p.path, key));

const problemText = (pr) => (pr.path ? `${pr.path}: ${pr.message}` : pr.message);

// The core lists every problem (a pasted profile of 4,000 points can have 8,000); the page shows the
// first few, and how many more there are: all of them in the DOM froze the page for a minute.
export const SUMMARY_PROBLEMS_SHOWN = 20;
export const FIELD_MESSAGES_SHOWN = 3;
const more = (n) => `… and ${n.toLocaleString('en-US')} more problem${n === 1 ? '' : 's'}`;

/** the field's name as the page shows it (its label), for a problem about exactly that field */
function labelOf(input, path) {
  if (!input) return '';
  // the field itself, or one element of the list it edits (options.ep_sizes[0] at options.ep_sizes)
  const p = normalisePath(path);
  if (input.dataset.path !== p && input.dataset.path !== p.replace(/(\[\d+\])+$/, '')) return '';
  const l = input.id ? document.querySelector(`label[for="${CSS.escape(input.id)}"]`) : null;
  return (l?.textContent || input.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim();
}

/**
 * A problem in a person's words, then the core's own line (its JSON path and words) as the
 * secondary detail: what a link or the CLI names (issue 36 item 9); only the path where the words
 * already say the core's message (detailText). label: the field's name, or null next to the field
 * itself; path: the path the detail names.
 */
function said(pr, label, path = pr.path) {
  const words = inWords(pr, label);
  const detail = detailText(words, pr.message, path);
  return [h('span', { class: 'said' }, words), ...(detail ? [' ', h('span', { class: 'detail' }, `(${detail})`)] : [])];
}

/** opens every collapsed section around an input (inputs collapse into sections on phones) */
function openAround(input) {
  for (let d = input.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
}

/** a problem's line: a button that takes the user to its field, or plain text if none shows it */
function problemLine(pr, fields) {
  const input = pr.path ? inputForPath(pr.path, fields) : null;
  if (!input) return pr.path ? h('span', {}, said(pr, '')) : problemText(pr);
  const b = h('button', { type: 'button', class: 'error-link', title: 'go to the field' }, said(pr, labelOf(input, pr.path)));
  b.addEventListener('click', () => {
    const input = inputForPath(pr.path);
    if (!input) return;
    openAround(input);
    input.focus();
  });
  return b;
}

function renderErrors() {
  const el = $('#error');
  const messages = errors;
  const { inputContext, inputProblems } = errors;
  const text = [messages.link, messages.inputs, messages.other].filter(Boolean).join('\n\n');
  el.textContent = '';
  // the same text, with the inputs' problem lines as links (text nodes keep the newlines)
  const parts = [];
  for (const k of ['link', 'inputs', 'other']) {
    if (!messages[k]) continue;
    if (parts.length) parts.push('\n\n');
    if (k !== 'inputs' || !inputProblems.length) { parts.push(messages[k]); continue; }
    parts.push(`${inputContext}\n`);
    const fields = $$('[data-path]');
    inputProblems.slice(0, SUMMARY_PROBLEMS_SHOWN).forEach((pr, i) => { if (i) parts.push('\n'); parts.push(problemLine(pr, fields)); });
    if (inputProblems.length > SUMMARY_PROBLEMS_SHOWN) parts.push(`\n${more(inputProblems.length - SUMMARY_PROBLEMS_SHOWN)}`);
  }
  el.append(...parts.map((p) => (typeof p === 'string' ? document.createTextNode(p) : p)));
  el.hidden = !text;
  if (text) el.dataset.kind = messages.link ? 'link' : messages.inputs ? 'inputs' : 'other';
  else delete el.dataset.kind;
  // the sticky results summary says that there is something to fix (its height does not change)
  const jump = $('#error-jump');
  if (jump) jump.hidden = !text;
}

// the store's errors changed: the messages next to the fields (cleared, or the core's problems), then the summary
subscribe('errors', ({ fields } = {}) => {
  const hold = holdFocusedField();
  if (fields) clearFieldErrors();
  if (Array.isArray(fields)) markFieldErrors(fields);
  renderErrors();
  hold();
});

// The summary appears above the inputs, and messages under fields above the one being typed in:
// where the page itself scrolls (a phone) and is at its top, the browser's scroll anchoring does
// not apply, so the field moved down under the user's thumb (136 px for a summary of one line;
// browser review, 2026-12-08). Its scroll box is moved by what moved it.
function holdFocusedField() {
  const el = document.activeElement;
  if (!el?.closest?.('#inputs')) return () => {};
  const top = el.getBoundingClientRect().top;
  return () => {
    if (!el.isConnected) return;
    const moved = el.getBoundingClientRect().top - top;
    if (Math.abs(moved) < 1) return;
    let box = el.parentElement;
    while (box && !(box.scrollHeight > box.clientHeight && /auto|scroll/.test(getComputedStyle(box).overflowY))) box = box.parentElement;
    (box ?? document.scrollingElement).scrollBy(0, moved);
  };
}

export function clearFieldErrors() {
  // the runs field is not part of the scenario: its message stays until the next calibration
  for (const e of $$('.field-error:not(#runs-json-err)')) e.textContent = '';
  for (const i of $$('[aria-invalid="true"]:not(#runs-json)')) i.removeAttribute('aria-invalid');
}

/**
 * core error path → the input that shows it (exact, custom device, or the nearest enclosing field);
 * `fields`: the page's inputs, when the caller looks up many paths at once
 */
export function inputForPath(path, fields = $$('[data-path]')) {
  const p = normalisePath(path);
  const exact = fields.find((el) => el.dataset.path === p);
  if (exact) return exact;
  const dev = /^cluster\.groups\[(\d+)\]\.device\.(.+)$/.exec(p);
  if (dev) {
    const g = state.cluster.groups[Number(dev[1])];
    const byDev = fields.find((el) => el.dataset.path === `devices.${g?.device}.${dev[2]}`);
    if (byDev) { $('#devices').open = true; return byDev; }
    return fields.find((el) => el.dataset.path === `cluster.groups[${dev[1]}].device`);
  }
  let best = null;
  for (const el of fields) {
    const q = el.dataset.path;
    if (pathWithin(p, q) && (!best || q.length > best.dataset.path.length)) best = el;
  }
  if (best) return best;
  return fields.find((el) => pathWithin(el.dataset.path, p)) ?? null;
}

export function markFieldErrors(problems) {
  let first = null;
  const fields = $$('[data-path]');
  const shown = new Map(); // input → messages next to it so far
  for (const pr of problems) {
    const input = inputForPath(pr.path, fields);
    if (!input) continue;
    first ??= input;
    const n = (shown.get(input) ?? 0) + 1;
    shown.set(input, n);
    if (n > FIELD_MESSAGES_SHOWN) continue; // counted, said at the end
    input.setAttribute('aria-invalid', 'true');
    openAround(input);
    // a problem inside the field's value (e.g. profile.devices[0].points[2].tp) names the part
    const base = input.dataset.path;
    // (an element of a list the field edits whole, options.ep_sizes[0] at options.ep_sizes, is the field itself)
    const rel = pr.path.length > base.length && pr.path.startsWith(base) && /^[.[]/.test(pr.path.slice(base.length)) && !/^(\[\d+\])+$/.test(pr.path.slice(base.length))
      ? pr.path.slice(base.length).replace(/^\./, '') : '';
    const err = document.getElementById(input.getAttribute('aria-describedby'));
    // in words (no name: it is next to its field; a part inside the field's value is named), the core's line after it
    if (err) err.append(err.textContent ? '; ' : '', ...said(pr, rel ? '' : null, rel || pr.path));
    // the message may be about a relation with a sibling field ("24 does not divide hidden_size
    // 2305": the path names the heads, the user typed the hidden size): mark the fields it names too
    for (const other of relatedInputs(pr, input)) {
      other.setAttribute('aria-invalid', 'true');
      openAround(other);
      const e2 = document.getElementById(other.getAttribute('aria-describedby'));
      const words = inWords(pr, labelOf(input, pr.path));
      const text = detailText(words, pr.message, input.dataset.path.split('.').pop());
      if (e2 && !e2.textContent.includes(words)) e2.append(e2.textContent ? '; ' : '', h('span', { class: 'said' }, words), ...(text ? [' ', h('span', { class: 'detail' }, `(${text})`)] : []));
    }
  }
  for (const [input, n] of shown) {
    const err = n > FIELD_MESSAGES_SHOWN ? document.getElementById(input.getAttribute('aria-describedby')) : null;
    if (err) err.append(`; ${more(n - FIELD_MESSAGES_SHOWN)}`);
  }
  return first;
}

/**
 * The inputs next to a problem's field (same object, other key) whose key the message names as a
 * word: keys with an underscore only (hidden_size, num_kv_heads, …), so that ordinary words in a
 * message mark nothing.
 */
export function relatedInputs(problem, input) {
  const base = input?.dataset?.path ?? '';
  const dot = base.lastIndexOf('.');
  if (dot < 0) return [];
  const parent = base.slice(0, dot + 1);
  const out = [];
  for (const el of $$('[data-path]')) {
    const q = el.dataset.path;
    if (el === input || !q.startsWith(parent)) continue;
    const key = q.slice(parent.length);
    if (!/^[a-z0-9]+(_[a-z0-9]+)+$/i.test(key)) continue;
    if (new RegExp(`(^|[^A-Za-z0-9_])${key}([^A-Za-z0-9_]|$)`).test(problem.message)) out.push(el);
  }
  return out;
}
