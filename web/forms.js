// The input forms: model, cluster (groups, links, custom devices), training (stack, TF32), search.
import { h, clear, $, fmt, fmtPct } from './dom.js';
import { diff } from './share.js';
import { contextParts } from './context.js';
import { byId, isEmpty, presetCluster, presetModel, scenario } from './state.js';
import { inputsChanged, inputsReplaced, state, subscribe } from './store.js';
import { CLUSTER_FIELDS, DEFAULT_INTER_LINK, DEFAULT_STACK, DEVICE_BOOLS, DEVICE_ORDER, DEVICE_SELECTS, DEVICE_SKIP, INTER_LINKS, INTRA_LINKS, MODEL_FIELDS, SEARCH_FIELDS, TRAINING_FIELDS, deviceLabel, fieldInput, presetOptions, renderFields } from './fields.js';

export function markModified() {
  const mm = presetModel();
  const mo = $('#model-preset').options[$('#model-preset').selectedIndex];
  if (mo && mm) mo.textContent = `${mm.name ?? mm.id} (${mm.id})${isEmpty(diff(mm, state.model)) ? '' : ' — modified'}`;
  const cc = presetCluster();
  const co = $('#cluster-preset').options[$('#cluster-preset').selectedIndex];
  if (co && cc) co.textContent = `${cc.name ?? cc.id} (${cc.id})${isEmpty(diff(cc, state.cluster)) ? '' : ' — modified'}`;
}

// What the Model, Cluster and Training sections hold, in the headline's words (contextParts:
// "Qwen3 30B-A3B"; "64 × H100 SXM5 80GB + 72 × GB200 …"; "global batch 1,024 · bf16"), so that a
// folded section (the phone's Inputs tab opens with them folded) still says it.
function renderSectionStates() {
  const p = contextParts(scenario(), state.presets);
  const states = { model: p.model, cluster: p.gpus, training: `${p.batch} · ${p.precision}` };
  for (const [k, text] of Object.entries(states)) {
    const el = document.getElementById(`sec-${k}-state`);
    if (el) el.textContent = text;
  }
}

/** an input changed: the store tells everything that follows the inputs (the boxes, the search, the link) */
export function onInputChanged() {
  inputsChanged();
}
subscribe('inputs', () => { markModified(); renderTf32Note(); renderSearchedNote(); renderSectionStates(); });

export function renderModelForm() {
  presetOptions($('#model-preset'), state.presets.models, state.modelPreset, 'Custom model');
  renderFields($('#model-fields'), MODEL_FIELDS.filter((f) => !f.more), () => state.model, 'model', onInputChanged);
  renderFields($('#model-more-fields'), MODEL_FIELDS.filter((f) => f.more), () => state.model, 'model', onInputChanged);
  // the fold follows the model that replaced the last one (a preset, a pasted config.json, a link):
  // open on a model that sets one of the variants, folded on a dense model with standard attention
  // (a link to a dense model does not inherit the fold that the page's default MoE model opened)
  $('#model-more').open = MODEL_FIELDS.some((f) => f.more && state.model[f.key] !== undefined);
  renderModelMore();
  markModified();
}

/** what the folded model fields set, in a few words ("128 experts, top 8; MLA; MTP 1"); [] when none */
export function modelVariants(m) {
  const out = [];
  // (no top-k: the field is empty and refused, so the summary does not make one up)
  if (m.num_experts > 0) out.push(`${m.num_experts} experts, ${m.moe_top_k > 0 ? `top ${m.moe_top_k}` : 'top-k not set'}`);
  if (m.attention === 'mla') out.push('MLA');
  if (m.sliding_window > 0) out.push(`window ${m.sliding_window}`);
  if (m.head_dim !== undefined) out.push(`head dim ${m.head_dim}`);
  if (m.qk_layernorm === true) out.push('QK norm');
  if (m.mtp_layers > 0) out.push(`MTP ${m.mtp_layers}`);
  if (!out.length && MODEL_FIELDS.some((f) => f.more && m[f.key] !== undefined)) out.push('set');
  return out;
}

function renderModelMore() {
  const v = modelVariants(state.model);
  $('#model-more-state').textContent = v.length ? v.join('; ') : 'none';
}
subscribe('inputs', renderModelMore);

