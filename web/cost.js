// Time to train and cost: a token budget gives days of training, a price per GPU-hour per device
// gives cost per 1M tokens and the total. Pure functions (no DOM), tested in node.
//
// Default prices come from the device presets (presets/devices/*.json: price_usd_per_gpu_hour,
// price_source, price_as_of; docs/presets.md, "Prices"): public on-demand list prices transcribed
// from the provider's price page as known at the date given, not fetched live. Devices without a
// known public on-demand offer carry no price and cost nothing until the user enters one (the
// page says so).

/** the prices the device presets carry: id → {usd, source, asOf}; devices without one are left out */
export function presetPrices(devices) {
  const out = {};
  for (const d of devices || []) {
    const usd = d?.price_usd_per_gpu_hour;
    if (typeof d?.id === 'string' && Number.isFinite(usd) && usd >= 0) {
      out[d.id] = { usd, source: String(d.price_source ?? ''), asOf: String(d.price_as_of ?? '') };
    }
  }
  return out;
}

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

/** the price of a device reference: the user's table, else the preset's (defaults: presetPrices()), else null */
export function priceOf(device, prices, defaults = {}) {
  const p = prices?.[device];
  if (Number.isFinite(p) && p >= 0) return p;
  const d = defaults?.[device]?.usd;
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
    // an inline device by its name; a calibrated preset ({"base": id, …}) by its preset's id
    return typeof d === 'string' ? d : (d?.name ?? d?.base ?? `group ${gi}`);
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
 * tokens: the token budget (null: only rates); prices: the user's; defaults: presetPrices() of the device presets.
 */
export function trainingCost(est, cluster, { tokens = null, prices = {}, includeIdle = false, defaults = {} } = {}) {
  const tps = est?.tokens_per_s;
  const byDev = gpusByDevice(est, cluster, { includeIdle });
  let usdPerHour = 0;
  let gpus = 0;
  const missing = [];
  for (const [dev, n] of byDev) {
    gpus += n;
    const p = priceOf(dev, prices, defaults);
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
