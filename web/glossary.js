// Words and units the page uses: one line each, shown as tooltips on table headers and as the
// "Words and units" list under the results (so keyboard and touch users read them too).

export const GLOSSARY = {
  PP: 'Pipeline parallelism: the model\'s layers are cut into consecutive stages, each on its own GPUs; micro-batches flow through the stages (1F1B schedule: one forward, one backward alternately).',
  TP: 'Tensor parallelism: each layer\'s matrices are split over TP GPUs of one NVLink domain (a node, or an NVL72 rack), which exchange partial results (all-reduce) inside every layer.',
  DP: 'Data parallelism: DP replicas of a stage each process different samples; their gradients are averaged (all-reduce) once per iteration.',
  'TP × DP': 'Per stage: TP GPUs per replica × DP replicas = the stage\'s GPUs. A stage with mixed replicas lists each replica set as TP×count; with context parallelism it reads TP×CPcp×DP (each replica is TP × CP GPUs that split every sequence); an MoE stage adds its expert grid, epN (and /etpM): the routed experts split over N of the same GPUs, each expert\'s FFN over M.',
  'micro-batch per replica': 'Samples one data-parallel replica processes per micro-batch: Megatron-LM\'s --micro-batch-size.',
  'pipeline micro-batch': 'Samples one micro-batch carries through the pipeline, summed over the stage\'s data-parallel replicas (micro-batch per replica × DP). Pipeline micro-batch × count = the global batch.',
  'global batch': 'Samples per iteration (one optimizer step), over all replicas and micro-batches.',
  iteration: 'One optimizer step: every micro-batch\'s forward and backward, the gradient sync and the optimizer.',
  'tokens/s': 'Training throughput: global batch × sequence length / iteration time.',
  MFU: 'Model FLOPs utilisation: the model\'s training FLOPs per second (6 × parameters × tokens, plus attention; a mixture of experts counts its active parameters: the top-k routed and the shared experts) divided by the peak dense FLOP/s of the GPUs used, their BF16 (or FP16) tensor-core peak whatever the precision: a plan in FP8, MXFP8 or NVFP4 reads higher than the same plan in BF16, since its GEMMs run faster. The attention scores count in full (4 × batch × sequence² × hidden per block, as published MFU figures count them), so at long sequences MFU reads above the tensor cores\' real use. Recompute does not count as useful work.',
  bubble: 'Time a pipeline stage waits with nothing to compute: while the pipeline fills and drains, or behind a slower stage.',
  'DP sync': 'The data-parallel all-reduce of the gradients at the end of the iteration (partly hidden behind the last backwards).',
  bottleneck: 'The stage with the most work per iteration; the iteration cannot be shorter than its busy time.',
  'megatron-uniform': 'Baseline: Megatron-LM style, one TP, PP and DP for every stage and equal layers per stage, GPUs taken in the cluster\'s order regardless of type.',
  'metis-heuristic': 'Baseline: Metis-style, device groups ordered by speed, equal stages per group, layers proportional to each stage\'s compute speed.',
  speedup: 'A baseline\'s iteration time divided by the best plan\'s: how much faster the searched plan is.',
  'GB/s and Gb/s': 'GB/s = gigabytes per second; Gb/s = gigabits per second; 1 GB/s = 8 Gb/s. A "200 Gb/s" InfiniBand NIC moves 25 GB/s per direction. The cluster\'s NIC field is GB/s per node.',
  'GPU-hour': 'One GPU for one hour; a plan\'s cost per hour is its GPUs × their price per GPU-hour.',
  'cost per 1M tokens': 'The plan\'s price per hour divided by the tokens it trains per hour, × 1,000,000.',
  'days to train': 'The token budget divided by tokens/s, in days of 24 hours (no restarts or evaluation counted).',
  stale: 'The inputs changed after this result was computed; the mark says what comes next (a new search, inputs to fix, or Find plans).',
};

export const gloss = (term) => GLOSSARY[term] ?? null;
