// The "Compare two plans" box: two selects over the top list (#1 and #2 at first) and the two
// plans side by side. A plan listed without its breakdown gets it when it is selected (the
// estimate with its timeline, results.js); the comparison is redrawn with every render.
import { h, clear, $, fmtInt } from './dom.js';
import { state, subscribe } from './store.js';
import { compareRows, comparePairs, defaultPair, equivalentPlans } from './compare.js';
import { compareTables } from './render/compare.js';
import { costOf, namedEstimate } from './results.js';

let pair = null;
let pairFor = null; // the result the pair was chosen in

function pick(side, i) {
  pair[side] = i;
  renderCompare();
}

function select(id, label, plans, value, side) {
  const sel = h('select', { id, 'data-testid': id, onchange: (e) => pick(side, Number(e.target.value)) },
    plans.map((p, i) => h('option', { value: i, selected: i === value }, `#${i + 1}: ${fmtInt(p.tokens_per_s)} tokens/s`)));
  return h('div', { class: 'field' }, h('label', { for: id }, label), sel);
}

export function renderCompare() {
  const box = clear($('#compare'));
  const r = state.result;
  const plans = r?.plans || [];
  if (plans.length < 2) {
    box.append(h('p', { class: 'muted' }, plans.length ? 'One plan on screen: a search lists more (Search → top plans).' : 'No plans yet.'));
    return;
  }
  if (pairFor !== r || !pair || pair.some((i) => i >= plans.length)) {
    pair = defaultPair(plans.length, equivalentPlans(plans));
    pairFor = r;
  }
  const [ia, ib] = pair;
  const a = plans[ia];
  const b = plans[ib];
  // the search leaves out the breakdown of plans with many stages × micro-batches (their timeline
  // is large too): it comes with the plan's timeline when the plan is selected, not fetched here
  const missing = [...new Set(pair)].filter((i) => !plans[i].breakdown).map((i) => `#${i + 1}`);
  box.append(h('div', { class: 'fields compare-pick' }, select('compare-a', 'plan A', plans, ia, 0), select('compare-b', 'plan B', plans, ib, 1)),
    // devices by name, as the inputs show them; the costs from the plans as the core gave them (prices go by device id)
    ...compareTables(compareRows(namedEstimate(a), namedEstimate(b), costOf(a), costOf(b)), comparePairs(namedEstimate(a), namedEstimate(b)), ia, ib));
  // (Element.append writes a null as the text "null": the note only when there is one)
  if (missing.length) {
    box.append(h('p', { class: 'muted note', 'data-testid': 'compare-missing' }, `The search did not break down the iteration of ${missing.join(' and ')} `
      + '(a large pipeline): select it in the top plans to compute it; its bubble, sync and send rows stay empty until then.'));
  }
}

subscribe('rendered', renderCompare);
