// Tables over the plan() result: top plans, baselines, search statistics.
import { h, fmt, fmtInt, fmtPct, fmtTime } from '../dom.js';
import { gridHeader, stageSummary } from '../exports.js';
import { sourceSummary } from '../profile.js';
import { gloss } from '../glossary.js';
import { formatCost, formatDays, formatDuration, unpricedNote } from '../cost.js';
import { planChoicesText } from '../plan-choices.js';
import { pageNote } from '../explain.js';
import { WARN_SHARE } from './memory.js';

const th = (label, term = label) => h('th', { scope: 'col', title: gloss(term) }, label);

/** "yes", "no", or "yes, 99.9 %" where a stage's GPUs are above 90 % of their memory (the memory panel's warning) */
export function fitsText(p) {
  if (!p.memory_fits) return 'no';
  const share = Math.max(0, ...(p.stages || []).map((st) => (st.memory_capacity_GiB > 0 ? st.memory_GiB / st.memory_capacity_GiB : 0)));
  return share > WARN_SHARE ? `yes, ${(100 * share).toFixed(1)} %` : 'yes';
}

/** a mixed stage's samples per replica, runs of equal replicas counted: "16×6 + 16×2" */
export function replicaSamples(replicas) {
  const runs = [];
  for (const r of replicas || []) {
    const last = runs[runs.length - 1];
    if (last && last.samples === r.samples && last.device === r.device) last.n += 1;
    else runs.push({ samples: r.samples, device: r.device, n: 1 });
  }
  return runs.map((x) => (x.n > 1 ? `${x.n}×${x.samples}` : String(x.samples))).join(' + ');
}

/** samples per data-parallel replica per stage (Megatron's micro-batch): one number, or per stage */
export function replicaMicroBatch(est) {
  const per = (est?.stages || []).map((st) => (Number.isFinite(st.samples_per_replica) ? st.samples_per_replica
    : Array.isArray(st.replicas) && st.replicas.length ? replicaSamples(st.replicas) : '?'));
  return new Set(per.map(String)).size === 1 ? String(per[0] ?? '') : per.join(' / ');
}

/**
 * The selected plan's stages as a table. sources: add the "source" column (where the numbers came
 * from: measured, interpolated or analytic, as the core reports per stage).
 */
export function stagesTable(est, { sources = false } = {}) {
  const stages = est?.stages || [];
  const grid = gridHeader([est]);
  const head = ['stage', 'devices', 'GPUs', grid, 'micro-batch per replica', 'layers', 'forward', 'backward', 'optimizer', 'DP sync', 'memory / GPU'];
  if (sources) head.push('source');
  const summary = stageSummary(est || {}, '×');
  return h('table', { class: 'data', 'data-testid': 'stage-table' },
    h('caption', {}, sources
      ? 'Per stage: times per micro-batch (slowest replica) and where they come from (measured profile, interpolated between measured points, or the analytic model)'
      : 'Per stage: times per micro-batch (slowest replica), all from the analytic model'),
    // the grid column keeps the glossary's TP × DP entry whatever its header names
    h('thead', {}, h('tr', {}, head.map((t) => th(t, t === grid ? 'TP × DP' : t)))),
    h('tbody', {}, stages.map((st, i) => {
      const row = h('tr', {},
        h('th', { scope: 'row' }, String(st.index ?? i)),
        h('td', {}, String(st.device ?? '')),
        h('td', {}, String(st.gpus ?? '')),
        h('td', {}, summary[i] ?? ''),
        h('td', {}, Number.isFinite(st.samples_per_replica) ? String(st.samples_per_replica) : replicaSamples(st.replicas)),
        h('td', {}, String(st.num_layers ?? '')),
        h('td', { class: 'num' }, fmtTime(st.forward_s)),
        h('td', { class: 'num' }, fmtTime(st.backward_s)),
        h('td', { class: 'num' }, fmtTime(st.optimizer_s)),
        h('td', { class: 'num' }, fmtTime(st.dp_sync_s)),
        h('td', { class: 'num' }, `${fmt(st.memory_GiB, 1)} / ${fmt(st.memory_capacity_GiB, 1)} GiB`));
      if (sources) {
        const src = sourceSummary(st.source);
        row.append(h('td', { class: 'source', 'data-source': st.source?.forward ?? 'analytic', title: src.detail }, src.text,
          h('span', { class: 'sr-only' }, ` (${src.detail})`)));
      }
      return row;
    })));
}

