// Explanations of one plan from the core's numbers: what bounds the iteration (the estimate's
// `breakdown` and per-stage times) and which GPUs of the cluster stay idle, and why.
// Pure functions over the result JSON (no DOM), tested in node.

// the sentences quote the numbers in the format of the legend and the tables below them; a device's
// name is set off by commas, never brackets: a name may hold brackets ("GB200 (Grace Blackwell, NVL72
// rack)"), and brackets inside brackets read badly
import { fmtInt, fmtPct, fmtTime } from './dom.js';

/** the breakdown's parts (docs/model.md, "Breakdown"), in the order they are drawn */
export const BREAKDOWN_PARTS = [
  { key: 'compute_s', label: 'compute', title: "the bottleneck stage's forward and backward work (its TP collectives and token exchange excluded)" },
  { key: 'tp_comm_s', label: 'TP collectives', title: "the bottleneck stage's tensor-parallel all-reduces inside its forward and backward" },
  { key: 'ep_comm_s', label: 'EP all-to-all', title: "the bottleneck stage's token dispatch and combine to and from the experts (MoE) inside its forward and backward" },
  { key: 'bubble_s', label: 'pipeline bubble', title: 'the bottleneck stage waits for other stages: pipeline fill and drain, stalls behind a slower neighbour' },
  { key: 'pp_comm_s', label: 'exposed pipeline sends', title: 'the time the bottleneck stage waits for activations or gradients sent between stages '
    + '(with a blocking stack also its own sends); sends that overlap with compute are not counted here: the per-stage table\'s "sends" column has every send' },
  { key: 'dp_comm_s', label: 'DP gradient sync', title: 'the data-parallel all-reduce of gradients that finishes after the last backward '
    + '(with tied embeddings over several stages, also the embedding all-reduce between the first and the last stage)' },
  { key: 'optimizer_s', label: 'optimizer step', title: 'the optimizer step at the end of the iteration' },
];

/** per stage: busy time in one iteration (m × (forward + backward) per micro-batch) and its share */
export function stageBusy(est) {
  const m = est?.plan?.num_micro_batches ?? 0;
  const T = est?.iteration_time_s || 0;
  return (est?.stages || []).map((st, i) => {
    const busy = m * ((st.forward_s || 0) + (st.backward_s || 0));
    return { stage: st.index ?? i, device: String(st.device ?? ''), busy_s: busy, share: T > 0 ? busy / T : 0,
      forward_s: st.forward_s, backward_s: st.backward_s, dp_sync_s: st.dp_sync_s, optimizer_s: st.optimizer_s,
      send_s: (st.send_forward_s || 0) + (st.send_backward_s || 0) };
  });
}


/**
 * Whether the estimate has a breakdown to show. The core writes one with every part 0 (and stage 0
 * as the bottleneck) where it did not walk the iteration's DAG: the best plan a search reports
 * while it runs. Read as a breakdown, that would draw an empty bar and name stage 0.
 */
export function hasBreakdown(est) {
  const b = est?.breakdown;
  return Boolean(b) && BREAKDOWN_PARTS.some((p) => b[p.key] > 0);
}

/**
 * What bounds the iteration: {bottleneck, parts: [{key, label, title, s, share}], stages, dominant,
 * sentences: [...]}. null without a breakdown (hasBreakdown).
 */
