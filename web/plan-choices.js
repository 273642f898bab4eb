// The training choices a search made (plan.precision, plan.fsdp; docs/formats.md, "Plan"): a plan
// that carries them trains in them in place of the scenario's training.precision and
// training.fsdp, as the core's scenario_for_plan does. Pure (no DOM), tested in node.

const HIGH = new Set(['bf16', 'fp16', 'fp32']);

/** the training a plan runs with: the scenario's, with the plan's precision and FSDP choice */
export function planTraining(training = {}, plan = {}) {
  const hasPrecision = typeof plan?.precision === 'string';
  const hasFsdp = typeof plan?.fsdp === 'boolean';
  if (!hasPrecision && !hasFsdp) return training;
  const t = { ...training };
  if (hasPrecision) t.precision = plan.precision;
  if (hasFsdp) t.fsdp = plan.fsdp;
  // the low-precision gather applies where the plan's precision is low and its states sharded
  const low = !HIGH.has(t.precision ?? 'bf16');
  if (t.fp8_param_gather && !(low && (t.distributed_optimizer || t.fsdp))) delete t.fp8_param_gather;
  return t;
}

/** scenario sc as the plan trains it (sc itself when the plan carries no choice) */
export function planScenario(sc, plan) {
  if (!sc || (typeof plan?.precision !== 'string' && typeof plan?.fsdp !== 'boolean')) return sc;
  return { ...sc, training: planTraining(sc.training, plan) };
}

/** "fp8", "bf16 + FSDP", "fp8, no FSDP": the choices a plan carries, '' when none */
export function planChoicesText(plan) {
  const parts = [];
  if (typeof plan?.precision === 'string') parts.push(plan.precision);
  if (typeof plan?.fsdp === 'boolean') parts.push(plan.fsdp ? 'FSDP' : 'no FSDP');
  return parts.join(', ');
}
