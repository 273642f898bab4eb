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

/** the token budgets the page accepts: 1 token to 10,000T (1e16; the largest runs so far are tens of T) */
export const MIN_TOKENS = 1;
export const MAX_TOKENS = 1e16;
export const TOKENS_RANGE_MESSAGE = 'a number of tokens from 1 to 10,000T (1e16), e.g. 1T, 300B or 2.5e12';

// a count as typed (separators removed): number, exponent, suffix, "token(s)"; a price: a number
const TOKENS_TEXT = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?([kKmMbBgGtTpP]?)(tokens?)?$/i;
const PRICE_TEXT = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** the number a count's text says (separators removed; NaN if it is not in a count's form), whole or not */
function countValue(plain) {
  const m = TOKENS_TEXT.exec(plain);
  return m ? Number(m[1] + (m[2] ?? '')) * (m[3] ? SUFFIX[m[3]] : 1) : NaN;
}
const inTokenRange = (x) => Number.isFinite(x) && x >= MIN_TOKENS && x <= MAX_TOKENS;

/**
 * "1T", "300B", "2.5e12", "1,000,000" → number of tokens; null for empty; NaN for text that is not
 * a count, a fraction of a token, or a count outside MIN_TOKENS…MAX_TOKENS (the field then says which)
 */
export function parseTokens(text) {
  const t = String(text ?? '').trim().replace(/[,_\s]/g, '');
  if (t === '') return null;
  const x = countValue(t);
  // a count is whole: 1.1T is 1.1e12 up to the float's last digits (rounded), 5.5 tokens is refused
  if (!Number.isFinite(x) || Math.abs(x - Math.round(x)) > 1e-9 * x) return NaN;
  return inTokenRange(x) ? Math.round(x) : NaN;
}

const quoted = (t) => JSON.stringify(String(t).slice(0, 40));

/** what is wrong with a token budget as typed, naming the value and what is allowed ('' when it is fine or empty) */
export function tokensProblem(text) {
  const t = String(text ?? '').trim();
  if (!Number.isNaN(parseTokens(t))) return '';
  const plain = t.replace(/[,_\s]/g, '');
  if (inTokenRange(countValue(plain))) return `${t.slice(0, 40)} is not a whole number of tokens; expected ${TOKENS_RANGE_MESSAGE}`;
  // a count in the right form (a sign allowed) is out of range; anything else is not a count
  return TOKENS_TEXT.test(plain.replace(/^[+-]/, ''))
    ? `${t.slice(0, 40)} is out of range; expected ${TOKENS_RANGE_MESSAGE}`
    : `${quoted(t)} is not a number of tokens; expected ${TOKENS_RANGE_MESSAGE}`;
}

/** a price per GPU-hour as typed ("2.5", "$2.5") → dollars; null when empty; NaN when not a price >= 0 */
export function parsePrice(text) {
  const t = String(text ?? '').trim().replace(/^\$/, '');
  if (t === '') return null;
  if (!PRICE_TEXT.test(t)) return NaN;
  const x = Number(t);
  return Number.isFinite(x) ? x : NaN;
}

/** what is wrong with a price as typed, naming the value and what is allowed ('' when it is fine or empty) */
export function priceProblem(text) {
  const t = String(text ?? '').trim();
  if (!Number.isNaN(parsePrice(t))) return '';
  const range = 'expected US dollars per GPU-hour, a finite number >= 0, e.g. 2.5';
  return PRICE_TEXT.test(t.replace(/^\$/, '').replace(/^[+-]/, '')) ? `${t.slice(0, 40)} is out of range; ${range}` : `${quoted(t)} is not a price; ${range}`;
}

/** 1.5e12 → "1.5T", 1 → "1" (a count of tokens, without the word: see tokensPhrase) */
export function formatTokens(x) {
  if (!Number.isFinite(x)) return '–';
  for (const [s, v] of [['T', 1e12], ['B', 1e9], ['M', 1e6], ['K', 1e3]]) {
    if (x >= v) return `${Number((x / v).toPrecision(4))}${s}`;
  }
  return String(Math.round(x));
}

/** 1.5e12 → "1.5T tokens", 1 → "1 token" */
export const tokensPhrase = (x) => `${formatTokens(x)} ${formatTokens(x) === '1' ? 'token' : 'tokens'}`;

const num1 = (x) => Number(x.toFixed(1)).toLocaleString('en-US', { maximumFractionDigits: 1 });
/**
 * A training time in seconds, in the largest unit that reads well: "12.3 days", "5.2 hours",
 * "7.5 minutes", "4.2 seconds", "< 0.1 seconds"; "–" for none.
 */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return '–';
  const unit = (x, word) => `${num1(x)} ${word}${num1(x) === '1' ? '' : 's'}`;
  if (seconds >= 86400) return unit(seconds / 86400, 'day');
  if (seconds >= 3600) return unit(seconds / 3600, 'hour');
  if (seconds >= 60) return unit(seconds / 60, 'minute');
  return seconds >= 0.05 ? unit(seconds, 'second') : '< 0.1 seconds';
}

