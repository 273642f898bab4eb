// What-if for heterogeneous clusters: the scenario variants that measure each GPU group's marginal
// value (the group removed, one node less, one node more) and its scaling (the group at a range of
// node counts, the other groups fixed), and the rows and series built from their searches.
// Pure functions (no DOM), tested in node; web/whatif-ui.js runs the searches in the worker pool.
//
// A variant is the cluster's node counts, one per group ("nodes"); a group at 0 nodes is left out
// of the variant's cluster, so group indices in that variant's plan refer to its own cluster
// (variantCluster), which is what the cost of the plan must be computed with.

/** each group at these multiples of its node count (rounded to whole nodes), the others fixed */
export const SCALE_FACTORS = [0, 0.25, 0.5, 0.75, 1, 1.5, 2];
/** every what-if search: the best plan only, no baselines, one thread, at most this many seconds */
export const WHATIF_TIME_LIMIT_S = 5;

/**
 * the search options of a what-if job, from the user's (their time limit if shorter, TP per stage,
 * and the precision, FSDP and recomputation they left to the search, so that each what-if's plan is chosen as the
 * top plans were)
 */
export function whatIfOptions(user = {}) {
  const limit = Number(user.time_limit_s);
  const o = { top: 1, baselines: false, threads: 1, time_limit_s: Number.isFinite(limit) && limit > 0 ? Math.min(limit, WHATIF_TIME_LIMIT_S) : WHATIF_TIME_LIMIT_S,
    tp_per_stage: Boolean(user.tp_per_stage) };
  if (user.precisions !== undefined) o.precisions = user.precisions;
  if (user.fsdp === 'any') o.fsdp = 'any';
  if (user.recompute !== undefined) o.recompute = user.recompute;
  if (user.recompute_num_layers !== undefined) o.recompute_num_layers = user.recompute_num_layers;
  return o;
}

/** the scenario's cluster as an object (a preset id resolved with the preset list), without its id */
export function resolveCluster(cluster, presetClusters = []) {
  const c = typeof cluster === 'string' ? presetClusters.find((p) => p.id === cluster) : cluster;
  if (!c || typeof c !== 'object' || !Array.isArray(c.groups)) return null;
  const out = structuredClone(c);
  delete out.id;
  return out;
}

export const variantKey = (nodes) => nodes.join(',');

/** the cluster with these node counts per group (groups at 0 nodes left out), or null when no GPU is left */
export function variantCluster(base, nodes) {
  const groups = base.groups.map((g, i) => ({ ...g, nodes: nodes[i] })).filter((g) => g.nodes > 0);
  if (!groups.length) return null;
  const c = { ...base, groups };
  if (base.name) c.name = `${base.name} (what-if ${variantKey(nodes)} nodes)`;
  return c;
}

/** group i's distinct node counts for SCALE_FACTORS, ascending (its current count among them) */
export function scaleNodes(n) {
  return [...new Set(SCALE_FACTORS.map((f) => Math.round(n * f)))].sort((a, b) => a - b);
}

/** device reference of a group, for labels and prices */
export function groupDevice(g) {
  const d = g?.device;
  return typeof d === 'string' ? d : (d?.name ?? d?.base ?? 'inline device');
}

/**
 * The what-if of a scenario: {base, current: key, jobs: [{key, nodes, cluster, scenario}],
 * groups: [{group, device, nodes, gpusPerNode, removed, minus, plus, scale: [{nodes, gpus, key}]}]}
 * (removed/minus/plus: variant keys, null where there is no such variant). Each distinct variant
 * is one job; the current cluster is one too unless skipCurrent (its search is on screen already).
 */
export function whatIfSpec(scenario, presetClusters = [], { skipCurrent = false } = {}) {
  const base = resolveCluster(scenario?.cluster, presetClusters);
  if (!base || !base.groups.length) return null;
  const now = base.groups.map((g) => Math.max(0, Math.floor(Number(g.nodes) || 0)));
  const current = variantKey(now);
  const jobs = new Map();
  const variant = (i, n) => {
    const nodes = now.map((x, k) => (k === i ? n : x));
    const key = variantKey(nodes);
    const cluster = variantCluster(base, nodes);
    if (!cluster) return null;
    if (!jobs.has(key) && !(skipCurrent && key === current)) jobs.set(key, { key, nodes, cluster, scenario: { ...scenario, cluster } });
    return key;
  };
  const groups = base.groups.map((g, i) => {
    const gpn = Math.max(0, Number(g.gpus_per_node) || 0);
    return {
      group: i,
      device: groupDevice(g),
      nodes: now[i],
      gpusPerNode: gpn,
      removed: variant(i, 0),
      minus: now[i] > 1 ? variant(i, now[i] - 1) : (now[i] === 1 ? variant(i, 0) : null),
      plus: variant(i, now[i] + 1),
      scale: scaleNodes(now[i]).map((n) => ({ nodes: n, gpus: n * gpn, key: variant(i, n) })),
    };
  });
  if (!skipCurrent) variant(0, now[0]);
  return { base, current, jobs: [...jobs.values()], groups };
}

