// The scenarios the node tests run: the examples in docs/examples, and every preset model on a
// preset cluster and every preset cluster with a preset model, each with a simple valid plan built here.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

function pow2Below(n) {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/** A valid 1F1B plan: stages per group (4 on a one-group cluster), layers split by GPU count,
 * the largest power-of-two TP that fits a node and divides the heads. */
export function simplePlan(model, cluster) {
  const heads = model.num_attention_heads;
  const kv = model.num_kv_heads ?? heads;
  const perGroup = cluster.groups.length === 1 ? Math.min(4, model.num_layers) : 1;
  const groups = cluster.groups.slice(0, Math.min(cluster.groups.length, model.num_layers));
  const parts = [];
  groups.forEach((g, gi) => {
    let tp = pow2Below(g.gpus_per_node);
    while (tp > 1 && (heads % tp || kv % tp)) tp /= 2;
    const gpus = g.nodes * g.gpus_per_node;
    const k = Math.max(1, Math.min(perGroup, Math.floor(gpus / tp)));
    const dp = Math.min(16, pow2Below(Math.max(1, Math.floor(gpus / (tp * k)))));
    for (let i = 0; i < k; i++) parts.push({ group: gi, tp, dp, weight: gpus / k });
  });
  const total = parts.reduce((a, p) => a + p.weight, 0);
  let left = model.num_layers;
  const stages = parts.map((p, i) => {
    const rest = parts.length - 1 - i;
    const n = rest === 0 ? left : Math.max(1, Math.min(left - rest, Math.round((model.num_layers * p.weight) / total)));
    left -= n;
    return { group: p.group, num_layers: n, tp: p.tp, dp: p.dp };
  });
  const mbs = Math.max(...stages.map((s) => s.dp));
  return { micro_batch_size: mbs, num_micro_batches: 8, schedule: '1f1b', stages };
}

export function exampleScenarios() {
  const dir = path.join(ROOT, 'docs/examples');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => f.endsWith('.scenario.json')).map((f) => {
    const scenario = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    const planFile = path.join(dir, f.replace('.scenario.json', '.plan.json'));
    return { name: `docs/examples/${f}`, scenario, plan: fs.existsSync(planFile) ? JSON.parse(fs.readFileSync(planFile, 'utf8')) : null };
  });
}

/** presets = parsed presets_json(); returns [{name, scenario, plan}] */
export function presetScenarios(presets) {
    const out = [];
  const bigCluster = presets.clusters.find((c) => c.id === 'megatron-a100-3072') ?? presets.clusters.at(-1);
  const demoModel = presets.models.find((m) => m.id === 'gpt3-1.7b') ?? presets.models[0];
  for (const model of presets.models) {
    const plan = simplePlan(model, bigCluster);
    out.push({ name: `model ${model.id} on ${bigCluster.id}`, scenario: { model: model.id, training: { global_batch_size: plan.micro_batch_size * plan.num_micro_batches }, cluster: bigCluster.id }, plan });
  }
  for (const cluster of presets.clusters) {
    const plan = simplePlan(demoModel, cluster);
    out.push({ name: `cluster ${cluster.id} with ${demoModel.id}`, scenario: { model: demoModel.id, training: { global_batch_size: plan.micro_batch_size * plan.num_micro_batches }, cluster: cluster.id }, plan });
  }
  return out;
}
