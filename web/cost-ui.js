// "Time to train and cost": the token budget and an editable price per GPU-hour for each device of
// the cluster (defaults from the device presets, with their source and date). Changing them
// re-prices what is shown; no new search.
import { h, clear, $ } from './dom.js';
import { DEFAULT_TOKENS, parsePrice, parseTokens, presetPrices, priceOf, priceProblem, tokensProblem } from './cost.js';
import { byId } from './state.js';
import { emit, state, subscribe } from './store.js';

// device refs whose price field holds text that is not a price: their costs show "–" until it is
// fixed (the field keeps the text; a re-render of the form shows the last valid price again)
const invalidPrices = new Set();
let pricesOf = null; // [devices list, presetPrices(devices)]: computed once per preset list
/** the device presets' prices: id → {usd, source, asOf} */
export function defaultPrices() {
  const devices = state.presets.devices;
  if (pricesOf?.[0] !== devices) pricesOf = [devices, presetPrices(devices)];
  return pricesOf[1];
}

/** the budget state → the options of trainingCost() (an invalid budget counts as none) */
export function costOptions() {
  const tokens = parseTokens(state.budget.tokens);
  // the scenario sends a custom device inline (cost.js then knows it by its name): its price goes by both
  const prices = { ...state.budget.prices };
  for (const [id, dev] of Object.entries(state.devices)) if (prices[id] !== undefined && dev?.name && prices[dev.name] === undefined) prices[dev.name] = prices[id];
  return { tokens: Number.isFinite(tokens) ? tokens : null, prices, includeIdle: Boolean(state.budget.idle), defaults: defaultPrices(), label: deviceLabel,
    invalid: [...invalidPrices].flatMap((id) => [id, state.devices[id]?.name].filter(Boolean)) };
}

/** "https://… : p4d.24xlarge …" → the page's link and the words after it */
function sourceView(def) {
  const m = /^(https:\/\/\S+)\s*:\s*(.*)$/s.exec(def.source);
  const words = m ? m[2] : def.source;
  return h('span', { class: 'price-source' },
    m ? h('a', { href: m[1], target: '_blank', rel: 'noopener noreferrer' }, m[1].replace(/^https:\/\/([^/]+).*$/, '$1')) : null,
    m ? ': ' : '', words, def.asOf ? ` (as of ${def.asOf})` : '');
}

/** the cluster of the result on screen, or of scenario sc (its groups name the devices the plan's stages use) */
export function clusterOfResult(sc = state.resultScenario) {
  const c = sc?.cluster;
  if (typeof c === 'string') return byId(state.presets.clusters, c) ?? state.cluster;
  return c && typeof c === 'object' ? c : state.cluster;
}

const deviceLabel = (ref) => (typeof ref === 'string' ? (state.devices[ref]?.name ?? byId(state.presets.devices, ref)?.name ?? ref)
  : (ref?.name ?? (typeof ref?.base === 'string' ? byId(state.presets.devices, ref.base)?.name : undefined) ?? 'inline device'));
const deviceRef = (ref) => (typeof ref === 'string' ? ref : (ref?.name ?? 'inline device'));

/** a change of the budget or a price: the store's 'prices' (the results re-price, the link follows; no search) */
const onChange = () => emit('prices');

function setFieldError(id, message) {
  const input = $(`#${id}`);
  const err = $(`#${id}-err`);
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
  if (err) err.textContent = message;
}

/** the budget field, the idle checkbox and one price row per device of the cluster */
export function renderCostForm() {
  const tokensInput = $('#f-budget-tokens');
  if (document.activeElement !== tokensInput) {
    tokensInput.value = state.budget.tokens ?? '';
    // a budget from a link is checked like a typed one
    if (Number.isNaN(parseTokens(state.budget.tokens))) setFieldError('f-budget-tokens', tokensProblem(state.budget.tokens));
  }
  $('#f-budget-idle').checked = Boolean(state.budget.idle);
  const refs = [...new Set((state.cluster.groups || []).map((g) => deviceRef(g.device)))];
  const defaults = defaultPrices();
  const box = clear($('#price-table'));
  invalidPrices.clear(); // the fields are rebuilt from the valid prices
  const rows = refs.map((ref) => {
    const id = `f-price-${ref.replace(/[^a-zA-Z0-9]+/g, '-')}`;
    const user = state.budget.prices[ref];
    const input = h('input', { type: 'text', id, inputmode: 'decimal', autocomplete: 'off', 'data-device': ref, 'aria-describedby': `${id}-err`,
      placeholder: defaults[ref] === undefined ? 'price' : String(defaults[ref].usd) });
    input.value = user === undefined ? '' : String(user);
    input.addEventListener('input', () => {
      const usd = parsePrice(input.value);
      setFieldError(id, priceProblem(input.value));
      if (Number.isNaN(usd)) { invalidPrices.add(ref); onChange(); return; }
      invalidPrices.delete(ref);
      if (usd === null) delete state.budget.prices[ref];
      else state.budget.prices[ref] = usd;
      onChange();
    });
    const def = defaults[ref];
    return h('tr', { 'data-device': ref },
      h('th', { scope: 'row' }, h('label', { for: id }, deviceLabel(ref))),
      h('td', {}, input, h('span', { class: 'field-error', id: `${id}-err` })),
      h('td', { class: 'muted price-default', 'data-usd': def?.usd ?? '', 'data-as-of': def?.asOf ?? '' },
        def === undefined ? 'no public on-demand price in the preset: enter one' : [`default $${def.usd}/GPU-hour, `, sourceView(def)]));
  });
  box.append(h('table', { class: 'data prices', 'data-testid': 'price-table' },
    h('caption', {}, 'Price per GPU-hour, US dollars (empty: the default)'),
    h('thead', {}, h('tr', {}, ['device', '$ / GPU-hour', 'default and its source'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows)));
  const missing = refs.filter((r) => priceOf(r, state.budget.prices, defaults) === null);
  $('#price-note').textContent = 'Defaults: public on-demand list prices carried by the device presets, per GPU-hour (instance price / GPUs), '
    + 'transcribed from the provider\'s price page as known on the date shown, not fetched live; prices differ by provider, region, '
    + 'commitment and date: enter yours.'
    + (missing.length ? ` No price for ${missing.map(deviceLabel).join(', ')}: until you enter one, its GPUs are not counted, so a plan that uses `
      + 'them shows its cost as "≥ $x" (at least; "unknown" when none of its GPUs has a price) and sorts after the plans whose cost is known.' : '');
}

export function wireCostForm() {
  const tokensInput = $('#f-budget-tokens');
  tokensInput.addEventListener('input', () => {
    state.budget.tokens = tokensInput.value.trim();
    setFieldError('f-budget-tokens', tokensProblem(state.budget.tokens));
    onChange();
  });
  $('#f-budget-idle').addEventListener('change', (e) => { state.budget.idle = e.target.checked; onChange(); });
}

export { DEFAULT_TOKENS };

// the price rows follow the cluster's devices
subscribe('inputs', () => renderCostForm());
subscribe('forms', () => renderCostForm());