/** days for the "days to train" columns: one decimal, "< 0.1" below a tenth of a day (formatDuration says how long) */
export function formatDays(days) {
  if (!Number.isFinite(days) || days < 0) return '–';
  return days >= 0.05 ? num1(days) : '< 0.1';
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
    // a replica is tp x cp GPUs (context parallelism)
    for (const r of reps) add(ref(r.group), (r.count ?? 1) * (r.tp ?? 1) * (st.cp ?? 1));
  }
  return out;
}

/**
 * {tokensPerS, days, hours, usdPerHour, usdPer1M, totalUsd, gpuHours, missing: [device refs without a price], missingLabels}
 * tokens: the token budget (null: only rates); prices: the user's; defaults: presetPrices() of the device presets;
 * label: device ref → the name messages show; invalid: device refs whose typed price is not a price
 * (the form shows why): a plan using one has no dollar figures (null, shown "–") and lists them in
 * `invalid`, rather than figures at the last valid price with nothing to say they are old.
 */
export function trainingCost(est, cluster, { tokens = null, prices = {}, includeIdle = false, defaults = {}, label = (ref) => ref, invalid = [] } = {}) {
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
  const badPrice = [...byDev.keys()].filter((dev) => invalid.includes(dev));
  if (badPrice.length) usdPerHour = null;
  return {
    tokensPerS: tps,
    gpus,
    seconds,
    hours: seconds === null ? null : seconds / 3600,
    days: seconds === null ? null : seconds / 86400,
    gpuHours: seconds === null ? null : (gpus * seconds) / 3600,
    usdPerHour,
    usdPer1M: tps > 0 && usdPerHour !== null ? (usdPerHour / 3600 / tps) * 1e6 : null,
    totalUsd: seconds === null || usdPerHour === null ? null : (usdPerHour * seconds) / 3600,
    invalid: badPrice.map(label),
    missing,
    missingLabels: missing.map(label), // the same devices by name, for messages
    // some GPUs have no price: the dollar figures count only the priced ones (a lower bound)
    partial: missing.length > 0,
  };
}

/**
 * $1,234 / $1.23M / $4.57B / $1.23T / $4.6e+15 / $0.0421: three significant digits at least, so
 * that different costs read differently ($0.121 and $0.122). digits: significant digits below $1,000.
 */
export function formatUsd(x, digits = 3) {
  if (!Number.isFinite(x)) return '–';
  if (x >= 1e15) return `$${x.toExponential(2)}`;
  if (x >= 1e12) return `$${(x / 1e12).toFixed(2)}T`;
  if (x >= 1e9) return `$${(x / 1e9).toFixed(2)}B`;
  if (x >= 1e6) return `$${(x / 1e6).toFixed(2)}M`;
  if (x >= 1000) return `$${Math.round(x).toLocaleString('en-US')}`;
  if (x >= 1 && digits <= 3) return `$${x.toFixed(2)}`;
  if (x === 0) return '$0';
  // trailing zeros kept: a column of costs under $1 reads "$0.170" beside "$0.181", not "$0.17"
  return `$${Number(x.toPrecision(digits)).toLocaleString('en-US', { minimumSignificantDigits: digits, maximumSignificantDigits: digits })}`;
}

/**
 * A dollar figure of trainingCost() (field: 'usdPer1M', 'totalUsd', 'usdPerHour'): "≥ $x" when
 * some GPUs have no price (only the priced ones are counted), "unknown" when none has one.
 */
export function formatCost(c, field = 'usdPer1M') {
  const x = c?.[field];
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (!c.partial) return formatUsd(x);
  return x > 0 ? `≥ ${formatUsd(x)}` : 'unknown';
}

/** the tooltip of a partial cost: which devices have no price */
export const unpricedNote = (c) => (c?.partial
  ? `No price for ${(c.missingLabels ?? c.missing).join(', ')}: ${c.missing.length === 1 ? 'its' : 'their'} GPUs are not counted, so the cost is at least this `
    + '(unknown if no GPU has a price). Enter a price under Time to train and cost.'
  : null);

/**
 * plan indices ordered by 'time' (iteration time, the search's order) or 'cost' (cost per token):
 * plans whose cost is known first, cheapest first; then the plans using GPUs without a price
 * (their cost is a lower bound), by that bound; ties by iteration time, then rank
 */
export function sortPlans(plans, by, cluster, opts) {
  const idx = plans.map((_, i) => i);
  // fastest = most tokens/s: the same order as iteration time when every plan trains the same batch,
  // and the search's own ranking when a batch tolerance lets them train different ones
  const speed = plans.map((p) => (Number.isFinite(p.tokens_per_s) ? p.tokens_per_s
    : (p.plan?.micro_batch_size ?? 1) * (p.plan?.num_micro_batches ?? 1) / p.iteration_time_s));
  if (by !== 'cost') return idx.sort((a, b) => speed[b] - speed[a] || a - b);
  const costs = plans.map((p) => trainingCost(p, cluster, opts));
  const known = costs.map((c) => (c.partial || c.usdPer1M === null ? 1 : 0));
  const c = costs.map((x) => x.usdPer1M ?? Infinity);
  return idx.sort((a, b) => known[a] - known[b] || c[a] - c[b] || speed[b] - speed[a] || a - b);
}
