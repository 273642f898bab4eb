// Exports of a result: plan JSON, CSV of the top plans, Chrome trace (Megatron-LM arguments: megatron.js).
// Pure functions over the result JSON (no DOM, no wasm), so node tests can import them.
import { withExchanges } from './render/exchanges.js';
import { hasTrainingChoice } from './plan-choices.js';

export const KINDS = ['forward', 'backward', 'ep_a2a', 'send_forward', 'send_backward', 'dp_sync', 'grad_bucket', 'param_gather', 'embedding_sync', 'optimizer'];
export const COMM_KINDS = new Set(['send_forward', 'send_backward', 'dp_sync', 'grad_bucket', 'param_gather', 'embedding_sync']);

// The GPU stream (resource) an event occupies. The core writes it on every event ("resource");
// older engines and old share links do not, so it is derived from the kind (docs/web.md, "Timeline").
export const KIND_RESOURCE = {
  forward: 'compute', backward: 'compute', optimizer: 'compute', ep_a2a: 'ep',
  send_forward: 'p2p', send_backward: 'p2p',
  dp_sync: 'dp', grad_bucket: 'dp', param_gather: 'dp', embedding_sync: 'dp',
};
/** known resources first, in this order; any other (a future "tp") after them, by name */
export const RESOURCE_ORDER = ['compute', 'ep', 'p2p', 'dp'];

/** the event's resource: its own, else its kind's, else "other" (an unknown kind of an older/newer engine) */
export function resourceOf(e) {
  return typeof e.resource === 'string' && e.resource ? e.resource : KIND_RESOURCE[e.kind] ?? 'other';
}

