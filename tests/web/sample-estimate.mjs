// A two-stage estimate with a small timeline (compute, sends, DP and the optimizer step), shared by
// the pure tests of the exports (pure.test.mjs) and of the timeline (timeline-pure.test.mjs).
export const est = {
  iteration_time_s: 1, tokens_per_s: 1000, mfu: 0.5, num_gpus: 16, memory_fits: true,
  stages: [{ index: 0, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }, { index: 1, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }],
  timeline: [
    { stage: 0, kind: 'forward', micro_batch: 0, start_s: 0, end_s: 0.1 },
    { stage: 0, kind: 'send_forward', micro_batch: 0, start_s: 0.1, end_s: 0.15 },
    { stage: 0, kind: 'send_backward', micro_batch: 0, start_s: 0.12, end_s: 0.2 },
    { stage: 0, kind: 'dp_sync', micro_batch: null, start_s: 0.5, end_s: 0.6 },
    { stage: 1, kind: 'forward', micro_batch: 0, start_s: 0.15, end_s: 0.25 },
    { stage: 1, kind: 'backward', micro_batch: 0, start_s: 0.25, end_s: 0.45 },
    { stage: 1, kind: 'optimizer', micro_batch: null, start_s: 0.9, end_s: 1 },
  ],
  plan: { micro_batch_size: 8, num_micro_batches: 4, schedule: '1f1b', stages: [{ group: 0, num_layers: 12, tp: 2, dp: 4 }, { group: 0, num_layers: 12, tp: 2, dp: 4 }] },
};