/**
 * One variant's outcome from its search result: {status: 'plan' | 'none' | 'error', est, complete, message}.
 * A result without plans is 'none' (no feasible plan); an error object is 'error' with the core's message.
 */
export function outcome(result) {
  if (!result) return { status: 'error', message: 'no result' };
  if (result.error) return { status: 'error', message: String(result.error.message ?? 'error') };
  const est = result.plans?.[0] ?? null;
  return est ? { status: 'plan', est, complete: result.stats?.complete !== false } : { status: 'none', complete: result.stats?.complete !== false };
}

/**
 * The marginal value of each group: per group and variant ('removed', 'minus', 'plus') the
 * variant's tokens/s, its change against the current cluster, and cost per 1M tokens.
 * outcomes: key → outcome() (missing: pending); costOf(est, cluster) → {usdPer1M}.
 */
export function marginalRows(spec, outcomes, costOf) {
  const cur = outcomes.get(spec.current);
  const curTps = cur?.status === 'plan' ? cur.est.tokens_per_s : null;
  const cell = (key) => {
    if (key === null) return { status: 'none', reason: 'no GPU left' };
    const o = outcomes.get(key);
    if (!o) return { status: 'pending', key };
    if (o.status !== 'plan') return { ...o, key, tokensPerS: 0, delta: curTps === null ? null : -curTps, usdPer1M: null };
    const job = spec.jobs.find((j) => j.key === key);
    const c = costOf(o.est, job?.cluster ?? spec.base);
    return { ...o, key, tokensPerS: o.est.tokens_per_s, delta: curTps === null ? null : o.est.tokens_per_s - curTps,
      deltaShare: curTps ? (o.est.tokens_per_s - curTps) / curTps : null, usdPer1M: c?.usdPer1M ?? null, gpus: o.est.num_gpus,
      // GPUs without a price: the cost counts the priced ones only (cost.js, formatCost)
      partial: Boolean(c?.partial), missing: c?.missing ?? [] };
  };
  return spec.groups.map((g) => ({ ...g, removedCell: cell(g.removed), minusCell: cell(g.minus), plusCell: cell(g.plus) }));
}

/**
 * The scaling chart's series: one per group, points {x: the group's GPUs, y: tokens/s (0 without a
 * plan), status, current} in ascending x; pending points are left out.
 */
export function scalingSeries(spec, outcomes) {
  return spec.groups.map((g) => ({
    group: g.group,
    label: `group ${g.group}: ${g.device}`,
    points: g.scale.flatMap((p) => {
      const key = p.key ?? null;
      const o = key === null ? { status: 'none' } : outcomes.get(key);
      if (!o) return [];
      return [{ x: p.gpus, nodes: p.nodes, y: o.status === 'plan' ? o.est.tokens_per_s : 0, status: o.status, current: p.nodes === g.nodes,
        complete: o.complete !== false }];
    }),
  }));
}

/** "nice" axis ticks covering [lo, hi]: about `count` steps of 1, 2 or 5 × 10^k */
export function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw - 1e-12) ?? 10 * mag;
  const start = Math.floor(lo / step + 1e-9) * step;
  const ticks = [];
  for (let v = start; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks.at(-1) < hi - 1e-9) ticks.push(Number((ticks.at(-1) + step).toPrecision(12)));
  return ticks;
}

/** a linear map of [d0, d1] onto [r0, r1] */
export function linearScale(d0, d1, r0, r1) {
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}

/**
 * The chart's geometry for series in a width × height box: axes from 0 to nice maxima,
 * {xTicks, yTicks, x(v), y(v), lines: [{group, d: SVG path, points: [{cx, cy, ...point}]}]}.
 */
export function chartGeometry(series, { width = 560, height = 260, margin = { left: 64, right: 12, top: 10, bottom: 36 } } = {}) {
  const pts = series.flatMap((s) => s.points);
  const xMax = Math.max(1, ...pts.map((p) => p.x));
  const yMax = Math.max(1, ...pts.map((p) => p.y));
  const xTicks = niceTicks(0, xMax, 6);
  const yTicks = niceTicks(0, yMax, 4);
  const x = linearScale(0, xTicks.at(-1), margin.left, width - margin.right);
  const y = linearScale(0, yTicks.at(-1), height - margin.bottom, margin.top);
  const lines = series.map((s) => {
    const points = s.points.map((p) => ({ ...p, cx: x(p.x), cy: y(p.y) }));
    const d = points.map((p, i) => `${i ? 'L' : 'M'}${p.cx.toFixed(1)},${p.cy.toFixed(1)}`).join('');
    return { group: s.group, label: s.label, d, points };
  });
  return { width, height, margin, xTicks, yTicks, x, y, lines };
}