export function compareResources(a, b) {
  const ia = RESOURCE_ORDER.indexOf(a);
  const ib = RESOURCE_ORDER.indexOf(b);
  if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The model chunk an event works on, or null: interleaved plans put `chunk` on every event, but
 * only the passes and sends of a micro-batch belong to one chunk (the DP sync and the optimizer
 * step cover the whole stage).
 */
export function chunkOf(e) {
  return Number.isInteger(e.chunk) && Number.isInteger(e.micro_batch) ? e.chunk : null;
}

/** per stage, the resources its events use, in lane order (compute first, then p2p, dp, others) */
export function stageResources(est) {
  const n = Math.max((est.stages || []).length, 0);
  const sets = Array.from({ length: n }, () => new Set());
  for (const e of est.timeline || []) {
    if (!Number.isInteger(e.stage) || e.stage < 0) continue;
    while (sets.length <= e.stage) sets.push(new Set());
    sets[e.stage].add(resourceOf(e));
  }
  return sets.map((set) => [...set].sort(compareResources));
}

/**
 * The plan alone, as `poseidon estimate S.json --plan P.json` and the page's "Load plan" read it.
 * context: what it was planned for (web/context.js), kept in the plan's informational `notes`
 * (the core reads and drops them), since a plan file alone says nothing of model or cluster.
 */
export function planJson(estimate, { context = '', version = '' } = {}) {
  const plan = { ...estimate.plan };
  if (context) plan.notes = `Planned by Poseidon${version ? ` ${version}` : ''} for ${context}.`;
  return JSON.stringify(plan, null, 2) + '\n';
}

/** the scenario a plan was estimated for, as the CLI takes it (`poseidon estimate S --plan P`), with what was planned in `notes` */
export function scenarioJson(scenario, { context = '', version = '' } = {}) {
  const sc = structuredClone(scenario);
  if (context && sc.notes === undefined) sc.notes = `Exported by Poseidon${version ? ` ${version}` : ''}: ${context}. Reproduce: poseidon estimate poseidon-scenario.json --plan poseidon-plan.json`;
  return JSON.stringify(sc, null, 2) + '\n';
}

const csvCell = (v) => {
  const t = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
};

/** per stage "TP x DP" ("2x4", or "1x2+2x1" for a stage of mixed replicas); `times`: "x" in the CSV, "×" on the page */
export function stageSummary(est, times = 'x') {
  return (est.stages || []).map((st) => {
    if (Array.isArray(st.replicas) && new Set(st.replicas.map((r) => `${r.device}/${r.tp}`)).size > 1) {
      return st.replicas.map((r) => `${r.tp}${times}${r.count ?? 1}`).join('+');
    }
    // context parallelism: the replica is tp x cp GPUs, written TPxCPcp x DP so the product stays the GPUs
    // MoE: the expert grid after it ("1x16 ep8", "2x8 ep4/etp2")
    const ep = st.ep > 1 || st.etp > 1 ? ` ep${st.ep ?? 1}${st.etp > 1 ? `/etp${st.etp}` : ''}` : '';
    return (st.cp > 1 ? `${st.tp}${times}${st.cp}cp${times}${st.dp}` : `${st.tp}${times}${st.dp}`) + ep;
  });
}

/**
 * the header of stageSummary's column over these estimates: "TP × DP", with CP where a stage has
 * it and the expert grid where a stage has one ("TP × CP × DP, EP/ETP")
 */
export function gridHeader(ests) {
  const stages = ests.flatMap((e) => e?.stages || []);
  const cp = stages.some((st) => st.cp > 1), ep = stages.some((st) => st.ep > 1 || st.etp > 1);
  return `TP × ${cp ? 'CP × ' : ''}DP${ep ? ', EP/ETP' : ''}`;
}

/** model chunks per pipeline stage (virtual stages): 1 for plain 1F1B */
export const virtualStages = (est) => (Number.isInteger(est?.plan?.virtual_stages) && est.plan.virtual_stages > 1 ? est.plan.virtual_stages : 1);

/** the plan's pipeline schedule in words: "1F1B" or "interleaved 1F1B, V chunks per stage" */
export function scheduleLabel(est) {
  const v = virtualStages(est);
  const g = est?.plan?.microbatch_group_size;
  return v > 1 ? `interleaved 1F1B, ${v} chunks per stage${Number.isInteger(g) && g > 0 ? `, micro-batch group ${g}` : ''}` : '1F1B';
}

export function topPlansCsv(plans) {
  const head = ['rank', 'iteration_time_s', 'tokens_per_s', 'mfu', 'num_gpus', 'memory_fits', 'num_stages',
    'micro_batch_size', 'num_micro_batches', 'tp_x_dp_per_stage', 'layers_per_stage', 'devices_per_stage', 'schedule', 'virtual_stages',
    'samples_per_replica_per_stage'];
  const rows = plans.map((p, i) => [i + 1, p.iteration_time_s, p.tokens_per_s, p.mfu, p.num_gpus, p.memory_fits,
    (p.stages || []).length, p.plan?.micro_batch_size, p.plan?.num_micro_batches, stageSummary(p).join(' '),
    (p.stages || []).map((s) => s.num_layers).join(' '), (p.stages || []).map((s) => s.device).join(' '),
    virtualStages(p) > 1 ? 'interleaved-1f1b' : '1f1b', virtualStages(p),
    // micro_batch_size is the plan's, summed over a stage's replicas; Megatron's --micro-batch-size
    // is one replica's share
    (p.stages || []).map((s) => s.samples_per_replica ?? (s.dp > 0 ? p.plan?.micro_batch_size / s.dp : '')).join(' ')]);
  // a search that freed the precision, FSDP or recomputation: each plan's choice, in four more columns
  if (plans.some((p) => hasTrainingChoice(p.plan))) {
    head.push('precision', 'fsdp', 'recompute', 'recompute_num_layers');
    plans.forEach((p, i) => rows[i].push(p.plan?.precision ?? '', typeof p.plan?.fsdp === 'boolean' ? p.plan.fsdp : '', p.plan?.recompute ?? '', p.plan?.recompute_num_layers ?? ''));
  }
  return [head, ...rows].map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

/** Assigns events to sub-tracks so that no two events on one overlap (Perfetto needs proper nesting). */
function subTracks(events) {
  const ends = [];
  return events.map((e) => {
    let lane = ends.findIndex((end) => end <= e.start_s + 1e-12);
    if (lane < 0) { lane = ends.length; ends.push(0); }
    ends[lane] = e.end_s;
    return lane;
  });
}

const SHORT = { forward: 'F', backward: 'B', send_forward: 'send act', send_backward: 'send grad', dp_sync: 'DP all-reduce',
  grad_bucket: 'grad bucket', param_gather: 'param gather', embedding_sync: 'tied-embedding all-reduce', optimizer: 'optimizer' };

export function eventName(e) {
  const mb = e.micro_batch === null || e.micro_batch === undefined ? '' : ` mb${e.micro_batch}`;
  const chunk = chunkOf(e) === null ? '' : ` c${e.chunk}`;
  const bucket = Number.isInteger(e.bucket) ? ` ${e.bucket}` : '';
  return `${SHORT[e.kind] ?? e.kind}${bucket}${mb}${chunk}`;
}

/** thread ids: 100 per resource (compute 1..99, p2p 100.., dp 200.., others after), sub-tracks within */
const TID_STEP = 100;

/**
 * Chrome Trace Event JSON: one process per stage, one thread (track) per resource the stage uses
 * (compute, p2p, dp, any other), overlapping events of one resource on extra sub-tracks
 * ("p2p 2", ...). Chunk (interleaved plans) and bucket (overlapped DP communication) are in the
 * names and args. context: what was planned (web/context.js), in the trace's metadata.
 */
export function chromeTrace(estIn, title = 'Poseidon plan', { context = '' } = {}) {
  const est = withExchanges(estIn);
  const events = [];
  const stages = est.stages || [];
  const byStage = new Map();
  const resources = new Set();
  for (const e of est.timeline || []) {
    if (!byStage.has(e.stage)) byStage.set(e.stage, []);
    byStage.get(e.stage).push(e);
    resources.add(resourceOf(e));
  }
  // one tid block per resource, the same in every process, so a track keeps its id across stages
  const order = [...resources].sort(compareResources);
  for (const [stage, list] of [...byStage.entries()].sort((a, b) => a[0] - b[0])) {
    const st = stages[stage] || {};
    const pname = `stage ${stage}: ${st.device ?? ''} ${st.num_layers ?? '?'} layer${st.num_layers === 1 ? '' : 's'}, ${st.gpus ?? '?'} GPU${st.gpus === 1 ? '' : 's'}`.replace(/\s+/g, ' ');
    events.push({ ph: 'M', pid: stage, tid: 0, name: 'process_name', args: { name: pname } });
    events.push({ ph: 'M', pid: stage, tid: 0, name: 'process_sort_index', args: { sort_index: stage } });
    const byRes = new Map();
    for (const e of list) {
      const r = resourceOf(e);
      if (!byRes.has(r)) byRes.set(r, []);
      byRes.get(r).push(e);
    }
    for (const res of order) {
      if (!byRes.has(res)) continue;
      const base = order.indexOf(res) * TID_STEP + 1;
      const evs = byRes.get(res).sort((a, b) => a.start_s - b.start_s || a.end_s - b.end_s);
      const sub = subTracks(evs);
      for (const l of new Set(sub)) {
        events.push({ ph: 'M', pid: stage, tid: base + l, name: 'thread_name', args: { name: l ? `${res} ${l + 1}` : res } });
        events.push({ ph: 'M', pid: stage, tid: base + l, name: 'thread_sort_index', args: { sort_index: base + l } });
      }
      evs.forEach((e, i) => {
        const args = { stage, kind: e.kind, resource: res, micro_batch: e.micro_batch ?? null };
        if (Number.isInteger(e.chunk)) args.chunk = e.chunk;
        if (Number.isInteger(e.bucket)) args.bucket = e.bucket;
        events.push({ ph: 'X', pid: stage, tid: base + sub[i], name: eventName(e), cat: e.kind,
          ts: e.start_s * 1e6, dur: Math.max(0, (e.end_s - e.start_s) * 1e6), args });
      });
    }
  }
  const other = { title: context ? `${title}: ${context}` : title, iteration_time_s: est.iteration_time_s };
  if (context) other.planned_for = context;
  if (est.plan?.schedule) other.schedule = est.plan.schedule;
  if (Number.isInteger(est.plan?.virtual_stages)) other.virtual_stages = est.plan.virtual_stages;
  return JSON.stringify({ displayTimeUnit: 'ms', otherData: other, traceEvents: events });
}

// The Megatron-LM launch command lives in megatron.js (re-exported here for older imports).
export { megatronArgs } from './megatron.js';
