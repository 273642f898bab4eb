// Explanations of the selected plan (critical path, GPUs used) and the advice for "no feasible
// plan": DOM over the core's JSON; the logic is in ../explain.js (tested in node).
import { h, fmt, fmtInt, fmtPct, fmtTime, scrollTable } from '../dom.js';
import { criticalPath, idleReasons, pageNote } from '../explain.js';

/**
 * what bounds the iteration: a bar of the breakdown, sentences, and busy time per stage. searching:
 * est is the best plan so far of a running search (the search reports it without the breakdown)
 */
export function criticalPathView(est, { searching = false } = {}) {
  const cp = criticalPath(est);
  if (!cp) {
    return h('p', { class: 'muted', 'data-testid': 'critical-pending' }, searching
      ? 'What bounds this plan is worked out when the search ends: a running search reports its best plan so far without the breakdown.'
      : 'No breakdown for this plan.');
  }
  const T = est.iteration_time_s;
  const bar = h('div', { class: 'bdbar', role: 'img', 'aria-label': `Iteration ${fmtTime(T)} seen from stage ${cp.bottleneck}: ${cp.parts.filter((p) => p.s > 0).map((p) => `${p.label} ${fmtPct(p.share)}`).join(', ')}` });
  for (const p of cp.parts) {
    if (!(p.s > 0)) continue;
    const seg = h('span', { class: `bdseg bd-${p.key}`, title: `${p.label}: ${fmtTime(p.s)} (${fmtPct(p.share)}) — ${p.title}` });
    seg.style.width = `${(100 * p.share).toFixed(2)}%`;
    bar.append(seg);
  }
  const legend = h('ul', { class: 'legend' }, cp.parts.map((p) => h('li', { title: p.title, 'data-part': p.key },
    h('span', { class: `swatch bd-${p.key}`, 'aria-hidden': 'true' }), `${p.label} ${fmtTime(p.s)} (${fmtPct(p.share)})`)));
  // the bar is the iteration seen from the bottleneck stage: only waits count, so say it under the legend
  const note = h('p', { class: 'muted note', 'data-testid': 'critical-note' }, 'The bar splits the iteration as the bottleneck stage sees it: '
    + 'communication counts only while the stage waits for it (exposed). Sends and syncs that overlap with compute are hidden in compute, '
    + 'so "exposed pipeline sends" can be 0 while the table below lists the sends each stage makes. After its last backward the bottleneck '
    + 'stage waits at the global gradient-norm barrier for the stage whose DP sync ends last: the DP sync and optimizer step in the bar are '
    + 'that stage\'s, which may be another stage than the bottleneck (compare the DP sync column below).');
  // a number and its unit on one line ("1.63 ms", not "1.63" over "ms"): style.css, td.num
  const num = (text) => h('td', { class: 'num' }, text);
  const maxBusy = Math.max(...cp.stages.map((s) => s.busy_s), 1e-12);
  const table = h('table', { class: 'data', 'data-testid': 'critical-table' },
    h('caption', {}, 'Per stage: busy time in one iteration (micro-batches × forward + backward), the longest bounds the iteration'),
    h('thead', {}, h('tr', {}, ['stage', 'device', 'busy', 'of the iteration', '', 'forward', 'backward', 'sends', 'DP sync']
      .map((t, i) => h('th', { scope: 'col', ...(i === 4 ? { 'aria-hidden': 'true' } : {}),
        ...(t === 'sends' ? { title: 'the stage\'s sends per micro-batch (forward + backward), overlapped with compute or not; the bar above counts only the exposed part of the bottleneck stage' } : {}) }, t)))),
    h('tbody', {}, cp.stages.map((s) => {
      const bar1 = h('span', { class: 'minibar' });
      bar1.style.width = `${(100 * s.busy_s / maxBusy).toFixed(1)}%`;
      return h('tr', { class: s.stage === cp.bottleneck ? 'bottleneck' : '', 'data-stage': s.stage },
        h('th', { scope: 'row' }, `${s.stage}${s.stage === cp.bottleneck ? ' (bottleneck)' : ''}`),
        h('td', {}, s.device), num(fmtTime(s.busy_s)), num(fmtPct(s.share)),
        h('td', { class: 'bar-cell', 'aria-hidden': 'true' }, bar1),
        num(fmtTime(s.forward_s)), num(fmtTime(s.backward_s)), num(fmtTime(s.send_s)), num(fmtTime(s.dp_sync_s)));
    })));
  return h('div', { class: 'explain', 'data-bottleneck': cp.bottleneck },
    cp.sentences.map((t) => h('p', {}, t)), planNotes(est), bar, legend, note, scrollTable(table));
}

/** the core's notes on this plan (the estimate's `notes`: a host wait that makes a forward longer than its backward, a block mix, …) */
function planNotes(est) {
  const notes = Array.isArray(est?.notes) ? est.notes.filter((n) => typeof n === 'string' && n) : [];
  if (!notes.length) return null;
  return h('div', { class: 'plan-notes', 'data-testid': 'plan-notes' },
    h('p', {}, h('strong', {}, notes.length === 1 ? 'A note on this plan' : 'Notes on this plan')),
    h('ul', {}, notes.map((n) => h('li', {}, pageNote(n)))));
}

