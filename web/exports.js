// Exports of a result: plan JSON, CSV of the top plans, Chrome trace (Megatron-LM arguments: megatron.js).
// Pure functions over the result JSON (no DOM, no wasm), so node tests can import them.

export const KINDS = ['forward', 'backward', 'send_forward', 'send_backward', 'dp_sync', 'optimizer'];
export const COMM_KINDS = new Set(['send_forward', 'send_backward', 'dp_sync']);

/** The plan alone, as `poseidon estimate S.json --plan P.json` and the page's "Load plan" read it. */
export function planJson(estimate) {
  return JSON.stringify(estimate.plan, null, 2) + '\n';
}

const csvCell = (v) => {
  const t = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
};

export function stageSummary(est) {
  return (est.stages || []).map((st) => {
    if (Array.isArray(st.replicas) && new Set(st.replicas.map((r) => `${r.device}/${r.tp}`)).size > 1) {
      return st.replicas.map((r) => `${r.tp}x${r.count ?? 1}`).join('+');
    }
    return `${st.tp}x${st.dp}`;
  });
}

export function topPlansCsv(plans) {
  const head = ['rank', 'iteration_time_s', 'tokens_per_s', 'mfu', 'num_gpus', 'memory_fits', 'num_stages',
    'micro_batch_size', 'num_micro_batches', 'tp_x_dp_per_stage', 'layers_per_stage', 'devices_per_stage'];
  const rows = plans.map((p, i) => [i + 1, p.iteration_time_s, p.tokens_per_s, p.mfu, p.num_gpus, p.memory_fits,
    (p.stages || []).length, p.plan?.micro_batch_size, p.plan?.num_micro_batches, stageSummary(p).join(' '),
    (p.stages || []).map((s) => s.num_layers).join(' '), (p.stages || []).map((s) => s.device).join(' ')]);
  return [head, ...rows].map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

/** Assigns events to lanes so that no two events on a lane overlap (Perfetto needs proper nesting). */
function lanes(events) {
  const ends = [];
  return events.map((e) => {
    let lane = ends.findIndex((end) => end <= e.start_s + 1e-12);
    if (lane < 0) { lane = ends.length; ends.push(0); }
    ends[lane] = e.end_s;
    return lane;
  });
}

function eventName(e) {
  const mb = e.micro_batch === null || e.micro_batch === undefined ? '' : ` mb${e.micro_batch}`;
  const short = { forward: 'F', backward: 'B', send_forward: 'send act', send_backward: 'send grad', dp_sync: 'DP all-reduce', optimizer: 'optimizer' };
  return `${short[e.kind] ?? e.kind}${mb}`;
}

/** Chrome Trace Event JSON: one process per stage; compute and communication on separate threads. */
export function chromeTrace(est, title = 'Poseidon plan') {
  const events = [];
  const stages = est.stages || [];
  const byStage = new Map();
  for (const e of est.timeline || []) {
    if (!byStage.has(e.stage)) byStage.set(e.stage, []);
    byStage.get(e.stage).push(e);
  }
  for (const [stage, list] of [...byStage.entries()].sort((a, b) => a[0] - b[0])) {
    const st = stages[stage] || {};
    const pname = `stage ${stage}: ${st.device ?? ''} ${st.num_layers ?? '?'} layers, ${st.gpus ?? '?'} GPUs`.replace(/\s+/g, ' ');
    events.push({ ph: 'M', pid: stage, tid: 0, name: 'process_name', args: { name: pname } });
    events.push({ ph: 'M', pid: stage, tid: 0, name: 'process_sort_index', args: { sort_index: stage } });
    for (const [group, base, label] of [[false, 1, 'compute'], [true, 100, 'comm']]) {
      const evs = list.filter((e) => COMM_KINDS.has(e.kind) === group).sort((a, b) => a.start_s - b.start_s || a.end_s - b.end_s);
      const lane = lanes(evs);
      const used = new Set(lane);
      for (const l of used) {
        events.push({ ph: 'M', pid: stage, tid: base + l, name: 'thread_name', args: { name: l ? `${label} ${l + 1}` : label } });
        events.push({ ph: 'M', pid: stage, tid: base + l, name: 'thread_sort_index', args: { sort_index: base + l } });
      }
      evs.forEach((e, i) => {
        events.push({ ph: 'X', pid: stage, tid: base + lane[i], name: eventName(e), cat: e.kind,
          ts: e.start_s * 1e6, dur: Math.max(0, (e.end_s - e.start_s) * 1e6),
          args: { stage, kind: e.kind, micro_batch: e.micro_batch ?? null } });
      });
    }
  }
  return JSON.stringify({ displayTimeUnit: 'ms', otherData: { title, iteration_time_s: est.iteration_time_s }, traceEvents: events });
}

// The Megatron-LM launch command lives in megatron.js (re-exported here for older imports).
export { megatronArgs } from './megatron.js';