/**
 * The top plans. order: plan indices in display order (sorted by time or cost); costs[i]:
 * trainingCost() of plan i (cost.js), or null without prices; the rank "#k" is the search's.
 */
/**
 * equivalent: per plan the earlier plan it is another layer split of (equivalentPlans), -1 if none;
 * such rows are folded under that plan (hidden unless it is in `expanded`, or selected), whose row
 * gets a toggle "+N splits" (onToggle(i)).
 */
export function topPlansTable(plans, selected, onSelect, { order = null, costs = null, budget = false, equivalent = null, expanded = new Set(), onToggle = null } = {}) {
  const body = h('tbody', {});
  // a search that freed the precision, FSDP or recomputation: each plan's choice in its own column
  const choices = plans.some((p) => planChoicesText(p.plan));
  const folded = (k) => plans.map((_, j) => j).filter((j) => equivalent?.[j] === k);
  for (const i of order ?? plans.map((_, k) => k)) {
    const p = plans[i];
    const c = costs?.[i];
    const rep = equivalent?.[i] ?? -1;
    const btn = h('button', { type: 'button', class: 'linkish', 'aria-pressed': String(i === selected), 'data-plan': i, onclick: () => onSelect(i) }, `#${i + 1}`);
    const same = folded(i);
    const toggle = same.length && onToggle
      ? h('button', { type: 'button', class: 'linkish fold', 'aria-expanded': String(expanded.has(i)), 'data-fold': i, onclick: () => onToggle(i),
        title: `${same.map((j) => `#${j + 1}`).join(', ')}: the same stages with another layer split, the same iteration time` },
      expanded.has(i) ? `− ${same.length} split${same.length === 1 ? '' : 's'}` : `+${same.length} split${same.length === 1 ? '' : 's'}`)
      : null;
    body.append(h('tr', { class: [i === selected ? 'selected' : '', rep >= 0 ? 'equivalent' : ''].filter(Boolean).join(' '), 'data-plan': i,
      hidden: rep >= 0 && !expanded.has(rep) && i !== selected ? '' : null },
      h('td', {}, btn, toggle ? ' ' : null, toggle, rep >= 0 ? h('span', { class: 'muted' }, ` = #${rep + 1}, another split`) : null),
      h('td', {}, fmtTime(p.iteration_time_s)),
      h('td', { class: 'tps', 'data-value': p.tokens_per_s }, fmtInt(p.tokens_per_s)),
      h('td', {}, fmtPct(p.mfu)),
      // what a reader compares first (cost, days) before the plan's shape: at 1440 px the table
      // fits up to the cost columns without scrolling sideways (issue 36 item 6)
      // GPUs without a price are not counted: the cost is a lower bound ("≥ $x", or "unknown"), the tooltip says which
      h('td', { class: c?.partial ? 'cost-1m partial' : 'cost-1m', 'data-usd': c?.usdPer1M ?? '', 'data-partial': c?.partial ? 'true' : null,
        title: unpricedNote(c) }, c ? formatCost(c) : '–'),
      budget ? h('td', { class: 'days', title: c?.seconds == null ? null : formatDuration(c.seconds) }, c?.days == null ? '–' : formatDays(c.days)) : null,
      budget ? h('td', { class: 'total', title: unpricedNote(c) }, c?.totalUsd == null ? '–' : formatCost(c, 'totalUsd')) : null,
      h('td', {}, String(p.num_gpus)),
      // interleaved 1F1B: the stage count and its model chunks per stage (Megatron's virtual pipeline size)
      (p.plan?.virtual_stages ?? 1) > 1
        ? h('td', { class: 'pp', title: `interleaved 1F1B: ${p.plan.virtual_stages} model chunks per stage` }, `${(p.stages || []).length} × ${p.plan.virtual_stages} chunks`)
        : h('td', { class: 'pp' }, String((p.stages || []).length)),
      h('td', { class: 'fits', title: 'the fullest stage\'s memory per GPU against its capacity, shown above 90 %' }, fitsText(p)),
      choices ? h('td', { class: 'choices', 'data-testid': 'plan-choices' }, planChoicesText(p.plan) || '–') : null,
      h('td', { class: 'mb-replica' }, replicaMicroBatch(p)),
      h('td', {}, stageSummary(p, '×').join(', ')),
      h('td', {}, (p.stages || []).map((s) => s.num_layers).join(' / ')),
      h('td', {}, `${p.plan?.micro_batch_size} × ${p.plan?.num_micro_batches}`)));
  }
  const head = [th('plan', 'plan'), th('iteration'), th('tokens/s'), th('MFU'), th('$ per 1M tokens', 'cost per 1M tokens'),
    budget ? th('days to train') : null, budget ? th('total cost', 'cost per 1M tokens') : null, th('GPUs', 'GPUs'), th('stages (PP)', 'PP'),
    th('fits', 'fits'), choices ? th('training choices', 'precision') : null, th('micro-batch per replica'), th(`${gridHeader(plans)} per stage`, 'TP × DP'), th('layers per stage', 'PP'),
    th('pipeline micro-batch × count', 'pipeline micro-batch')];
  return h('table', { class: 'data', 'data-testid': 'top-plans' },
    h('caption', {}, 'Top plans (select one to show its stages, timeline and exports)'),
    h('thead', {}, h('tr', {}, head)),
    body);
}

export function baselinesTable(baselines, best) {
  if (!baselines?.length) return h('p', { class: 'muted' }, 'No baselines in this result.');
  return h('table', { class: 'data' },
    h('caption', {}, 'Baselines: simpler planners on the same cluster (speedup = baseline iteration time / best plan iteration time)'),
    h('thead', {}, h('tr', {}, [th('baseline', 'baseline'), th('iteration'), th('tokens/s'), th('speedup of the best plan', 'speedup')])),
    h('tbody', {}, baselines.map((b) => {
      const speedup = typeof b.speedup === 'number' ? b.speedup
        : (best && b.iteration_time_s ? b.iteration_time_s / best.iteration_time_s : null);
      return h('tr', {},
        h('th', { scope: 'row', title: gloss(String(b.name)) ?? (b.description ? String(b.description) : null) }, String(b.name)),
        h('td', {}, b.iteration_time_s === null || b.iteration_time_s === undefined ? (b.reason ? String(b.reason) : 'infeasible') : fmtTime(b.iteration_time_s)),
        h('td', {}, b.iteration_time_s === null || b.iteration_time_s === undefined || !b.tokens_per_s ? '–' : fmtInt(b.tokens_per_s)),
        h('td', {}, speedup ? `${fmt(speedup, 2)}×` : '–'));
    })));
}

export function statsList(stats) {
  if (!stats) return h('p', {}, '');
  const inf = Object.entries(stats.infeasible || {});
  return h('dl', { class: 'stats' },
    h('dt', {}, 'evaluated'), h('dd', {}, `${fmtInt(stats.evaluated)} complete plans`),
    h('dt', {}, 'pruned'), h('dd', {}, `${fmtInt(stats.pruned)} branches cut by a lower bound`),
    h('dt', {}, 'infeasible'), h('dd', {}, inf.length ? inf.map(([k, v]) => `${k}: ${fmtInt(v)}`).join(', ') : 'none'),
    h('dt', {}, 'elapsed'), h('dd', {}, fmtTime(stats.elapsed_s)),
    h('dt', {}, 'complete'), h('dd', {}, stats.complete ? 'yes' : 'no (time limit or cancelled: best so far)'),
    // what the search skipped or left out, a baseline it listed, settings that change nothing
    stats.notes?.length ? [h('dt', {}, 'notes'), h('dd', { 'data-testid': 'search-notes' }, h('ul', {}, stats.notes.map((n) => h('li', {}, pageNote(n)))))] : null);
}
