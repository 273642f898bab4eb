// Colours with fixed values so that exported SVG/PNG look the same outside the page.
export const KIND_COLOR = {
  forward: '#4e79a7',
  backward: '#f28e2b',
  send_forward: '#59a14f',
  send_backward: '#8cd17d',
  dp_sync: '#e15759',
  optimizer: '#b07aa1',
};
export const KIND_LABEL = {
  forward: 'forward',
  backward: 'backward',
  send_forward: 'send activations',
  send_backward: 'send gradients',
  dp_sync: 'DP all-reduce',
  optimizer: 'optimizer',
};
export const DEVICE_COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#e15759', '#76b7b2', '#edc948', '#9c755f'];

/** device name → colour, in order of first appearance */
export function deviceColors(stages) {
  const map = new Map();
  for (const st of stages || []) {
    const names = stageDevices(st);
    for (const n of names) if (!map.has(n)) map.set(n, DEVICE_COLORS[map.size % DEVICE_COLORS.length]);
  }
  return map;
}

/** the device types of a stage (a stage with mixed replicas names them joined by '+') */
export function stageDevices(st) {
  if (Array.isArray(st.replicas) && st.replicas.length) return [...new Set(st.replicas.map((r) => r.device))];
  return String(st.device ?? '').split('+');
}
