// The what-if box: for the result on screen, each GPU group's marginal value (the best plan with
// the group removed, one node less, one node more) and the scaling chart (each group at 0 to 2×
// its nodes, the others fixed), every variant searched in the worker pool (web/pool.js, one
// scenario per job). "Compute what-if" turns it on; while on, every new result recomputes it, and
// an edit cancels the jobs still running (the table stays, marked outdated, until the new result).
import { h, clear, $, fmt, fmtInt, fmtSignedPct, scrollTable } from './dom.js';
import { deviceName, searchOptions } from './state.js';
import { perf, state, subscribe } from './store.js';
import { getPool } from './engine.js';
import { marginalRows, outcome, scalingSeries, whatIfOptions, whatIfSpec } from './whatif.js';
import { scalingChart } from './render/scaling.js';
import { DEVICE_COLORS } from './render/colors.js';
import { formatCost, trainingCost, unpricedNote } from './cost.js';
import { costOptions } from './cost-ui.js';

const wi = { on: false, gen: 0, spec: null, outcomes: new Map(), result: null, running: false, stale: false, done: 0, total: 0, t0: 0, elapsed_s: null };
// for the tests and the benchmark: {on, running, stale, done, total, elapsed_s, pool: the pool's status}
perf.whatif = () => ({ on: wi.on, running: wi.running, stale: wi.stale, done: wi.done, total: wi.total, elapsed_s: wi.elapsed_s, pool: getPool().status() });

const costOf = (est, cluster) => trainingCost(est, cluster, costOptions());

/** "Compute what-if": on from now, for the result on screen */
export function startWhatIf() {
  wi.on = true;
  compute();
}

/** "Stop": cancels the running jobs and stays off until asked again */
export function stopWhatIf() {
  wi.on = false;
  cancel();
  render();
}

/** an input changed: the jobs still running are for a stale result */
export function cancelWhatIf() {
  if (!wi.spec) return;
  cancel();
  wi.stale = true;
  render();
}

/** a new result is on screen (planner.js): recompute when on */
export function whatIfResultShown() {
  if (wi.on && state.result !== wi.result) compute();
}

function cancel() {
  wi.gen++;
  if (wi.running) getPool().cancel('whatif');
  wi.running = false;
}

async function compute() {
  cancel();
  const r = state.result;
  const sc = state.resultScenario;
  const gen = wi.gen;
  wi.result = r;
  wi.stale = false;
  // a complete search of the current cluster is on screen: its best plan is the current point
  const searched = Boolean(r?.stats && r.stats.complete !== false && !r.fromLink && !r.fromFile);
  wi.spec = r && sc ? whatIfSpec(sc, state.presets.clusters, { skipCurrent: searched }) : null;
  wi.outcomes = new Map();
  if (!wi.spec) { render(); return; }
  if (searched) wi.outcomes.set(wi.spec.current, outcome(r));
  const options = whatIfOptions(searchOptions());
  wi.total = wi.spec.jobs.length;
  wi.done = 0;
  wi.elapsed_s = null;
  wi.running = true;
  wi.t0 = performance.now();
  render();
  const pool = getPool();
  await Promise.all(wi.spec.jobs.map((job) => pool.run({ type: 'plan', scenario: job.scenario, options }, null, 'whatif').then((res) => {
    if (gen !== wi.gen) return;
    wi.outcomes.set(job.key, outcome(res));
    wi.done++;
    scheduleRender();
  }, (e) => {
    if (e?.cancelled || gen !== wi.gen) return;
    wi.outcomes.set(job.key, { status: 'error', message: e.message });
    wi.done++;
    scheduleRender();
  })));
  if (gen !== wi.gen) return;
  wi.running = false;
  wi.elapsed_s = (performance.now() - wi.t0) / 1000;
  render();
}

let frame = 0;
function scheduleRender() {
  if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); });
}

const signedPct = (x) => (x === null || !Number.isFinite(x) ? '' : ` (${fmtSignedPct(x)})`);

function cellView(c) {
  if (c.status === 'pending') return [h('td', { class: 'muted', 'data-status': 'pending' }, '…'), h('td', { class: 'muted' }, '…')];
  if (c.status === 'none' && !c.key) return [h('td', { class: 'muted', 'data-status': 'none' }, c.reason ?? '—'), h('td', {}, '–')];
  if (c.status === 'none') return [h('td', { class: 'muted', 'data-status': 'none', 'data-tokens': 0 }, 'no feasible plan'), h('td', {}, '–')];
  if (c.status === 'error') return [h('td', { class: 'field-error', 'data-status': 'error', title: c.message }, 'error'), h('td', {}, '–')];
  return [
    h('td', { 'data-status': 'plan', 'data-tokens': c.tokensPerS, class: c.complete ? null : 'incomplete', title: c.complete ? null : 'time limit reached: best plan found' },
      `${c.complete ? '' : '≥ '}${fmtInt(c.tokensPerS)}${signedPct(c.deltaShare)}`),
    h('td', { class: 'cost-1m', 'data-usd': c.usdPer1M ?? '', 'data-partial': c.partial ? 'true' : null, title: unpricedNote(c) }, formatCost(c)),
  ];
}