/** GPUs used per group, idle ones and why */
export function gpuUsageView(est, cluster, result, batch) {
  const u = idleReasons(est, cluster, result, batch);
  if (!u.groups.length) return h('p', { class: 'muted' }, 'The cluster is not known here.');
  const head = u.idle
    ? `The plan uses ${fmtInt(u.used)} of the cluster's ${fmtInt(u.total)} GPUs: ${fmtInt(u.idle)} stay idle.`
    : `The plan uses all ${fmtInt(u.total)} GPUs of the cluster.`;
  const rows = u.groups.map((g) => {
    const bar = h('span', {});
    bar.style.width = `${g.total ? (100 * g.used / g.total).toFixed(1) : 0}%`;
    return h('tr', { 'data-group': g.group, 'data-idle': g.idle },
      h('th', { scope: 'row' }, `group ${g.group}`), h('td', {}, g.device), h('td', {}, fmtInt(g.used)), h('td', {}, fmtInt(g.total)),
      h('td', {}, fmtInt(g.idle)), h('td', { 'aria-hidden': 'true' }, h('div', { class: 'usage-bar' }, bar)));
  });
  return h('div', { class: 'explain', 'data-idle': u.idle },
    h('p', { 'data-testid': 'gpu-usage-summary' }, head),
    scrollTable(h('table', { class: 'data' },
      h('caption', {}, 'GPUs per cluster group'),
      // the bar column's header is hidden with its cells, as in the critical-path table (an empty header read aloud says nothing)
      h('thead', {}, h('tr', {}, ['group', 'device', 'used', 'in the cluster', 'idle', ''].map((t) => h('th', { scope: 'col', ...(t ? {} : { 'aria-hidden': 'true' }) }, t)))),
      h('tbody', {}, rows))),
    u.reasons.length ? h('ul', { class: 'reasons', 'data-testid': 'idle-reasons' }, u.reasons.map((r) => h('li', {}, r))) : null);
}

const STATUS_TEXT = { feasible: 'a plan fits', infeasible: 'still no plan', not_applicable: 'does not apply', skipped: 'not tried (time)' };

/**
 * the advice: each variant, whether a plan fits, its tokens/s; onApply(variant) for an "Apply"
 * button, or null for none (the embed: its inputs are not on screen, so a change is made in the
 * full planner, which the note points to)
 */
export function adviceView(advice, onApply) {
  if (!advice || advice.pending) return h('p', { class: 'muted' }, 'Searching variants of these inputs (recompute, distributed optimizer, more nodes, …) with a short time limit each…');
  if (advice.error) return h('p', {}, `The advice could not be computed: ${advice.error.message ?? 'unknown error'}.`);
  if (advice.feasible_now) return h('p', {}, 'A short search of these inputs did find a plan: run the search again with a longer time limit.');
  const why = Object.entries(advice.infeasible || {}).filter(([, n]) => n > 0).map(([k, n]) => `${fmtInt(n)} for ${k}`).join(', ');
  const feasible = (advice.variants || []).filter((v) => v.status === 'feasible');
  return h('div', { class: 'advice' },
    h('p', {}, `No plan fits these inputs${why ? ` (the search rejected layouts: ${why})` : ''}. The core searched these variants, ${fmt(advice.elapsed_s, 1)} s in all:`),
    scrollTable(h('table', { class: 'data advice' },
      h('caption', {}, feasible.length ? `${feasible.length} variant${feasible.length === 1 ? '' : 's'} make${feasible.length === 1 ? 's' : ''} a plan fit` : 'None of the variants makes a plan fit'),
      h('thead', {}, h('tr', {}, ['change', 'result', 'tokens/s', 'GPUs', ...(onApply ? [''] : [])].map((t) => h('th', { scope: 'col' }, t)))),
      // the variants that make a plan fit first, by tokens/s, then the others in the core's order
      h('tbody', {}, [...feasible.sort((a, b) => (b.best?.tokens_per_s ?? 0) - (a.best?.tokens_per_s ?? 0)),
        ...(advice.variants || []).filter((v) => v.status !== 'feasible')].map((v) => {
        const apply = onApply && v.status === 'feasible' && Object.keys(v.changes || {}).length
          ? h('button', { type: 'button', class: 'apply-variant', 'data-variant': v.id, onclick: () => onApply(v) }, 'Apply') : null;
        return h('tr', { 'data-variant': v.id, 'data-status': v.status },
          h('th', { scope: 'row' }, v.label),
          h('td', { class: `status-${v.status}`, title: v.reason || null }, STATUS_TEXT[v.status] ?? v.status, v.reason && v.status !== 'feasible' ? h('span', { class: 'muted' }, `: ${v.reason}`) : null),
          h('td', {}, v.best ? fmtInt(v.best.tokens_per_s) : '–'),
          h('td', {}, v.best ? fmtInt(v.best.num_gpus) : '–'),
          onApply ? h('td', {}, apply) : null);
      })))),
    !onApply && feasible.length ? h('p', { class: 'muted', 'data-testid': 'advice-embed-note' }, 'To apply a change, open the full planner (link above).') : null);
}