export function criticalPath(est) {
  const b = est?.breakdown;
  const T = est?.iteration_time_s;
  if (!hasBreakdown(est) || !(T > 0)) return null;
  const parts = BREAKDOWN_PARTS.map((p) => ({ ...p, s: Number.isFinite(b[p.key]) ? b[p.key] : 0 }))
    .map((p) => ({ ...p, share: p.s / T }));
  const stages = stageBusy(est);
  const bn = Number.isInteger(b.bottleneck_stage) ? b.bottleneck_stage : 0;
  const st = stages[bn];
  const dominant = parts.filter((p) => p.key !== 'compute_s').sort((x, y) => y.s - x.s)[0];
  const m = est.plan?.num_micro_batches ?? 0;
  const sentences = [];
  if (st) {
    sentences.push(`Stage ${bn}, ${st.device}, bounds the iteration: it is busy ${fmtTime(st.busy_s)} of ${fmtTime(T)} `
      + `(${fmtPct(st.busy_s / T)}), ${m} micro-batch${m === 1 ? '' : 'es'} × ${fmtTime((st.forward_s || 0) + (st.backward_s || 0))} forward + backward.`);
    const next = stages.filter((x) => x.stage !== bn).sort((x, y) => y.busy_s - x.busy_s)[0];
    if (next) {
      sentences.push(next.busy_s >= 0.97 * st.busy_s
        ? `Stage ${next.stage}, ${next.device}, is nearly as busy (${fmtTime(next.busy_s)}): the layers are balanced between them.`
        : `The next busiest is stage ${next.stage}, ${next.device}: busy ${fmtTime(next.busy_s)} (${fmtPct(next.busy_s / T)}).`);
    }
  }
  if (dominant && dominant.share >= 0.02) {
    const emb = est.stages?.[0]?.embedding_sync_s ?? 0;
    const why = {
      bubble_s: `the pipeline bubble: with ${stages.length} stages and ${m} micro-batches the bottleneck stage waits while the pipeline fills and drains`,
      dp_comm_s: 'the data-parallel gradient all-reduce after the last backward'
        + (emb > 0 ? ` (of which ${fmtTime(emb)} is the tied-embedding all-reduce between the first and the last stage)` : ''),
      pp_comm_s: 'waiting for activations and gradients sent between stages (exposed sends: those not overlapped with compute)',
      tp_comm_s: 'tensor-parallel collectives inside each layer',
      ep_comm_s: 'the token all-to-all to and from the experts inside each MoE layer',
      optimizer_s: 'the optimizer step',
    }[dominant.key];
    sentences.push(`Besides compute, the largest part is ${why}: ${fmtTime(dominant.s)} (${fmtPct(dominant.share)} of the iteration).`);
  } else {
    sentences.push('Almost all of the iteration is the bottleneck stage computing: little is lost to bubbles or communication.');
  }
  sentences.push(...emptyStageSentences(est));
  return { bottleneck: bn, parts, stages, dominant, sentences };
}

/**
 * What a stage without transformer blocks does (options.empty_stages; docs/search.md, "The space",
 * step 5): the first holds only the embedding, the last only the head, a middle one only forwards,
 * which lets every stage before it run one more micro-batch ahead under 1F1B.
 */
export function emptyStageSentences(est) {
  const stages = est?.stages || [];
  const S = stages.length;
  const out = [];
  stages.forEach((st, i) => {
    if (S < 2 || st.num_layers !== 0) return;
    const who = `Stage ${st.index ?? i}, ${st.device}, holds no transformer block`;
    if (i === 0) out.push(`${who}: only the embedding.`);
    else if (i === S - 1) out.push(`${who}: only the output layer and the loss, and every stage before it runs one more micro-batch ahead (1F1B warm-up).`);
    else out.push(`${who}: it only forwards activations and gradients, and every stage before it runs one more micro-batch ahead (1F1B warm-up), which hides the round trip of slow sends.`);
  });
  return out;
}

/** GPUs per group of the cluster, and how many of each the plan uses */
export function gpuUsage(est, cluster) {
  const groups = (cluster?.groups || []).map((g, i) => {
    const nodes = Number.isFinite(g.nodes) ? g.nodes : 0;
    const gpn = Number.isFinite(g.gpus_per_node) ? g.gpus_per_node : 0;
    // a calibrated preset device is sent as {"base": id, ...}: named by its preset
    return { group: i, device: typeof g.device === 'string' ? g.device : (g.device?.name ?? g.device?.base ?? 'inline device'), total: nodes * gpn, used: 0 };
  });
  for (const st of est?.stages || []) {
    const reps = Array.isArray(st.replicas) && st.replicas.length ? st.replicas : [{ group: st.group, count: st.dp, tp: st.tp }];
    for (const r of reps) {
      const g = groups[r.group];
      if (g) g.used += (r.count ?? 1) * (r.tp ?? 1) * (st.cp ?? 1); // a replica is tp x cp GPUs
    }
  }
  for (const g of groups) g.idle = Math.max(0, g.total - g.used);
  const total = groups.reduce((a, g) => a + g.total, 0);
  const used = est?.num_gpus ?? groups.reduce((a, g) => a + g.used, 0);
  return { groups, total, used, idle: Math.max(0, total - used) };
}

/**
 * Why GPUs stay idle: sentences from what the plan and the search report. result: the search
 * result ({plans, baselines, stats}) when there is one.
 */