function marginalTable(spec) {
  const rows = marginalRows(spec, wi.outcomes, costOf);
  const cur = wi.outcomes.get(spec.current);
  const curCost = cur?.status === 'plan' ? costOf(cur.est, spec.base) : null;
  const head2 = ['tokens/s (change)', '$ / 1M tokens'];
  return h('table', { class: 'data whatif', 'data-testid': 'whatif-table' },
    h('caption', {}, `Each group's marginal value: the best plan with the group removed, one node less and one node more (current cluster: ${cur?.status === 'plan'
      ? `${fmtInt(cur.est.tokens_per_s)} tokens/s, ${formatCost(curCost)} per 1M tokens` : 'computing…'})`),
    h('thead', {},
      h('tr', {}, h('th', { scope: 'col', rowspan: 2 }, 'group'), h('th', { scope: 'col', rowspan: 2 }, 'nodes × GPUs'),
        ['without the group', 'one node less', 'one node more'].map((t) => h('th', { scope: 'colgroup', colspan: 2 }, t))),
      h('tr', {}, [...head2, ...head2, ...head2].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows.map((g) => h('tr', { 'data-group': g.group },
      h('th', { scope: 'row' }, `${g.group}: ${deviceName(g.device)}`),
      h('td', {}, `${g.nodes} × ${g.gpusPerNode}`),
      cellView(g.removedCell), cellView(g.minusCell), cellView(g.plusCell)))));
}

function scalingTable(spec, series) {
  return h('table', { class: 'data', 'data-testid': 'whatif-scaling-table' },
    h('caption', {}, 'The scaling chart as a table: the best plan with each group at these node counts, the other groups fixed'),
    h('thead', {}, h('tr', {}, ['group', 'nodes', 'GPUs', 'tokens/s', '$ / 1M tokens'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, series.flatMap((s) => s.points.map((p) => {
      const g = spec.groups[s.group];
      const key = g.scale.find((x) => x.nodes === p.nodes)?.key;
      const o = key ? wi.outcomes.get(key) : null;
      const job = spec.jobs.find((j) => j.key === key);
      const c = o?.status === 'plan' ? costOf(o.est, job?.cluster ?? spec.base) : null;
      return h('tr', { 'data-group': s.group, 'data-nodes': p.nodes, class: p.current ? 'selected' : null },
        h('th', { scope: 'row' }, s.label), h('td', {}, String(p.nodes)), h('td', {}, String(p.x)),
        h('td', { 'data-tokens': p.y }, p.status === 'plan' ? `${p.complete ? '' : '≥ '}${fmtInt(p.y)}` : 'no feasible plan'),
        h('td', { title: unpricedNote(c) }, c ? formatCost(c) : '–'));
    }))));
}

function legend(series) {
  return h('ul', { class: 'legend' }, series.map((s, k) => {
    const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.backgroundColor = DEVICE_COLORS[k % DEVICE_COLORS.length];
    return h('li', {}, sw, s.label);
  }), h('li', {}, '○ the current cluster · × no feasible plan'));
}

export function render() {
  $('#whatif-run').disabled = !state.result || !state.version;
  $('#whatif-stop').disabled = !wi.running;
  $('#whatif-sec').classList.toggle('stale', wi.stale);
  const progress = $('#whatif-progress');
  const chart = clear($('#whatif-chart'));
  const table = clear($('#whatif-tables'));
  const spec = wi.spec;
  if (!spec) {
    progress.textContent = wi.on && state.result ? 'No cluster groups to vary.' : '';
    return;
  }
  const pool = getPool().status();
  const limit = whatIfOptions(searchOptions()).time_limit_s;
  if (wi.stale) progress.textContent = `Outdated: the inputs changed. ${wi.on ? 'It is computed again for the next result.' : 'Press Compute what-if for the new result.'}`;
  else if (wi.running) progress.textContent = `Searching ${wi.total} variants of the cluster on ${pool.size} worker${pool.size === 1 ? '' : 's'}: ${wi.done} done…`;
  else progress.textContent = `Done: ${wi.total} variant searches in ${fmt(wi.elapsed_s ?? 0, 2)} s on ${pool.size} worker${pool.size === 1 ? '' : 's'} (each: the best plan, at most ${fmt(limit, 1)} s; "≥" marks one that reached it).`;
  // groups by their devices' names, as the inputs show them (the spec keeps the ids: prices go by them)
  const series = scalingSeries(spec, wi.outcomes).map((x) => ({ ...x, label: `group ${x.group}: ${deviceName(spec.groups[x.group].device)}` }));
  // drawn at its box's width (at most 640 px), so its 11 px labels stay 11 px: a 560-wide drawing
  // scaled down to a phone's 370 px box made them 7 px
  const box = chart.clientWidth;
  chart.append(scalingChart(series, { width: box > 0 ? Math.max(300, Math.min(640, Math.round(box))) : 560 }), legend(series));
  table.append(scrollTable(marginalTable(spec)),
    h('details', {}, h('summary', {}, 'Scaling as a table'), scrollTable(scalingTable(spec, series))));
}

export function wireWhatIf() {
  $('#whatif-run').addEventListener('click', startWhatIf);
  $('#whatif-stop').addEventListener('click', stopWhatIf);
}

// an edit or a new search cancels the jobs still running; a new result recomputes it (when on);
// it follows the top plans (a new result, a new price)
subscribe('inputs', cancelWhatIf);
subscribe('search-start', cancelWhatIf);
subscribe('result', whatIfResultShown);
subscribe('rendered', render);
