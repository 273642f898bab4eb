// Side-by-side comparison of two plans of the top list: the figures of each (speed, cost, memory,
// shape) and their stages, with what differs marked and, for figures with a direction, which plan
// is better. Pure functions (no DOM), tested in node; web/render/compare.js draws them.
import { scheduleLabel, stageSummary } from './exports.js';
import { planChoicesText } from './plan-choices.js';

const peakShare = (est) => Math.max(0, ...(est?.stages || []).map((st) => (st.memory_capacity_GiB > 0 ? st.memory_GiB / st.memory_capacity_GiB : 0)));
const perReplica = (st) => (Number.isFinite(st.samples_per_replica) ? String(st.samples_per_replica)
  : Array.isArray(st.replicas) ? st.replicas.map((r) => r.samples).join('+') : '?');
const devicesOf = (st) => (Array.isArray(st.replicas) && st.replicas.length ? [...new Set(st.replicas.map((r) => r.device))].join('+') : String(st.device ?? ''));

/**
 * The figures compared: [key, label, value(est, cost), better: 'high' | 'low' | null, format hint]
 * ('index': a number that names something, such as a stage, so no change in % is shown; 'count': a
 * small count, such as the pipeline stages, whose change in % says nothing: "4 vs 2" reads better than "-50 %").
 * cost: trainingCost() of the plan (cost.js) or null.
 */
export const COMPARE_FIGURES = [
  ['tokens_per_s', 'tokens/s', (e) => e.tokens_per_s, 'high', 'int'],
  ['iteration_time_s', 'iteration time', (e) => e.iteration_time_s, 'low', 'time'],
  ['mfu', 'MFU', (e) => e.mfu, 'high', 'pct'],
  ['num_gpus', 'GPUs used', (e) => e.num_gpus, null, 'int'],
  ['usd_per_1m', '$ per 1M tokens', (e, c) => c?.usdPer1M ?? null, 'low', 'usd'],
  ['days', 'days to train', (e, c) => c?.days ?? null, 'low', 'days'],
  ['total_usd', 'total cost', (e, c) => c?.totalUsd ?? null, 'low', 'usd'],
  ['stages', 'stages (PP)', (e) => (e.stages || []).length, null, 'count'],
  ['schedule', 'schedule (model chunks per stage)', (e) => scheduleLabel(e), null, 'text'],
  // a search that freed the precision, FSDP or recomputation: each plan's choice (empty on both sides otherwise)
  ['choices', 'training choices (searched)', (e) => planChoicesText(e.plan) || null, null, 'text'],
  ['tp_dp', 'TP × DP per stage', (e) => stageSummary(e, '×').join(', '), null, 'text'],
  ['layers', 'layers per stage', (e) => (e.stages || []).map((s) => s.num_layers).join(' / '), null, 'text'],
  ['devices', 'devices per stage', (e) => (e.stages || []).map(devicesOf).join(' / '), null, 'text'],
  // one value when every stage has it, else each stage's (a set would drop repeats: 2 / 2 / 1 / 1 read 2 / 1)
  ['mb_replica', 'micro-batch per replica', (e) => { const per = (e.stages || []).map(perReplica); return new Set(per).size === 1 ? per[0] : per.join(' / '); }, null, 'text'],
  ['micro_batches', 'pipeline micro-batch × count', (e) => `${e.plan?.micro_batch_size} × ${e.plan?.num_micro_batches}`, null, 'text'],
  ['peak_memory', 'peak memory / capacity (fullest stage)', (e) => peakShare(e), 'low', 'pct'],
  ['fits', 'fits in memory', (e) => (e.memory_fits === false ? 'no' : 'yes'), null, 'text'],
  ['bottleneck', 'bottleneck stage', (e) => e.breakdown?.bottleneck_stage ?? null, null, 'index'],
  ['bubble_s', 'pipeline bubble', (e) => e.breakdown?.bubble_s ?? null, 'low', 'time'],
  ['dp_comm_s', 'DP gradient sync', (e) => e.breakdown?.dp_comm_s ?? null, 'low', 'time'],
  ['pp_comm_s', 'exposed pipeline sends', (e) => e.breakdown?.pp_comm_s ?? null, 'low', 'time'],
  ['tp_comm_s', 'TP collectives', (e) => e.breakdown?.tp_comm_s ?? null, 'low', 'time'],
  ['ep_comm_s', 'EP all-to-all', (e) => e.breakdown?.ep_comm_s ?? null, 'low', 'time'],
];