export function idleReasons(est, cluster, result, trainingBatch) {
  const u = gpuUsage(est, cluster);
  if (!u.idle) return { ...u, reasons: [] };
  const reasons = [];
  const mbs = est?.plan?.micro_batch_size;
  const stages = est?.stages || [];
  const saturated = stages.filter((st) => st.dp >= mbs);
  if (mbs && saturated.length) {
    reasons.push(`Each micro-batch has ${mbs} sample${mbs === 1 ? '' : 's'} and ${saturated.length === stages.length ? 'every stage' : `${saturated.length} of the ${stages.length} stages`} already split${saturated.length === stages.length || saturated.length === 1 ? 's' : ''} it into one sample per data-parallel replica: more replicas would need a larger micro-batch${trainingBatch ? ` (the global batch of ${trainingBatch} samples limits the choices)` : ''}.`);
  }
  for (const g of u.groups) {
    if (g.total && !g.used) reasons.push(`Group ${g.group}, ${g.device}, is not used at all: every plan the search found with it was slower (a slower device becomes the bottleneck stage) or did not fit.`);
  }
  const plans = result?.plans || [];
  const more = plans.map((p, i) => ({ p, i })).filter(({ p }) => p !== est && p.num_gpus > u.used);
  if (more.length) {
    const { p, i } = more[0];
    reasons.push(`Plan #${i + 1} uses ${p.num_gpus} GPU${p.num_gpus === 1 ? '' : 's'} and is ${fmtPct(p.iteration_time_s / est.iteration_time_s - 1)} slower per iteration.`);
  }
  for (const b of result?.baselines || []) {
    if (b.num_gpus > u.used && b.iteration_time_s > 0 && est.iteration_time_s > 0) {
      reasons.push(`The ${b.name} baseline uses ${b.num_gpus} GPU${b.num_gpus === 1 ? '' : 's'} and takes ${(b.iteration_time_s / est.iteration_time_s).toFixed(2)}× as long per iteration.`);
    }
  }
  const inf = Object.entries(result?.stats?.infeasible || {}).filter(([, n]) => n > 0);
  if (inf.length) reasons.push(`The search rejected layouts as infeasible: ${inf.map(([k, n]) => `${Number(n).toLocaleString('en-US')} for ${k}`).join(', ')}.`);
  reasons.push('The search ranks plans by iteration time only: it leaves GPUs idle whenever using them would not make the iteration faster.');
  return { ...u, reasons };
}

/**
 * The status line when a search ends: its time and counts (stats: the result's). found: whether it
 * found a plan; without one the line says so in a few words after the counts, and no more: the
 * headline says what to do (see below what would make one fit), and the line does not repeat it.
 */
export function searchDoneText(s = {}, { found = true } = {}) {
  const on = s.workers > 1 ? ` on ${s.workers} workers` : '';
  const limit = s.complete === false ? (found ? ' (time limit reached: best found so far)' : ' (time limit reached)') : '';
  return `Done in ${fmtTime(s.elapsed_s)}${limit}: evaluated ${fmtInt(s.evaluated ?? 0)} plans · pruned ${fmtInt(s.pruned ?? 0)} branches${on}${found ? '' : '; no plan fits'}.`;
}

// the core's note on an exact batch with few factors of two (core/src/search_result.cpp, explain_batch;
// docs/search.md, step 1): read back into numbers so the page can say it in its own words and offer
// the tolerance it names
const BATCH_NOTE = /^training\.global_batch_size (\d+) (?:is odd|has only (\d+) as its power-of-two factor), where the largest group has (\d+) GPUs: .* than at (\d+); training\.global_batch_tolerance ([0-9.]+) lets the search train any batch from (\d+) to (\d+)/;

/** the batch hint of a search's stats: { batch, factor, gpus, near, tolerance, lo, hi, text } or null */
export function batchHint(stats) {
  for (const n of Array.isArray(stats?.notes) ? stats.notes : []) {
    const m = BATCH_NOTE.exec(String(n));
    if (!m) continue;
    const [batch, factor, gpus, near, tolerance, lo, hi] = [m[1], m[2] ?? '1', m[3], m[4], m[5], m[6], m[7]].map(Number);
    const why = factor === 1 ? `${fmtInt(batch)} samples is odd` : `${fmtInt(batch)} samples has only ${factor} as its power-of-two factor`;
    const text = `A global batch of ${why}, and the largest group has ${fmtInt(gpus)} GPUs: every stage's data parallelism divides the batch, `
      + `so these plans may run fewer replicas and more stages than at ${fmtInt(near)}. A batch tolerance of ${tolerance} lets the search train any batch `
      + `from ${fmtInt(lo)} to ${fmtInt(hi)}, ranked by tokens/s.`;
    return { batch, factor, gpus, near, tolerance, lo, hi, text };
  }
  return null;
}

/**
 * A core note in the page's words where the core's names the CLI: the timeline the search result
 * leaves out (the page fetches it when it shows the plan), the CUDA graphs field by its label.
 * Other notes pass unchanged.
 */
export function pageNote(note) {
  const n = String(note);
  const cut = /^timeline of the best plan left out: (\d+) events, over (\d+) \(estimate gives it in full\)$/.exec(n);
  if (cut) return `The search result leaves out the best plan's timeline (${fmtInt(Number(cut[1]))} events, over its cap of ${fmtInt(Number(cut[2]))}); the page asks the engine for it when it draws the plan.`;
  return n.replace('training.cuda_graph_impl "full_iteration" removes it', 'CUDA graphs "full_iteration" under Training removes it');
}
