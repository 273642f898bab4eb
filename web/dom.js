// Tiny DOM helpers. Text always goes in through textContent / createTextNode, never as HTML.
const SVG_NS = 'http://www.w3.org/2000/svg';

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  return el;
}

/** h('div', {class: 'x'}, 'text', child) → HTMLElement */
export function h(tag, attrs, ...children) {
  return append(setAttrs(document.createElement(tag), attrs), children);
}

/** s('rect', {x: 1}) → SVGElement */
export function s(tag, attrs, ...children) {
  return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
}

/**
 * A table in a box that scrolls sideways on a narrow screen. The box takes the focus (Tab) and is
 * named by the table's caption, so a keyboard alone can scroll it (WCAG 2.1.1: axe's
 * scrollable-region-focusable); with a control inside, that control would do, but not every
 * table has one.
 */
export function scrollTable(table, label = table?.querySelector?.('caption')?.textContent ?? 'Table') {
  return h('div', { class: 'scroll-x', tabindex: '0', role: 'region', 'aria-label': label }, table);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

export function fmt(x, digits = 3) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '–';
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}
export const fmtInt = (x) => fmt(Math.round(x), 0);
/** exactly `digits` decimals ("10.70", "0.00"): for a column whose numbers are read against each other */
export function fmtFixed(x, digits) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '–';
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
export const fmtPct = (x) => (typeof x === 'number' ? `${(100 * x).toFixed(1)}%` : '–');
/** a relative change as the page writes it: "+5.2%", "−15.0%" (a minus sign), "0.0%" when it rounds to nothing */
export function fmtSignedPct(x, digits = 1) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '–';
  const v = Number((100 * x).toFixed(digits));
  return `${v > 0 ? '+' : v < 0 ? '−' : ''}${Math.abs(v).toFixed(digits)}%`;
}
export function fmtTime(sec) {
  if (typeof sec !== 'number' || !Number.isFinite(sec)) return '–';
  if (sec === 0) return '0 s'; // no time (no sends, no DP): not "0.0 µs", which reads as rounded
  // thousands grouped as the tokens/s are ("16,815.995 s", not "16815.995 s")
  if (sec >= 1) return `${fmtFixed(sec, 3)} s`;
  if (sec >= 1e-3) return `${(sec * 1e3).toFixed(2)} ms`;
  return `${(sec * 1e6).toFixed(1)} µs`;
}