/** numbers within this relative difference count as equal (the core rounds its outputs) */
export const SAME_REL = 1e-9;

function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= SAME_REL * Math.max(Math.abs(a), Math.abs(b));
  return a === b;
}

/**
 * Rows {key, label, a, b, format, differs, better: 'a' | 'b' | null} for plans a and b with their
 * costs; a figure missing on either side (no breakdown, no price) is null there and never 'better'.
 */
export function compareRows(a, b, costA = null, costB = null) {
  return COMPARE_FIGURES.map(([key, label, value, dir, format]) => {
    const va = value(a, costA) ?? null;
    const vb = value(b, costB) ?? null;
    const differs = !same(va, vb);
    // a dollar figure of a plan with unpriced GPUs is a lower bound (cost.js, formatCost): never the better one
    const partial = format === 'usd' ? { a: Boolean(costA?.partial), b: Boolean(costB?.partial) } : { a: false, b: false };
    let better = null;
    if (differs && dir && typeof va === 'number' && typeof vb === 'number' && !partial.a && !partial.b) better = (dir === 'high') === (va > vb) ? 'a' : 'b';
    return { key, label, a: va, b: vb, format, differs, better, partial };
  });
}

/**
 * Formats a and b with fmt(x, digits), adding digits (from `from` up to `to`) until two values
 * that differ also read differently: "$0.12" and "$0.12" become "$0.121" and "$0.122".
 */
export function distinctPair(a, b, fmt, from = 3, to = 8) {
  let d = from;
  while (d < to && typeof a === 'number' && typeof b === 'number' && !same(a, b) && fmt(a, d) === fmt(b, d)) d++;
  return [fmt(a, d), fmt(b, d)];
}

/** one stage as the comparison shows it, or null past the plan's last stage */
export function stageFigures(st) {
  if (!st) return null;
  return {
    devices: devicesOf(st),
    layers: st.num_layers,
    tp_dp: stageSummary({ stages: [st] }, '×')[0],
    mb_replica: perReplica(st),
    compute_s: (st.forward_s ?? 0) + (st.backward_s ?? 0),
    memory_GiB: st.memory_GiB,
    memory_capacity_GiB: st.memory_capacity_GiB,
  };
}

/** stage i of both plans side by side: {index, a, b, differs: [keys that differ]} up to the longer pipeline */
export function comparePairs(a, b) {
  const n = Math.max((a?.stages || []).length, (b?.stages || []).length);
  return Array.from({ length: n }, (_, i) => {
    const sa = stageFigures(a?.stages?.[i]);
    const sb = stageFigures(b?.stages?.[i]);
    const differs = sa && sb ? Object.keys(sa).filter((k) => !same(sa[k], sb[k])) : Object.keys(sa ?? sb);
    return { index: i, a: sa, b: sb, differs };
  });
}

/**
 * Plans that are another layer split of an earlier plan's stages with the same iteration time:
 * same micro-batching, schedule, and per stage the same replicas (groups, TP, samples) and DP; only
 * the layers move between stages that cost the same. → per plan the index of the first such earlier
 * plan, or -1. A search often lists several (K fastest plans, ties included); the page folds them.
 */
export function equivalentPlans(plans) {
  const shape = (p) => JSON.stringify([p?.plan?.micro_batch_size, p?.plan?.num_micro_batches, p?.plan?.schedule ?? '1f1b', p?.plan?.virtual_stages ?? 1,
    p?.plan?.precision ?? null, p?.plan?.fsdp ?? null, p?.plan?.recompute ?? null, p?.plan?.recompute_num_layers ?? null, (p?.plan?.stages || []).map((st) => [st.group, st.tp, st.dp, st.replicas ?? null])]);
  const shapes = plans.map(shape);
  return plans.map((p, i) => {
    for (let k = 0; k < i; k++) {
      const t = plans[k].iteration_time_s;
      if (shapes[k] === shapes[i] && Math.abs(p.iteration_time_s - t) <= 1e-9 * Math.abs(t)) return k;
    }
    return -1;
  });
}

/** the default pair: #1 and the first plan that is not another split of it (#1 and #2 when all are; #1 twice with one plan) */
export function defaultPair(n, equivalent = []) {
  if (n <= 1) return [0, 0];
  const other = equivalent.findIndex((e, i) => i > 0 && e === -1);
  return [0, other > 0 ? other : 1];
}