// The group table's device column is narrow: the vendor word goes ("A100 SXM4 80GB", "GeForce RTX
// 4090 24GB" → "RTX 4090 24GB"); the full name is the option's and the select's title.
const shortDeviceName = (name) => String(name).replace(/^(NVIDIA|AMD)\s+/, '').replace(/^GeForce\s+/, '');

export function deviceChoices() {
  // two custom devices of one name would read the same: those say their id instead of "custom"
  const named = (id, d) => d?.name ?? id;
  const count = new Map();
  for (const [id, d] of Object.entries(state.devices)) count.set(named(id, d), (count.get(named(id, d)) ?? 0) + 1);
  return [
    ...state.presets.devices.map((d) => ({ id: d.id, label: shortDeviceName(d.name ?? d.id), title: d.name ?? d.id })),
    ...Object.entries(state.devices).map(([id, d]) => {
      const tag = count.get(named(id, d)) > 1 ? id : 'custom';
      return { id, label: `${shortDeviceName(named(id, d))} (${tag})`, title: `${named(id, d)} (${tag})` };
    }),
  ];
}

export function renderClusterForm() {
  presetOptions($('#cluster-preset'), state.presets.clusters, state.clusterPreset, 'Custom cluster');
  const body = clear($('#groups'));
  const groups = state.cluster.groups || [];
  groups.forEach((g, i) => {
    const path = `cluster.groups[${i}]`;
    const devId = `f-group-${i}-device`;
    const sel = h('select', { id: devId, 'aria-label': `group ${i} device`, 'aria-describedby': `${devId}-err` });
    const choices = deviceChoices();
    const current = typeof g.device === 'string' ? g.device : null;
    for (const c of choices) sel.append(h('option', { value: c.id, title: c.title }, c.label));
    if (current && !choices.some((c) => c.id === current)) sel.append(h('option', { value: current }, `${current} (unknown)`));
    if (!current) sel.append(h('option', { value: '' }, 'inline device'));
    sel.value = current ?? '';
    sel.title = choices.find((c) => c.id === current)?.title ?? '';
    sel.dataset.path = `${path}.device`;
    const links = groupLinkSelects(g, i);
    // GPUs sharing one NVLink domain (an NVL72 rack: 72 of 4-GPU trays); empty = one node
    const domain = fieldInput({ key: 'nvlink_domain_gpus', kind: 'int', label: 'NVLink domain, GPUs (NVL72 rack: 72)', hint: 'one node' },
      () => g, `${path}.nvlink_domain_gpus`, onInputChanged);
    domain.querySelector('label').prepend(h('span', { class: 'sr-only' }, `group ${i}: `));
    links.row.append(domain);
    sel.addEventListener('change', () => {
      g.device = sel.value;
      sel.title = choices.find((c) => c.id === sel.value)?.title ?? '';
      links.update();
      onInputChanged();
    });
    const cell = (field) => {
      const wrap = fieldInput(field, () => g, `${path}.${field.key}`, onInputChanged);
      wrap.querySelector('label').classList.add('sr-only');
      wrap.querySelector('label').textContent = `group ${i} ${field.label}`;
      if (field.key === 'inter_node_bw_GBps') {
        // the NIC field is GB/s (bytes); NICs are sold in Gb/s (bits): show both
        const input = wrap.querySelector('input');
        const conv = h('span', { class: 'unit-conv', 'aria-live': 'off' });
        const update = () => { const v = Number(input.value); conv.textContent = input.value.trim() && Number.isFinite(v) ? `= ${fmt(v * 8, 1)} Gb/s` : ''; };
        input.addEventListener('input', update);
        update();
        input.after(conv);
      }
      return h('td', {}, wrap);
    };
    const remove = h('button', { type: 'button', 'aria-label': `remove group ${i}`, disabled: groups.length <= 1 }, '×');
    remove.addEventListener('click', () => { groups.splice(i, 1); renderClusterForm(); onInputChanged(); });
    body.append(h('tr', {},
      h('td', {}, sel, h('span', { class: 'field-error', id: `${devId}-err`, 'data-error-for': `${path}.device` })),
      cell({ key: 'nodes', kind: 'int', label: 'nodes' }),
      cell({ key: 'gpus_per_node', kind: 'int', label: 'GPUs per node' }),
      cell({ key: 'inter_node_bw_GBps', kind: 'num', label: 'NIC per node, GB/s (gigabytes per second; 1 GB/s = 8 Gb/s)' }),
      h('td', {}, remove)));
    body.append(h('tr', { class: 'group-links' }, h('td', { colspan: 5 }, links.row)));
  });
  renderFields($('#cluster-fields'), CLUSTER_FIELDS, () => state.cluster, 'cluster', onInputChanged);
  renderCustomDevices();
  markModified();
}

