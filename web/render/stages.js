// Stage diagram of one estimate: a box per pipeline stage, wider with more layers, colour by
// device, with GPUs, TP x (CP x) DP and a memory bar against capacity.
import { h, fmt, fmtTime } from '../dom.js';
import { deviceColors, stageDevices } from './colors.js';
import { memoryLevel } from './memory.js';

export function stageDiagram(est) {
  const stages = est.stages || [];
  const colors = deviceColors(stages);
  // many stages scroll sideways: the list takes the focus, so the keyboard can scroll it (WCAG 2.1.1)
  const row = h('ol', { class: 'stages', tabindex: '0', 'aria-label': 'Pipeline stages, first to last' });
  for (const [i, st] of stages.entries()) {
    // an interleaved plan's own blocks per model chunk (chunk_layers), e.g. "0+8+8+8": a 0 is a
    // chunk holding only the embedding or only the head
    const chunks = est.plan?.stages?.[st.index ?? i]?.chunk_layers;
    const mem = st.memory_GiB ?? 0;
    const cap = st.memory_capacity_GiB ?? 0;
    const share = cap > 0 ? mem / cap : 0;
    const level = memoryLevel(share); // 'ok', 'warn' above 90 % of capacity, 'over' above 100 %
    const fill = h('span', { class: `mem-fill${level === 'ok' ? '' : ` ${level}`}` });
    fill.style.width = `${Math.min(100, 100 * share).toFixed(1)}%`;
    const swatches = stageDevices(st).map((d) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.backgroundColor = colors.get(d) ?? '#888';
      return sw;
    });
    const mixed = Array.isArray(st.replicas) && new Set(st.replicas.map((r) => `${r.device}/${r.tp}`)).size > 1;
    const parallel = mixed
      ? st.replicas.map((r) => `${r.count ?? 1}× ${r.device} TP ${r.tp}`).join(' + ')
      // no-break spaces keep each degree with its number when a narrow box wraps ("TP 1 ×" / "DP 32" read apart)
      : `TP\u00a0${st.tp}${st.cp > 1 ? ` × CP\u00a0${st.cp}` : ''} × DP\u00a0${st.dp}`;
    // MoE: the stage's expert grid and its token exchange per micro-batch (docs/formats.md, "Estimate output")
    const experts = Number.isInteger(st.ep)
      ? h('div', { class: 'muted', title: 'expert-parallel size × expert tensor-parallel size; dispatch + combine per micro-batch (forward and backward)' },
        // a stage of dense blocks only (DeepSeek-V3's first three) has the plan's grid but no experts
        `EP ${st.ep}${st.etp > 1 ? ` × ETP ${st.etp}` : ''} · ${st.expert_params_per_gpu === 0 ? 'no MoE block here' : `all-to-all ${fmtTime((st.forward_ep_comm_s ?? 0) + (st.backward_ep_comm_s ?? 0))}`}`)
      : '';
    const li = h('li', { class: `stage${st.fits === false ? ' nofit' : ''}` },
      h('div', { class: 'stage-head' }, swatches, h('strong', {}, `Stage ${st.index ?? stages.indexOf(st)}`)),
      h('div', { class: 'stage-dev' }, stageDevices(st).join(' + ')),
      h('div', {}, `${st.num_layers} layer${st.num_layers === 1 ? '' : 's'}`,
        Array.isArray(chunks) ? h('span', { class: 'muted', title: 'layers per model chunk (chunk 0 first)' }, ` (chunks ${chunks.join('+')})`) : ''),
      h('div', {}, `${st.gpus} GPU${st.gpus === 1 ? '' : 's'} · ${parallel}`),
      experts,
      h('div', { class: 'muted', title: 'forward and backward time of one micro-batch' }, `F\u00a0${fmtTime(st.forward_s).replace(' ', '\u00a0')} · B\u00a0${fmtTime(st.backward_s).replace(' ', '\u00a0')}`),
      h('div', { class: 'mem', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': fmt(cap, 1), 'aria-valuenow': fmt(mem, 1),
        'aria-label': `memory ${fmt(mem, 1)} of ${fmt(cap, 1)} GiB` }, fill),
      h('div', { class: `mem-text${level === 'over' ? ' bad' : level === 'warn' ? ' warn' : ''}` }, `${fmt(mem, 1)} / ${fmt(cap, 1)} GiB`));
    li.style.flexGrow = String(Math.max(1, st.num_layers || 1));
    row.append(li);
  }
  const legend = h('ul', { class: 'legend', 'aria-label': 'Device colours' },
    [...colors.entries()].map(([name, c]) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.backgroundColor = c;
      return h('li', {}, sw, String(name));
    }));
  return h('div', {}, row, legend);
}
