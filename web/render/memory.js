// Memory per GPU by component for the selected plan: one stacked bar per stage against the GPU's
// capacity, and the same numbers as a table. The components are the core's
// stages[].memory_breakdown_GiB (docs/model.md, "Memory"); they add up to stages[].memory_GiB.
import { h, fmt, fmtFixed, fmtPct, scrollTable } from '../dom.js';

/** the seven components, in the order they are stacked, with their labels */
export const MEMORY_COMPONENTS = [
  { key: 'weights', label: 'weights', title: 'model parameters held by one GPU (bf16/fp16, or fp32)' },
  { key: 'gradients', label: 'gradients', title: 'gradient buffers (fp32 where the stack accumulates in fp32)' },
  { key: 'optimizer', label: 'optimizer state', title: 'fp32 master weights and Adam moments (sharded over DP with the distributed optimizer)' },
  { key: 'activations', label: 'activations', title: 'activations kept for the backward pass of the micro-batches in flight (1F1B)' },
  { key: 'temporary', label: 'temporary buffers', title: 'loss buffers: fp32 logits and their gradient on the last stage' },
  { key: 'allocator', label: 'allocator reserve', title: "the caching allocator's blocks reserved but not in use at the peak" },
  { key: 'overhead', label: 'framework overhead', title: 'CUDA context, NCCL buffers, framework workspace' },
];

/** above this share of the capacity a stage is marked (warning colour); above 1 it does not fit */
export const WARN_SHARE = 0.9;

export function memoryLevel(share) {
  if (!(share >= 0)) return 'ok';
  if (share > 1) return 'over';
  return share > WARN_SHARE ? 'warn' : 'ok';
}

/**
 * One row per stage: {stage, device, total, capacity, share, level, parts: [{key, label, GiB}]}.
 * A component the core does not report is 0; `other` is what the reported total has beyond the
 * components (0 when they add up, as they do).
 */
export function memoryRows(est) {
  return (est?.stages || []).map((st, i) => {
    const b = st.memory_breakdown_GiB || {};
    const parts = MEMORY_COMPONENTS.map((c) => ({ key: c.key, label: c.label, GiB: Number.isFinite(b[c.key]) ? b[c.key] : 0 }));
    const sum = parts.reduce((a, p) => a + p.GiB, 0);
    const total = Number.isFinite(st.memory_GiB) ? st.memory_GiB : sum;
    const capacity = Number.isFinite(st.memory_capacity_GiB) ? st.memory_capacity_GiB : 0;
    const share = capacity > 0 ? total / capacity : null;
    return { stage: st.index ?? i, device: String(st.device ?? ''), total, capacity, share, level: memoryLevel(share),
      other: Math.abs(total - sum) > 1e-6 * Math.max(1, total) ? total - sum : 0, parts };
  });
}

const LEVEL_TEXT = { ok: '', warn: ' — above 90 % of capacity', over: ' — does not fit' };

/** stacked bars and the table */
export function memoryBreakdown(est) {
  const rows = memoryRows(est);
  if (!rows.length) return h('p', { class: 'muted' }, 'No plan selected.');
  const bars = h('ul', { class: 'membars', 'aria-label': 'Memory per GPU by component, per stage' });
  for (const r of rows) {
    // the bar spans the larger of capacity and use, so an over-full stage shows how far over it is
    const scale = Math.max(r.capacity, r.total) || 1;
    const track = h('div', { class: 'memstack', role: 'img',
      'aria-label': `stage ${r.stage}: ${r.parts.filter((p) => p.GiB > 0).map((p) => `${p.label} ${fmt(p.GiB, 2)} GiB`).join(', ')}; ${fmt(r.total, 1)} of ${fmt(r.capacity, 1)} GiB` });
    for (const p of r.parts) {
      if (!(p.GiB > 0)) continue;
      const seg = h('span', { class: `memseg mem-${p.key}`, title: `${p.label}: ${fmt(p.GiB, 2)} GiB` });
      seg.style.width = `${(100 * p.GiB / scale).toFixed(2)}%`;
      track.append(seg);
    }
    if (r.capacity > 0 && r.total > r.capacity) {
      const cap = h('span', { class: 'memcap', title: `capacity ${fmt(r.capacity, 1)} GiB` });
      cap.style.left = `${(100 * r.capacity / scale).toFixed(2)}%`;
      track.append(cap);
    }
    bars.append(h('li', { class: `membar ${r.level}`, 'data-level': r.level },
      h('span', { class: 'membar-label' }, `Stage ${r.stage}`, h('span', { class: 'muted' }, ` ${r.device}`)),
      track,
      h('span', { class: `membar-total ${r.level}` }, `${fmt(r.total, 1)} / ${fmt(r.capacity, 1)} GiB (${r.share === null ? '–' : fmtPct(r.share)})${LEVEL_TEXT[r.level]}`)));
  }
  const legend = h('ul', { class: 'legend memlegend', 'aria-label': 'Memory components' },
    MEMORY_COMPONENTS.map((c) => h('li', { title: c.title }, h('span', { class: `swatch mem-${c.key}`, 'aria-hidden': 'true' }), c.label)));
  const hasOther = rows.some((r) => r.other !== 0);
  const head = ['stage', ...MEMORY_COMPONENTS.map((c) => c.label), ...(hasOther ? ['other'] : []), 'total', 'capacity', 'used'];
  const table = h('table', { class: 'data memtable', 'data-testid': 'memory-table' },
    h('caption', {}, 'Memory per GPU by component, GiB (per stage, the GPU with the least free memory)'),
    h('thead', {}, h('tr', {}, head.map((t, i) => {
      const c = MEMORY_COMPONENTS[i - 1];
      return h('th', { scope: 'col', title: c?.title ?? null }, t);
    }))),
    h('tbody', {}, rows.map((r) => h('tr', { class: r.level === 'ok' ? '' : r.level, 'data-level': r.level },
      h('th', { scope: 'row' }, `${r.stage}, ${r.device}`),
      r.parts.map((p) => h('td', { 'data-component': p.key }, fmtFixed(p.GiB, 2))),
      hasOther ? h('td', {}, fmtFixed(r.other, 2)) : null,
      h('td', { 'data-component': 'total' }, fmtFixed(r.total, 2)),
      h('td', {}, fmtFixed(r.capacity, 2)),
      h('td', { class: `used ${r.level}` }, r.share === null ? '–' : fmtPct(r.share))))));
  // MoE (docs/formats.md, "Estimate output"): what of the weights are the routed experts', and the
  // token dispatch's buffers within the temporary peak
  const stages = est?.stages || [];
  const moe = stages.some((st) => Number.isFinite(st.expert_weights_GiB))
    ? h('p', { class: 'muted', 'data-testid': 'moe-memory' }, 'Mixture of experts: ', stages.map((st, i) => (st.expert_params_per_gpu === 0
      // a stage of the leading dense blocks only holds no experts (as its stage box says)
      ? `stage ${st.index ?? i} no MoE block here`
      : `stage ${st.index ?? i} expert weights ${fmtFixed(st.expert_weights_GiB ?? 0, 2)} GiB (EP ${st.ep ?? 1}${(st.etp ?? 1) > 1 ? ` × ETP ${st.etp}` : ''}), dispatch buffers ${fmtFixed(st.dispatch_buffers_GiB ?? 0, 2)} GiB`)).join('; '))
    : null;
  return h('div', { class: 'memory' }, bars, legend, scrollTable(table), moe);
}