export const linkLabel = (list, v) => list.find(([k]) => k === v)?.[1] ?? v;

/** the link type a group's device brings (preset, custom or inline device), or null */
export function groupDeviceLink(g) {
  const d = typeof g.device === 'string' ? (state.devices[g.device] ?? byId(state.presets.devices, g.device)) : g.device;
  return typeof d?.intra_node_link === 'string' ? d.intra_node_link : null;
}

/**
 * The group's link selects: intra-node link ('' = the device's) and inter-node link (InfiniBand by
 * default). Choosing a default removes the key, so an unchanged preset cluster stays the preset.
 */
export function groupLinkSelects(g, i) {
  const path = `cluster.groups[${i}]`;
  const make = (key, label, options, value) => {
    const id = `f-group-${i}-${key}`;
    const sel = h('select', { id, 'aria-describedby': `${id}-err` }, options.map(([v, t]) => h('option', { value: v }, t)));
    if (!options.some(([v]) => v === value)) sel.append(h('option', { value }, `${value} (unknown)`));
    sel.value = value;
    sel.dataset.path = `${path}.${key}`;
    const wrap = h('div', { class: 'field' }, h('label', { for: id }, h('span', { class: 'sr-only' }, `group ${i}: `), label), sel,
      h('span', { class: 'field-error', id: `${id}-err`, 'data-error-for': `${path}.${key}` }));
    return { sel, wrap };
  };
  const devLink = () => groupDeviceLink(g);
  const intraDefault = () => `the device's: ${devLink() ? linkLabel(INTRA_LINKS, devLink()) : 'unknown'}`;
  const intra = make('intra_node_link', 'link within a node', [['', intraDefault()], ...INTRA_LINKS], g.intra_node_link ?? '');
  const inter = make('inter_node_link', 'link between nodes', INTER_LINKS, g.inter_node_link ?? DEFAULT_INTER_LINK);
  intra.sel.addEventListener('change', () => {
    if (intra.sel.value === '') delete g.intra_node_link;
    else g.intra_node_link = intra.sel.value;
    onInputChanged();
  });
  inter.sel.addEventListener('change', () => {
    const inPreset = presetCluster()?.groups?.[i]?.inter_node_link !== undefined;
    if (inter.sel.value === DEFAULT_INTER_LINK && !inPreset) delete g.inter_node_link;
    else g.inter_node_link = inter.sel.value;
    onInputChanged();
  });
  return {
    row: h('div', { class: 'fields links' }, intra.wrap, inter.wrap),
    update: () => { intra.sel.options[0].textContent = intraDefault(); },
  };
}

export function renderCustomDevices() {
  const box = clear($('#custom-devices'));
  for (const [id, dev] of Object.entries(state.devices)) {
    const extra = Object.keys(dev).filter((k) => !DEVICE_ORDER.includes(k) && !DEVICE_SKIP.has(k) && (dev[k] === null || typeof dev[k] !== 'object'));
    const fields = [...DEVICE_ORDER, ...extra].map((k) => (
      k === 'name' ? { key: k, kind: 'text', label: 'name' }
        : DEVICE_SELECTS[k] ? { key: k, kind: 'select', label: deviceLabel(k), options: DEVICE_SELECTS[k], def: DEVICE_SELECTS[k][0][0] }
          : typeof dev[k] === 'boolean' || k in DEVICE_BOOLS ? { key: k, kind: 'bool', label: deviceLabel(k), def: DEVICE_BOOLS[k] }
            : { key: k, kind: 'num', label: deviceLabel(k), hint: k in dev ? '' : 'default' }));
    const grid = h('div', { class: 'fields' });
    // the cluster table's device selects name custom devices: a renamed one shows its new name there
    let shownName = dev.name;
    renderFields(grid, fields, () => state.devices[id], `devices.${id}`, () => {
      if (state.devices[id]?.name !== shownName) { shownName = state.devices[id]?.name; renderClusterForm(); }
      onInputChanged();
    });
    const remove = h('button', { type: 'button' }, `Remove ${id}`);
    remove.addEventListener('click', () => {
      delete state.devices[id];
      for (const g of state.cluster.groups) if (g.device === id) g.device = state.presets.devices[0]?.id ?? '';
      renderClusterForm();
      onInputChanged();
    });
    box.append(h('div', { class: 'custom-device' }, h('strong', {}, id), grid, remove));
  }
  const base = $('#device-base');
  const chosen = base.value; // kept: adding a device does not reset "Start from"
  clear(base);
  for (const d of state.presets.devices) base.append(h('option', { value: d.id }, d.name ?? d.id));
  if (chosen && state.presets.devices.some((d) => d.id === chosen)) base.value = chosen;
}

