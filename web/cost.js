// Time to train and cost: a token budget gives days of training, a price per GPU-hour per device
// gives cost per 1M tokens and the total. Pure functions (no DOM), tested in node.
//
// DEFAULT_PRICES are illustrative round numbers in US dollars per GPU-hour, written on
// PRICES_AS_OF from the range of public on-demand cloud offers the author knew of (single-GPU
// and 8-GPU instances of the large clouds and GPU clouds, 2024-2025). They are not quotes and
// no single source is claimed: prices differ by provider, region, commitment and date, and the
// page shows them in an editable table so that the user enters their own. Devices without a
// default cost nothing until a price is entered (the page says so).

export const PRICES_AS_OF = '2026-12-01';
export const DEFAULT_PRICES = {
  'h200-sxm-141gb': 3.8,
  'h100-sxm5-80gb': 3.0,
  'h100-pcie-80gb': 2.5,
  'gh200-96gb': 3.2,
  'a100-sxm4-80gb': 1.8,
  'a100-sxm4-40gb': 1.3,
  'a100-pcie-80gb': 1.6,
  'l40s-48gb': 1.2,
  'l4-24gb': 0.7,
  'a10-24gb': 0.75,
  'v100-sxm2-32gb': 0.9,
  'v100-sxm2-16gb': 0.75,
  't4-16gb': 0.35,
  'mi300x-192gb': 2.5,
  'mi250x-128gb': 1.5,
  'rtx4090-24gb': 0.4,
  'rtx3090-24gb': 0.25,
  'titan-rtx-24gb': 0.2,
  'rtx2080ti-11gb': 0.15,
  'rtx2080-8gb': 0.12,
};

export const DEFAULT_TOKENS = '1T';
const SUFFIX = { k: 1e3, K: 1e3, m: 1e6, M: 1e6, b: 1e9, B: 1e9, g: 1e9, G: 1e9, t: 1e12, T: 1e12, p: 1e15, P: 1e15 };

/** "1T", "300B", "2.5e12", "1,000,000" → number of tokens; null for empty; NaN for text that is not a count */
export function parseTokens(text) {
  const t = String(text ?? '').trim().replace(/[,_\s]/g, '');
  if (t === '') return null;
  const m = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?([kKmMbBgGtTpP]?)(tokens?)?$/i.exec(t);
  if (!m) return NaN;
  const x = Number(m[1] + (m[2] ?? '')) * (m[3] ? SUFFIX[m[3]] : 1);
  return Number.isFinite(x) && x > 0 ? x : NaN;
}

/** 1.5e12 → "1.5T tokens" */
export function formatTokens(x) {
  if (!Number.isFinite(x)) return '–';
  for (const [s, v] of [['T', 1e12], ['B', 1e9], ['M', 1e6], ['K', 1e3]]) {
    if (x >= v) return `${Number((x / v).toPrecision(4))}${s}`;
  }
  return String(Math.round(x));
}

/** the price of a device reference: the user's table, else the default, else null */
export function priceOf(device, prices) {
  const p = prices?.[device];
  if (Number.isFinite(p) && p >= 0) return p;
  const d = DEFAULT_PRICES[device];
  return Number.isFinite(d) ? d : null;
}

/**
 * GPUs per device reference that a plan uses (from the stages' replicas and the cluster's
 * groups), or all the cluster's GPUs with includeIdle.
 */
export function gpusByDevice(est, cluster, { includeIdle = false } = {}) {
  const groups = cluster?.groups || [];
  const ref = (gi) => {
    const d = groups[gi]?.device;
    return typeof d === 'string' ? d : (d?.name ?? `group ${gi}`);
  };
  const out = new Map();
  const add = (k, n) => out.set(k, (out.get(k) ?? 0) + n);
  if (includeIdle) {
    groups.forEach((g, i) => add(ref(i), (Number(g.nodes) || 0) * (Number(g.gpus_per_node) || 0)));
    return out;
  }
  for (const st of est?.stages || []) {
    const reps = Array.isArray(st.replicas) && st.replicas.length ? st.replicas : [{ group: st.group, count: st.dp, tp: st.tp }];
    for (const r of reps) add(ref(r.group), (r.count ?? 1) * (r.tp ?? 1));
  }
  return out;
}

/**
 * {tokensPerS, days, hours, usdPerHour, usdPer1M, totalUsd, gpuHours, missing: [device refs without a price]}
 * tokens: the token budget (null: only rates).
 */
export function trainingCost(est, cluster, { tokens = null, prices = {}, includeIdle = false } = {}) {
  const tps = est?.tokens_per_s;
  const byDev = gpusByDevice(est, cluster, { includeIdle });
  let usdPerHour = 0;
  let gpus = 0;
  const missing = [];
  for (const [dev, n] of byDev) {
    gpus += n;
    const p = priceOf(dev, prices);
    if (p === null) missing.push(dev);
    else usdPerHour += n * p;
  }
  const seconds = tokens && tps > 0 ? tokens / tps : null;
  return {
    tokensPerS: tps,
    gpus,
    seconds,
    hours: seconds === null ? null : seconds / 3600,
    days: seconds === null ? null : seconds / 86400,
    gpuHours: seconds === null ? null : (gpus * seconds) / 3600,
    usdPerHour,
    usdPer1M: tps > 0 ? (usdPerHour / 3600 / tps) * 1e6 : null,
    totalUsd: seconds === null ? null : (usdPerHour * seconds) / 3600,
    missing,
  };
}

/** $1,234 / $1.23M / $0.042 */
export function formatUsd(x) {
  if (!Number.isFinite(x)) return '–';
  if (x >= 1e9) return `$${(x / 1e9).toFixed(2)}B`;
  if (x >= 1e6) return `$${(x / 1e6).toFixed(2)}M`;
  if (x >= 1000) return `$${Math.round(x).toLocaleString('en-US')}`;
  if (x >= 1) return `$${x.toFixed(2)}`;
  return `$${x.toPrecision(2)}`;
}

/** plan indices ordered by 'time' (iteration time, the search's order) or 'cost' (cost per token) */
export function sortPlans(plans, by, cluster, opts) {
  const idx = plans.map((_, i) => i);
  if (by !== 'cost') return idx.sort((a, b) => plans[a].iteration_time_s - plans[b].iteration_time_s || a - b);
  const c = plans.map((p) => trainingCost(p, cluster, opts).usdPer1M ?? Infinity);
  return idx.sort((a, b) => c[a] - c[b] || plans[a].iteration_time_s - plans[b].iteration_time_s || a - b);
}
