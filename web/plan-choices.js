// The training choices a search made (plan.precision, plan.fsdp, plan.recompute and
// plan.recompute_num_layers; docs/formats.md, "Plan"): a plan that carries them trains in them in
// place of the scenario's training.precision, training.fsdp and training.recompute, as the core's
// scenario_for_plan does. Pure (no DOM), tested in node.

const HIGH = new Set(['bf16', 'fp16', 'fp32']);

/** whether a plan carries a training choice of a search */
export const hasTrainingChoice = (plan) => typeof plan?.precision === 'string' || typeof plan?.fsdp === 'boolean' || typeof plan?.recompute === 'string';

/** the training a plan runs with: the scenario's, with the plan's precision, FSDP and recompute choice */
export function planTraining(training = {}, plan = {}) {
  if (!hasTrainingChoice(plan)) return training;
  const t = { ...training };
  if (typeof plan.precision === 'string') t.precision = plan.precision;
  if (typeof plan.fsdp === 'boolean') t.fsdp = plan.fsdp;
  if (typeof plan.recompute === 'string') {
    // the scenario's named modules go with its own selective recomputation only (the core refuses
    // them beside another), the block count with full
    if (plan.recompute !== 'selective' || t.recompute !== 'selective') delete t.recompute_modules;
    t.recompute = plan.recompute;
    if (plan.recompute === 'full' && Number.isInteger(plan.recompute_num_layers)) t.recompute_num_layers = plan.recompute_num_layers;
    else delete t.recompute_num_layers;
  }
  // the low-precision gather applies where the plan's precision is low and its states sharded
  const low = !HIGH.has(t.precision ?? 'bf16');
  if (t.fp8_param_gather && !(low && (t.distributed_optimizer || t.fsdp))) delete t.fp8_param_gather;
  return t;
}

/** scenario sc as the plan trains it (sc itself when the plan carries no choice) */
export function planScenario(sc, plan) {
  if (!sc || !hasTrainingChoice(plan)) return sc;
  return { ...sc, training: planTraining(sc.training, plan) };
}

/** "fp8", "fp8, no FSDP", "bf16, recompute 2 blocks": the choices a plan carries, '' when none */
export function planChoicesText(plan) {
  const parts = [];
  if (typeof plan?.precision === 'string') parts.push(plan.precision);
  if (typeof plan?.fsdp === 'boolean') parts.push(plan.fsdp ? 'FSDP' : 'no FSDP');
  const recompute = recomputeWords(plan?.recompute, plan?.recompute_num_layers);
  if (recompute) parts.push(recompute);
  return parts.join(', ');
}

/**
 * A recomputation in words ('selective recompute', 'recompute 2 blocks' + per, 'full recompute',
 * 'no recompute'); '' for anything else. n: recompute_num_layers (the block method's count).
 */
export function recomputeWords(recompute, n, per = '') {
  if (recompute === 'none') return 'no recompute';
  if (recompute === 'selective') return 'selective recompute';
  if (recompute !== 'full') return '';
  return Number.isInteger(n) && n > 0 ? `recompute ${n} ${n === 1 ? 'block' : 'blocks'}${per}` : 'full recompute';
}
