// Colours with fixed values so that exported SVG/PNG look the same outside the page.
export const KIND_COLOR = {
  forward: '#4e79a7',
  backward: '#f28e2b',
  send_forward: '#59a14f',
  send_backward: '#8cd17d',
  dp_sync: '#e15759',
  grad_bucket: '#ff9da7',
  param_gather: '#76b7b2',
  embedding_sync: '#9c755f',
  optimizer: '#b07aa1',
  ep_a2a: '#bcbd22',
};
export const KIND_LABEL = {
  forward: 'forward',
  backward: 'backward',
  send_forward: 'send activations',
  send_backward: 'send gradients',
  dp_sync: 'DP all-reduce',
  grad_bucket: 'gradient bucket (overlapped)',
  param_gather: 'parameter all-gather (overlapped)',
  embedding_sync: 'tied-embedding all-reduce (first and last stage)',
  optimizer: 'optimizer',
  ep_a2a: 'all-to-all (expert dispatch / combine)',
};
/** an event kind this page does not know (from a newer engine) still gets a colour */
export const UNKNOWN_COLOR = '#9d9d9d';

/** lane names in the chart (the Chrome trace uses the resource ids themselves) */
export const RESOURCE_LABEL = { compute: 'compute', ep: 'EP all-to-all', p2p: 'p2p sends', dp: 'DP comm', tp: 'TP comm' };
export const resourceLabel = (r) => RESOURCE_LABEL[r] ?? r;

/**
 * Model chunks of an interleaved plan: chunk c is drawn in its kind's colour darkened by
 * CHUNK_SHADE[c % 4] (mixed with black), so consecutive chunks always differ, and bars wide enough
 * carry the label "c0", "c1", ... (the tooltip always names the chunk).
 */
export const CHUNK_SHADE = [0, 0.3, 0.15, 0.45];

function mix(hex, amount) {
  const n = parseInt(hex.slice(1), 16);
  const ch = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => Math.round(v * (1 - amount)));
  return `#${ch.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

/** the colour of a bar: its kind's, shaded by its chunk when it has one */
export function barColor(kind, chunk = null) {
  const base = KIND_COLOR[kind] ?? UNKNOWN_COLOR;
  if (!Number.isInteger(chunk) || chunk <= 0) return base;
  return mix(base, CHUNK_SHADE[chunk % CHUNK_SHADE.length]);
}

/** black or white, whichever reads better on `hex` (WCAG relative luminance) */
export function inkOn(hex) {
  const n = parseInt(hex.slice(1), 16);
  const lin = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
  const L = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  return (L + 0.05) / 0.05 > 1.05 / (L + 0.05) ? '#000000' : '#ffffff';
}

/**
 * Device types (stage diagram, what-if): none near a timeline colour (KIND_COLOR, with its chunk
 * shades; tested at a CIE76 distance of 15 or more), so a device never reads as "forward" or "send".
 */
export const DEVICE_COLORS = ['#00429d', '#e7298a', '#d4a017', '#1b9e77', '#7b3294', '#93003a', '#a6cee3', '#c7e9c0'];

/**
 * device name → colour: the colour of the first cluster group (st.group, a replica's group) that
 * holds the device, so a device keeps its colour from plan to plan (in order of first appearance
 * the plans that start on the other device swapped the colours); a device with no group, or whose
 * group's colour is taken, gets the next free one
 */
export function deviceColors(stages) {
  const first = new Map(); // device name -> its lowest group index (Infinity: none known)
  for (const st of stages || []) {
    const reps = Array.isArray(st.replicas) && st.replicas.length ? st.replicas : null;
    for (const n of stageDevices(st)) {
      const groups = reps ? reps.filter((r) => r.device === n).map((r) => r.group) : [st.group];
      const g = Math.min(...groups.filter(Number.isInteger), Infinity);
      if (!first.has(n) || g < first.get(n)) first.set(n, g);
    }
  }
  const map = new Map();
  const taken = new Set();
  const byGroup = [...first].sort((a, b) => a[1] - b[1]);
  for (const [n, g] of byGroup) {
    let slot = Number.isFinite(g) ? g % DEVICE_COLORS.length : -1;
    if (slot < 0 || taken.has(slot)) slot = [...DEVICE_COLORS.keys()].find((k) => !taken.has(k)) ?? map.size % DEVICE_COLORS.length;
    taken.add(slot);
    map.set(n, DEVICE_COLORS[slot]);
  }
  // the legend in order of first appearance, as before
  return new Map([...first.keys()].map((n) => [n, map.get(n)]));
}

/** the device types of a stage (a stage with mixed replicas names them joined by '+') */
export function stageDevices(st) {
  if (Array.isArray(st.replicas) && st.replicas.length) return [...new Set(st.replicas.map((r) => r.device))];
  return String(st.device ?? '').split('+');
}
