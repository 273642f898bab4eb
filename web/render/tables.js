// Tables over the plan() result: top plans, baselines, search statistics.
import { h, fmt, fmtInt, fmtPct, fmtTime } from '../dom.js';
import { stageSummary } from '../exports.js';
import { sourceSummary } from '../profile.js';

/**
 * The selected plan's stages as a table. sources: add the "source" column (where the numbers came
 * from: measured, interpolated or analytic, as the core reports per stage).
 */
export function stagesTable(est, { sources = false } = {}) {
  const stages = est?.stages || [];
  const head = ['stage', 'devices', 'GPUs', 'TP × DP', 'layers', 'forward', 'backward', 'optimizer', 'DP sync', 'memory / GPU'];
  if (sources) head.push('source');
  const summary = stageSummary(est || {});
  return h('table', { class: 'data', 'data-testid': 'stage-table' },
    h('caption', {}, sources
      ? 'Per stage: times per micro-batch (slowest replica) and where they come from (measured profile, interpolated between measured points, or the analytic model)'
      : 'Per stage: times per micro-batch (slowest replica), all from the analytic model'),
    h('thead', {}, h('tr', {}, head.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, stages.map((st, i) => {
      const row = h('tr', {},
        h('th', { scope: 'row' }, String(st.index ?? i)),
        h('td', {}, String(st.device ?? '')),
        h('td', {}, String(st.gpus ?? '')),
        h('td', {}, summary[i] ?? ''),
        h('td', {}, String(st.num_layers ?? '')),
        h('td', {}, fmtTime(st.forward_s)),
        h('td', {}, fmtTime(st.backward_s)),
        h('td', {}, fmtTime(st.optimizer_s)),
        h('td', {}, fmtTime(st.dp_sync_s)),
        h('td', {}, `${fmt(st.memory_GiB, 1)} / ${fmt(st.memory_capacity_GiB, 1)} GiB`));
      if (sources) {
        const src = sourceSummary(st.source);
        row.append(h('td', { class: 'source', 'data-source': st.source?.forward ?? 'analytic', title: src.detail }, src.text,
          h('span', { class: 'sr-only' }, ` (${src.detail})`)));
      }
      return row;
    })));
}

export function topPlansTable(plans, selected, onSelect) {
  const body = h('tbody', {});
  plans.forEach((p, i) => {
    const btn = h('button', { type: 'button', class: 'linkish', 'aria-pressed': String(i === selected), onclick: () => onSelect(i) }, `#${i + 1}`);
    body.append(h('tr', { class: i === selected ? 'selected' : '' },
      h('td', {}, btn),
      h('td', {}, fmtTime(p.iteration_time_s)),
      h('td', {}, fmtInt(p.tokens_per_s)),
      h('td', {}, fmtPct(p.mfu)),
      h('td', {}, String(p.num_gpus)),
      h('td', {}, String((p.stages || []).length)),
      h('td', {}, stageSummary(p).join(', ')),
      h('td', {}, (p.stages || []).map((s) => s.num_layers).join(' / ')),
      h('td', {}, `${p.plan?.micro_batch_size} × ${p.plan?.num_micro_batches}`),
      h('td', {}, p.memory_fits ? 'yes' : 'no')));
  });
  return h('table', { class: 'data', 'data-testid': 'top-plans' },
    h('caption', {}, 'Top plans (select one to show its stages and timeline)'),
    h('thead', {}, h('tr', {}, ['plan', 'iteration', 'tokens/s', 'MFU', 'GPUs', 'stages', 'TP × DP per stage', 'layers per stage', 'micro-batch × count', 'fits'].map((t) => h('th', { scope: 'col' }, t)))),
    body);
}

export function baselinesTable(baselines, best) {
  if (!baselines?.length) return h('p', { class: 'muted' }, 'No baselines in this result.');
  return h('table', { class: 'data' },
    h('caption', {}, 'Baselines (speedup = baseline iteration time / best plan iteration time)'),
    h('thead', {}, h('tr', {}, ['baseline', 'iteration', 'tokens/s', 'speedup of the best plan'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, baselines.map((b) => {
      const speedup = typeof b.speedup === 'number' ? b.speedup
        : (best && b.iteration_time_s ? b.iteration_time_s / best.iteration_time_s : null);
      return h('tr', {},
        h('th', { scope: 'row' }, String(b.name)),
        h('td', {}, b.iteration_time_s === null || b.iteration_time_s === undefined ? (b.reason ? String(b.reason) : 'infeasible') : fmtTime(b.iteration_time_s)),
        h('td', {}, fmtInt(b.tokens_per_s)),
        h('td', {}, speedup ? `${fmt(speedup, 2)}×` : '–'));
    })));
}

export function statsList(stats) {
  if (!stats) return h('p', {}, '');
  const inf = Object.entries(stats.infeasible || {});
  return h('dl', { class: 'stats' },
    h('dt', {}, 'evaluated'), h('dd', {}, fmtInt(stats.evaluated)),
    h('dt', {}, 'pruned'), h('dd', {}, fmtInt(stats.pruned)),
    h('dt', {}, 'infeasible'), h('dd', {}, inf.length ? inf.map(([k, v]) => `${k}: ${fmtInt(v)}`).join(', ') : 'none'),
    h('dt', {}, 'elapsed'), h('dd', {}, fmtTime(stats.elapsed_s)),
    h('dt', {}, 'complete'), h('dd', {}, stats.complete ? 'yes' : 'no (time limit or cancelled: best so far)'));
}
