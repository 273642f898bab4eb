// What was planned, in one line: model, GPUs by type, global batch, precision (and recomputation),
// software stack.
// The headline and every export carry it, so that a plan seen out of the page (an embed, an
// image, a trace, a plan file, a script) still says what it is a plan for.
// Pure (no DOM), tested in node.

import { recomputeWords } from './plan-choices.js';

const byId = (list, id) => (list || []).find((x) => x.id === id);

/** a device's name without the vendor and product-line words ("NVIDIA A100 SXM4 80GB" → "A100 SXM4 80GB") */
export function shortDeviceName(name) {
  return String(name).replace(/^(NVIDIA|AMD)\s+/i, '').replace(/^(GeForce|Instinct)\s+/i, '').trim() || String(name);
}

/**
 * text with every device named as the inputs name it: names is [[what the core or a plan says (an
 * id, a full name), the page's name]], e.g. ["a100-sxm4-80gb", "A100 SXM4 80GB"]; whole names
 * only, the longest first (a custom device's name that holds a preset's stays as it is). A name
 * with brackets of its own ("GB200 (Grace Blackwell, NVL72 rack)") that the text puts in brackets
 * is set off by commas instead: "group 0, GB200 (Grace Blackwell, NVL72 rack): 1 -> 2 nodes".
 */
export function renameDevices(text, names) {
  const usable = names.filter(([from, to]) => typeof from === 'string' && from && typeof to === 'string');
  if (!usable.length) return String(text);
  const to = new Map(usable); // a later pair wins (a custom device over a preset of its id)
  const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const longestFirst = [...to.keys()].sort((a, b) => b.length - a.length);
  const re = new RegExp(`( \\()?(?<![\\w-])(${longestFirst.map(esc).join('|')})(?![\\w-])(\\)([,:;.])?)?`, 'g');
  return String(text).replace(re, (m, open, from, close, punct, at, all) => {
    const name = to.get(from) ?? from;
    if (!open || !close || !/[()]/.test(name)) return `${open ?? ''}${name}${close ?? ''}`;
    return `, ${name}${punct ?? (at + m.length === all.length ? '' : ',')}`;
  });
}

/** the label of a group's device: a preset's short name, a custom device's name, "<preset> (modified)" for {"base"} */
export function deviceLabel(ref, presets) {
  if (typeof ref === 'string') {
    const d = byId(presets?.devices, ref);
    return d?.name ? shortDeviceName(d.name) : ref;
  }
  if (ref && typeof ref === 'object') {
    if (typeof ref.base === 'string') {
      const base = deviceLabel(ref.base, presets);
      return ref.calibration ? `${base} (calibrated)` : `${base} (modified)`;
    }
    if (typeof ref.name === 'string' && ref.name.trim()) return ref.name.trim();
  }
  return 'custom device';
}

/** the cluster's GPUs by device type, in the order of the groups: "64 × H100 SXM5 80GB + 32 × A100 SXM4 80GB" */
export function gpusByType(cluster, presets) {
  const c = typeof cluster === 'string' ? byId(presets?.clusters, cluster) : cluster;
  const counts = new Map();
  for (const g of c?.groups || []) {
    const n = (Number.isFinite(g.nodes) ? g.nodes : 0) * (Number.isFinite(g.gpus_per_node) ? g.gpus_per_node : 0);
    const label = deviceLabel(g.device, presets);
    counts.set(label, (counts.get(label) ?? 0) + n);
  }
  return [...counts].map(([label, n]) => `${n.toLocaleString('en-US')} × ${label}`).join(' + ');
}

function modelName(model, presets) {
  if (typeof model === 'string') return byId(presets?.models, model)?.name ?? model;
  return (model && typeof model.name === 'string' && model.name.trim()) || 'custom model';
}

/** the stack's preset id (the core's default megatron-core when the scenario names none), or a custom stack's name */
function stackName(stack) {
  if (stack === undefined || stack === null) return 'megatron-core';
  if (typeof stack === 'string') return stack;
  if (typeof stack.base === 'string') return `${stack.base} (modified)`;
  return (typeof stack.name === 'string' && stack.name.trim()) || 'custom stack';
}

/** ", selective recompute", ", recompute 2 blocks per stage": the recomputation beside the precision, '' for none */
function recomputeText(t) {
  // no recomputation is the context line's silence, not "no recompute"
  const words = t.recompute === 'none' ? '' : recomputeWords(t.recompute, t.recompute_num_layers, ' per stage');
  return words ? `, ${words}` : '';
}

/**
 * The parts of the context line of scenario sc: {model, gpus, batch, precision, stack}. presets:
 * the core's presets ({models, clusters, devices}), to name what the scenario gives by id.
 */
export function contextParts(sc, presets) {
  const t = sc?.training || {};
  const tol = Number(t.global_batch_tolerance) || 0;
  const gbs = Number.isFinite(t.global_batch_size) ? t.global_batch_size.toLocaleString('en-US') : String(t.global_batch_size ?? '?');
  return {
    model: modelName(sc?.model, presets),
    gpus: gpusByType(sc?.cluster, presets) || 'no GPUs',
    batch: `global batch ${gbs}${tol > 0 ? ` ± ${+(100 * tol).toFixed(2)} %` : ''}`,
    precision: String(t.precision ?? 'bf16') + recomputeText(t),
    stack: stackName(t.stack),
  };
}

/** "Llama 3 8B · 64 × H100 SXM5 80GB + 32 × A100 SXM4 80GB · global batch 512 · bf16 · megatron-core"; '' without a scenario */
export function contextLine(sc, presets) {
  if (!sc) return '';
  const p = contextParts(sc, presets);
  return [p.model, p.gpus, p.batch, p.precision, p.stack].join(' · ');
}
