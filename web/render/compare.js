// Two plans side by side: their figures and their stages, rows that differ marked (.differs) and
// the better value of a figure with a direction marked (.better). DOM over compareRows() and
// comparePairs() of web/compare.js.
import { h, fmt, fmtInt, fmtPct, fmtSignedPct, fmtTime, scrollTable } from '../dom.js';
import { formatDays, formatUsd } from '../cost.js';
import { distinctPair } from '../compare.js';
import { gloss } from '../glossary.js';

function show(v, format) {
  if (v === null || v === undefined || v === '') return '–';
  switch (format) {
    case 'int': return fmtInt(v);
    case 'index': return String(v);
    case 'count': return fmtInt(v);
    case 'time': return fmtTime(v);
    case 'pct': return fmtPct(v);
    case 'usd': return formatUsd(v);
    case 'days': return formatDays(v);
    default: return String(v);
  }
}

/** a row's two cells as text: dollar figures with enough digits to tell different values apart, "≥" for a lower bound */
function shown(r) {
  if (r.format !== 'usd') return { a: show(r.a, r.format), b: show(r.b, r.format) };
  const [a, b] = distinctPair(r.a, r.b, formatUsd);
  const mark = (v, text, side) => (v === null || v === undefined ? '–' : r.partial?.[side] ? (v > 0 ? `≥ ${text}` : 'unknown') : text);
  return { a: mark(r.a, a, 'a'), b: mark(r.b, b, 'b') };
}

/** the change from a to b: "+12.3%" for numbers, "" otherwise */
function change(a, b) {
  if (typeof a !== 'number' || typeof b !== 'number' || a === 0) return '';
  return fmtSignedPct((b - a) / Math.abs(a));
}

/** rows: compareRows(); pairs: comparePairs(); ia, ib: the plans' indices in the top list */
export function compareTables(rows, pairs, ia, ib) {
  const cell = (r, side) => h('td', { class: r.better === side ? 'better' : null, 'data-side': side,
    title: r.partial?.[side] ? 'Some GPUs of this plan have no price and are not counted: the cost is at least this.' : null }, shown(r)[side],
  r.better === side ? h('span', { class: 'sr-only' }, ' (better)') : null);
  const figures = h('table', { class: 'data compare figures', 'data-testid': 'compare-table' },
    h('caption', {}, `Plan #${ia + 1} against plan #${ib + 1}: rows that differ are marked, the better value in bold`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'figure'), h('th', { scope: 'col' }, `#${ia + 1}`), h('th', { scope: 'col' }, `#${ib + 1}`),
      h('th', { scope: 'col', title: `plan #${ib + 1} against plan #${ia + 1}` }, 'change'))),
    h('tbody', {}, rows.map((r) => h('tr', { class: r.differs ? 'differs' : null, 'data-key': r.key, 'data-differs': String(r.differs) },
      h('th', { scope: 'row', title: gloss(r.label) ?? null }, r.label), cell(r, 'a'), cell(r, 'b'),
      h('td', { class: 'muted' }, r.differs && typeof r.a === 'number' && r.format !== 'index' && r.format !== 'count' ? change(r.a, r.b) : '')))));
  const stage = (f) => (f ? `${f.devices} · ${f.layers} layer${f.layers === 1 ? '' : 's'} · TP×DP ${f.tp_dp} · ${f.mb_replica}/replica · ${fmtTime(f.compute_s)} · ${fmt(f.memory_GiB, 1)} / ${fmt(f.memory_capacity_GiB, 1)} GiB` : '—');
  const stages = h('table', { class: 'data compare stages', 'data-testid': 'compare-stages' },
    h('caption', {}, 'Stage by stage (devices · layers · TP × DP · micro-batch per replica · forward + backward per micro-batch · memory per GPU)'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'stage'), h('th', { scope: 'col' }, `#${ia + 1}`), h('th', { scope: 'col' }, `#${ib + 1}`))),
    h('tbody', {}, pairs.map((p) => h('tr', { class: p.differs.length ? 'differs' : null, 'data-stage': p.index, 'data-differs': p.differs.join(' ') },
      h('th', { scope: 'row' }, String(p.index)), h('td', {}, stage(p.a)), h('td', {}, stage(p.b))))));
  return [scrollTable(figures), scrollTable(stages)];
}
