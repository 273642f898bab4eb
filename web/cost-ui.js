// "Time to train and cost": the token budget and an editable price per GPU-hour for each device of
// the cluster (defaults in cost.js, dated). Changing them re-prices what is shown; no new search.
import { h, clear, $, fmt } from './dom.js';
import { DEFAULT_PRICES, DEFAULT_TOKENS, PRICES_AS_OF, parseTokens, priceOf } from './cost.js';
import { byId, state } from './state.js';

/** the budget state → the options of trainingCost() (an invalid budget counts as none) */
export function costOptions() {
  const tokens = parseTokens(state.budget.tokens);
  return { tokens: Number.isFinite(tokens) ? tokens : null, prices: state.budget.prices, includeIdle: Boolean(state.budget.idle) };
}

/** the cluster of the result on screen (its groups name the devices the plan's stages use) */
export function clusterOfResult() {
  const c = state.resultScenario?.cluster;
  if (typeof c === 'string') return byId(state.presets.clusters, c) ?? state.cluster;
  return c && typeof c === 'object' ? c : state.cluster;
}

const deviceLabel = (ref) => (typeof ref === 'string' ? (state.devices[ref]?.name ?? byId(state.presets.devices, ref)?.name ?? ref) : (ref?.name ?? 'inline device'));
const deviceRef = (ref) => (typeof ref === 'string' ? ref : (ref?.name ?? 'inline device'));

let onChange = () => {};
/** cb runs after any change of the budget or a price */
export function onCostChange(cb) { onChange = cb; }

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
  if (document.activeElement !== tokensInput) tokensInput.value = state.budget.tokens ?? '';
  $('#f-budget-idle').checked = Boolean(state.budget.idle);
  const refs = [...new Set((state.cluster.groups || []).map((g) => deviceRef(g.device)))];
  const box = clear($('#price-table'));
  const rows = refs.map((ref) => {
    const id = `f-price-${ref.replace(/[^a-zA-Z0-9]+/g, '-')}`;
    const user = state.budget.prices[ref];
    const input = h('input', { type: 'text', id, inputmode: 'decimal', autocomplete: 'off', 'data-device': ref, 'aria-describedby': `${id}-err`,
      placeholder: DEFAULT_PRICES[ref] === undefined ? 'price' : String(DEFAULT_PRICES[ref]) });
    input.value = user === undefined ? '' : String(user);
    input.addEventListener('input', () => {
      const t = input.value.trim().replace(/^\$/, '');
      if (t === '') {
        delete state.budget.prices[ref];
        setFieldError(id, '');
      } else if (/^(\d+\.?\d*|\.\d+)$/.test(t)) {
        state.budget.prices[ref] = Number(t);
        setFieldError(id, '');
      } else {
        setFieldError(id, 'a price in US dollars per GPU-hour, e.g. 2.5');
        return;
      }
      onChange();
    });
    const def = DEFAULT_PRICES[ref];
    return h('tr', { 'data-device': ref },
      h('th', { scope: 'row' }, h('label', { for: id }, deviceLabel(ref))),
      h('td', {}, input, h('span', { class: 'field-error', id: `${id}-err` })),
      h('td', { class: 'muted' }, def === undefined ? 'no default: enter a price' : `default $${fmt(def, 2)}`));
  });
  box.append(h('table', { class: 'data prices', 'data-testid': 'price-table' },
    h('caption', {}, 'Price per GPU-hour, US dollars (empty: the default)'),
    h('thead', {}, h('tr', {}, ['device', '$ / GPU-hour', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows)));
  const missing = refs.filter((r) => priceOf(r, state.budget.prices) === null);
  $('#price-note').textContent = `Defaults are illustrative round on-demand cloud prices (written ${PRICES_AS_OF}; not quotes, no single source): enter yours.`
    + (missing.length ? ` No price for ${missing.map(deviceLabel).join(', ')}: its GPUs cost nothing until you enter one.` : '');
}

export function wireCostForm() {
  const tokensInput = $('#f-budget-tokens');
  tokensInput.addEventListener('input', () => {
    state.budget.tokens = tokensInput.value.trim();
    const n = parseTokens(state.budget.tokens);
    setFieldError('f-budget-tokens', Number.isNaN(n) ? 'a number of tokens, e.g. 1T, 300B or 2.5e12' : '');
    onChange();
  });
  $('#f-budget-idle').addEventListener('change', (e) => { state.budget.idle = e.target.checked; onChange(); });
}

export { DEFAULT_TOKENS };