// ---------------------------------------------------------------- software stack, TF32

export const stackPreset = (id) => byId(state.presets.stacks || [], id);

/** one line from a stack's physical settings (presets/stacks/*.json, docs/model.md) */
export function stackSummary(st) {
  const parts = [];
  if (typeof st.fused_elementwise === 'boolean') parts.push(st.fused_elementwise ? 'fused element-wise kernels' : 'unfused element-wise kernels (memory-bound)');
  if (typeof st.p2p_blocking === 'boolean') parts.push(st.p2p_blocking ? 'blocking pipeline sends' : 'asynchronous pipeline sends');
  if (typeof st.grad_fp32 === 'boolean') parts.push(st.grad_fp32 ? 'fp32 gradients' : 'half-precision gradients');
  if (Number.isFinite(st.pass_overhead_us)) parts.push(`${fmt(st.pass_overhead_us, 0)} µs host time per micro-batch pass`);
  if (Number.isFinite(st.allocator_reserve_fraction)) parts.push(`allocator reserve ${fmtPct(st.allocator_reserve_fraction)}`);
  return parts.join(' · ');
}

export function renderStackDescription(value) {
  const box = clear($('#stack-desc'));
  const st = typeof value === 'string' ? stackPreset(value) : null;
  if (value && typeof value === 'object') {
    const base = typeof value.base === 'string' ? stackPreset(value.base) : null;
    box.append(h('p', { class: 'muted' }, base
      ? `Based on “${base.name ?? base.id}”, with ${Object.keys(value).filter((k) => k !== 'base' && k !== 'calibration').join(', ') || 'no changes'} changed.`
      : `A stack written out in full${typeof value.name === 'string' ? `: “${value.name}”` : ''}.`));
    return;
  }
  if (!st) {
    box.append(h('p', { class: 'muted' }, `This version of the planner has no stack preset “${String(value)}”.`));
    return;
  }
  box.append(h('p', { class: 'muted stack-summary' }, stackSummary(st)));
  if (st.notes || st.source) {
    box.append(h('details', { class: 'stack-notes' }, h('summary', {}, 'What this stack assumes'),
      st.notes ? h('p', {}, String(st.notes)) : null,
      st.source ? h('p', { class: 'muted' }, `Sources: ${String(st.source)}`) : null));
  }
}

/** "Software stack": the core's stack presets; an object stack (from a link) shows as "custom" */
export function renderStackField() {
  const box = clear($('#stack-field'));
  const stacks = state.presets.stacks || [];
  if (!stacks.length) return; // an engine without stacks: the field would only produce errors
  const cur = state.training.stack;
  const id = 'f-training-stack';
  const sel = h('select', { id, 'aria-describedby': `${id}-err` },
    stacks.map((st) => h('option', { value: st.id }, `${st.name ?? st.id}${st.id === DEFAULT_STACK ? ' (default)' : ''}`)));
  let value = cur ?? DEFAULT_STACK;
  if (cur && typeof cur === 'object') {
    value = '';
    sel.append(h('option', { value: '' }, typeof cur.base === 'string' ? `custom, based on ${cur.base}` : 'custom stack (from the link)'));
  } else if (!stackPreset(value)) {
    sel.append(h('option', { value }, `${value} (unknown)`));
  }
  sel.value = value;
  sel.dataset.path = 'training.stack';
  sel.addEventListener('change', () => {
    if (sel.value === '') return; // the custom stack stays as it is until a preset is chosen
    state.training.stack = sel.value;
    renderStackDescription(sel.value);
    onInputChanged();
  });
  box.append(h('div', { class: 'field' }, h('label', { for: id }, 'Software stack (training framework)'), sel,
    h('span', { class: 'field-error', id: `${id}-err`, 'data-error-for': 'training.stack' })),
  h('div', { id: 'stack-desc', 'aria-live': 'polite' }));
  renderStackDescription(cur ?? DEFAULT_STACK);
}

