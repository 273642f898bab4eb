// The expert-parallel all-to-all of an MoE plan as events on an "ep" lane of the timeline
// (docs/web.md, "Timeline"). The core times each stage's token dispatch and combine per micro-batch
// (stages[].forward_ep_comm_s, backward_ep_comm_s) inside its forward and backward passes, and
// its timeline has one event per pass. Without the overlap switches the compute stream waits while
// they run (docs/model.md, "Expert parallelism"); with moe_shared_expert_overlap or
// overlap_moe_expert_parallel_comm part of them runs beside compute (the shared experts, the
// merged passes of two micro-batches), which this lane does not show apart. This adds, per
// block of each pass, its two exchanges where they fall in the block: forward = attention and
// router, dispatch, experts, combine; backward the reverse. The core keeps no split of a pass into
// attention and expert compute, so a block's compute is drawn evenly around its exchanges: the
// lane shows how much of each pass is all-to-all and how often it runs, not the instant of each.
// Pure (no DOM), memoised per estimate.

/** the event kind and resource of the exchanges drawn */
export const EP_KIND = 'ep_a2a';
export const EP_RESOURCE = 'ep';
/** more exchanges than this are not drawn (the lane would be a solid band; the stage strip has the times) */
export const MAX_EXCHANGES = 200000;

const cache = new WeakMap();

/** the stage's blocks per pass of `chunk`: the plan's chunk layout, or an even split over V chunks */
function blocksOf(est, s, chunk) {
  const V = Number.isInteger(est.plan?.virtual_stages) && est.plan.virtual_stages > 1 ? est.plan.virtual_stages : 1;
  const ps = est.plan?.stages?.[s];
  const total = Number(est.stages?.[s]?.num_layers ?? ps?.num_layers ?? 0);
  const chunkLayers = Array.isArray(ps?.chunk_layers) && ps.chunk_layers.length === V ? ps.chunk_layers[chunk ?? 0] : total / V;
  return { blocks: Math.max(0, Math.round(chunkLayers)), share: total > 0 ? chunkLayers / total : 0 };
}

/** the exchanges of one pass event `e` (forward or backward) of `blocks` blocks, `a2a_s` of all-to-all in all */
function passExchanges(e, blocks, a2a_s, out) {
  const D = e.end_s - e.start_s;
  if (!(D > 0) || !(a2a_s > 0) || blocks < 1) return;
  const d = D / blocks;
  const a = Math.min(a2a_s / blocks, d);  // both exchanges of one block
  const c = d - a;                        // the block's compute, split evenly around them
  const base = { stage: e.stage, kind: EP_KIND, resource: EP_RESOURCE, micro_batch: e.micro_batch ?? null, derived: true };
  if (Number.isInteger(e.chunk)) base.chunk = e.chunk;
  for (let k = 0; k < blocks; k++) {
    const b0 = e.start_s + k * d;
    const spans = e.kind === 'forward'
      ? [['dispatch', b0 + c / 2], ['combine', b0 + d - a / 2]]
      : [['combine (backward)', b0], ['dispatch (backward)', b0 + a / 2 + c / 2]];
    for (const [phase, t] of spans) out.push({ ...base, phase, block: k, start_s: t, end_s: t + a / 2 });
  }
}

/**
 * `est` with its MoE stages' all-to-all exchanges added to the timeline (the same object when it
 * has none to add, or more than MAX_EXCHANGES).
 */
export function withExchanges(est) {
  if (!est || !Array.isArray(est.timeline) || !Array.isArray(est.stages)) return est;
  if (cache.has(est)) return cache.get(est);
  let result = est;
  const moe = est.stages.some((st) => st.forward_ep_comm_s > 0 || st.backward_ep_comm_s > 0);
  if (moe && !est.timeline.some((e) => e.kind === EP_KIND)) {
    let count = 0;
    for (const e of est.timeline) {
      if (e.kind !== 'forward' && e.kind !== 'backward') continue;
      const st = est.stages[e.stage];
      if (st && (e.kind === 'forward' ? st.forward_ep_comm_s : st.backward_ep_comm_s) > 0) count += 2 * blocksOf(est, e.stage, e.chunk).blocks;
    }
    if (count > 0 && count <= MAX_EXCHANGES) {
      const added = [];
      for (const e of est.timeline) {
        if (e.kind !== 'forward' && e.kind !== 'backward') continue;
        const st = est.stages[e.stage];
        if (!st) continue;
        const { blocks, share } = blocksOf(est, e.stage, e.chunk);
        passExchanges(e, blocks, share * Number(e.kind === 'forward' ? st.forward_ep_comm_s : st.backward_ep_comm_s), added);
      }
      result = { ...est, timeline: est.timeline.concat(added) };
    }
  }
  cache.set(est, result);
  cache.set(result, result);
  return result;
}
