// "Runs on stock Megatron-LM" (issue 36 item 7): a plan runs on stock Megatron-LM when its
// Megatron-LM command (megatron.js) needs nothing stock Megatron-LM lacks: one TP, DP, CP and
// micro-batch for every stage, a layer split its flags express, no stage that mixes GPU types.
// The fastest such plan is looked for among the plans the search listed and the Megatron-LM
// style baseline (megatron-uniform), which is one by construction.
import { megatronArgs } from './megatron.js';
import { byId } from './state.js';
import { state } from './store.js';

/** the training's stack as an object (preset id, {base, ...} or inline; the core's default when absent) */
export function stackOf(training) {
  const st = training?.stack ?? 'megatron-core';
  if (typeof st === 'string') return byId(state.presets.stacks || [], st) ?? null;
  if (st && typeof st === 'object' && typeof st.base === 'string') return { ...(byId(state.presets.stacks || [], st.base) ?? {}), ...st };
  return st && typeof st === 'object' ? st : null;
}

/**
 * {ok, why: [what stock Megatron-LM cannot run as planned], layout} for an estimate of the result on
 * screen; layout: the command needs Megatron-Core's --pipeline-model-parallel-layout (in stock
 * Megatron-Core, and experimental there), which the badge then names
 */
export function stockCheck(est, sc = state.resultScenario) {
  if (!est?.plan || !Array.isArray(est.stages) || !sc) return { ok: false, why: ['no plan'], layout: false };
  const model = typeof sc.model === 'string' ? byId(state.presets.models, sc.model) : sc.model;
  const r = megatronArgs(est, { model, training: sc.training }, { modelId: typeof sc.model === 'string' ? sc.model : null, stack: stackOf(sc.training) });
  if (!r.ok) return { ok: false, why: r.reasons, layout: false };
  return { ok: r.unsupported.length === 0, why: r.unsupported, layout: r.args.some(([n]) => n === '--pipeline-model-parallel-layout') };
}

/**
 * The fastest plan stock Megatron-LM can run among the result's plans and its megatron-uniform
 * baseline: {est, index} (index into result.plans, or -1 for the baseline), or null.
 */
export function fastestStock(result = state.result, sc = state.resultScenario) {
  const cands = (result?.plans ?? []).map((est, index) => ({ est, index }));
  const base = (result?.baselines ?? []).find((b) => b?.name === 'megatron-uniform' && b.plan && Number.isFinite(b.iteration_time_s));
  if (base) cands.push({ est: base, index: -1 });
  let best = null;
  for (const c of cands) {
    if (c.est.memory_fits === false || !stockCheck(c.est, sc).ok) continue;
    // the search's order (tokens/s) decides; the baseline only when strictly faster
    if (!best || c.est.tokens_per_s > best.est.tokens_per_s) best = c;
  }
  return best;
}