/** TF32 only changes fp32 matmuls: say so next to the checkbox */
export function renderTf32Note() {
  const note = $('#tf32-note');
  if (!note) return;
  const fp32 = state.training.precision === 'fp32';
  note.textContent = fp32
    ? (state.training.tf32
      ? 'TF32 on: fp32 matmuls run at the device\'s TF32 tensor-core rate where it has one (A100 and later); V100, T4 and other cards without TF32 stay at their fp32 rate.'
      : 'TF32 off (PyTorch\'s default for matmuls): fp32 matmuls run at the device\'s fp32 rate, often 1/8 to 1/16 of its tensor-core peak.')
    : `TF32 only matters with precision fp32; with ${state.training.precision ?? 'bf16'} the matmuls already run on tensor cores${state.training.tf32 ? ', so this checkbox changes nothing' : ''}.`;
}

/** the training settings the Search box leaves to the search: say that each plan carries its own */
export function renderSearchedNote() {
  const note = $('#searched-note');
  if (!note) return;
  const o = state.options || {};
  const searched = [o.precisions !== undefined && o.precisions !== 'fixed' ? 'precision' : null, o.fsdp === 'any' ? 'FSDP' : null,
    o.recompute !== undefined && o.recompute !== 'fixed' ? 'recompute' : null].filter(Boolean);
  note.hidden = searched.length === 0;
  note.textContent = searched.length
    ? `${searched.join(', ')}: left to the search (Search box), so each plan carries its own choice; the value here applies to the baselines and to plans loaded without one.`
    : '';
}

export function renderSimpleForms() {
  renderFields($('#training-fields'), TRAINING_FIELDS, () => state.training, 'training', onInputChanged);
  renderStackField();
  renderTf32Note();
  renderFields($('#search-fields'), SEARCH_FIELDS, () => state.options, 'options', onInputChanged);
  renderSearchedNote();
  renderExpertGridFields();
}

/**
 * The expert grid's selects need routed experts: on a dense model they are disabled at "searched".
 * A size fixed before the model became dense (an edit, a link) keeps its select enabled, so that the
 * core's refusal next to it can be fixed there.
 */
export function renderExpertGridFields() {
  const moe = Number(state.model?.num_experts) > 0;
  for (const key of ['ep_sizes', 'etp_sizes']) {
    const select = document.querySelector(`[data-path="options.${key}"]`);
    if (!select) continue;
    const v = state.options?.[key];
    select.disabled = !moe && (v === undefined || v === 'searched');
    select.title = select.disabled ? 'the model is dense (no routed experts): there is no expert grid to fix' : '';
  }
}
subscribe('inputs', renderExpertGridFields);

/** every form drawn anew (the boxes of profile, calibration and cost draw theirs on the store's 'forms') */
export function renderAllForms() {
  inputsReplaced();
}
// (on 'forms' too: inputs replaced wholesale by any module, calibration-ui's applied fit among them)
subscribe('forms', () => { renderModelForm(); renderClusterForm(); renderSimpleForms(); renderSectionStates(); });

export function setModelPreset(id) {
  const p = byId(state.presets.models, id);
  state.modelPreset = p ? id : null;
  if (p) state.model = structuredClone(p);
  renderModelForm();
  onInputChanged();
}

export function setClusterPreset(id) {
  const p = byId(state.presets.clusters, id);
  state.clusterPreset = p ? id : null;
  if (p) state.cluster = structuredClone(p);
  renderClusterForm();
  onInputChanged();
}

/**
 * Applies {"training.recompute": "full", "cluster.groups[0].nodes": 4, ...} (the advice's changes)
 * to the inputs, then re-plans.
 */
export function applyChanges(changes) {
  for (const [path, value] of Object.entries(changes || {})) {
    const g = /^cluster\.groups\[(\d+)\]\.(\w+)$/.exec(path);
    const tr = /^training\.(\w+)$/.exec(path);
    if (g && state.cluster.groups[Number(g[1])]) state.cluster.groups[Number(g[1])][g[2]] = value;
    else if (tr && value === null) delete state.training[tr[1]];  // a key the change leaves out
    else if (tr) state.training[tr[1]] = value;
  }
  renderAllForms();
  onInputChanged();
}
