// The what-if scaling chart: tokens/s of the best plan against the GPU count of one group (the
// others fixed), one line per group, the current cluster's point ringed (nested rings where groups
// share it), variants without a feasible plan drawn as crosses on the axis. SVG from
// chartGeometry() (web/whatif.js).
import { s } from '../dom.js';
import { DEVICE_COLORS } from './colors.js';
import { chartGeometry } from '../whatif.js';

const fmtAxis = (v) => (v >= 1e6 ? `${Number((v / 1e6).toPrecision(3))}M` : v >= 1e3 ? `${Number((v / 1e3).toPrecision(3))}k` : String(v));

/** series: scalingSeries() of web/whatif.js */
export function scalingChart(series, { width = 560, height = 260 } = {}) {
  const g = chartGeometry(series, { width, height });
  const { margin } = g;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'scaling-svg', role: 'img', 'data-testid': 'whatif-svg',
    'aria-label': `Tokens per second of the best plan against the GPUs of each group: ${series.map((x) => x.label).join('; ')}` });
  const x0 = margin.left;
  const x1 = width - margin.right;
  const y0 = height - margin.bottom;
  const y1 = margin.top;
  for (const t of g.yTicks) {
    svg.append(s('line', { x1: x0, x2: x1, y1: g.y(t), y2: g.y(t), class: 'chart-grid' }));
    // the origin's 0 is the x axis's: a second one beside it read as "00"
    if (t > 0) svg.append(s('text', { x: x0 - 6, y: g.y(t) + 4, 'text-anchor': 'end', class: 'tl-muted chart-label' }, fmtAxis(t)));
  }
  for (const t of g.xTicks) {
    svg.append(s('line', { x1: g.x(t), x2: g.x(t), y1: y0, y2: y0 + 4, class: 'tl-axis' }),
      s('text', { x: g.x(t), y: y0 + 16, 'text-anchor': 'middle', class: 'tl-muted chart-label' }, fmtAxis(t)));
  }
  svg.append(s('line', { x1: x0, x2: x1, y1: y0, y2: y0, class: 'tl-axis' }), s('line', { x1: x0, x2: x0, y1: y0, y2: y1, class: 'tl-axis' }),
    s('text', { x: (x0 + x1) / 2, y: height - 4, 'text-anchor': 'middle', class: 'tl-text chart-label' }, 'GPUs in the group (the other groups fixed)'),
    s('text', { x: 12, y: (y0 + y1) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(y0 + y1) / 2})`, class: 'tl-text chart-label' }, 'tokens/s'));
  // every group's current point is the current cluster: where lines share it (groups of the same
  // GPU count give the same point), each later group's ring is drawn wider, so no ring hides another
  const ringsAt = new Map();
  const ringRadius = (p) => {
    const key = `${Math.round(p.cx)},${Math.round(p.cy)}`;
    const n = ringsAt.get(key) ?? 0;
    ringsAt.set(key, n + 1);
    return 6 + 3.5 * n;
  };
  g.lines.forEach((line, k) => {
    const color = DEVICE_COLORS[k % DEVICE_COLORS.length];
    const grp = s('g', { 'data-group': line.group });
    if (line.points.length > 1) grp.append(s('path', { d: line.d, fill: 'none', stroke: color, 'stroke-width': 2 }));
    for (const p of line.points) {
      const title = s('title', {}, `${line.label}: ${p.nodes} node${p.nodes === 1 ? '' : 's'}, ${p.x} GPU${p.x === 1 ? '' : 's'} → ${p.status === 'plan' ? `${Math.round(p.y).toLocaleString('en-US')} tokens/s${p.complete ? '' : ' (time limit: best found)'}` : 'no feasible plan'}${p.current ? ' (the current cluster)' : ''}`);
      const attrs = { 'data-gpus': p.x, 'data-tokens': p.status === 'plan' ? p.y : 0, 'data-status': p.status, 'data-current': p.current ? 'true' : null };
      if (p.status === 'plan') {
        grp.append(s('circle', { ...attrs, cx: p.cx, cy: p.cy, r: p.current ? ringRadius(p) : 3.5, fill: p.current ? 'none' : color, stroke: color, 'stroke-width': 2, class: 'chart-point' }, title));
      } else {
        const d = `M${p.cx - 4},${p.cy - 4}L${p.cx + 4},${p.cy + 4}M${p.cx - 4},${p.cy + 4}L${p.cx + 4},${p.cy - 4}`;
        grp.append(s('path', { ...attrs, d, stroke: color, 'stroke-width': 2, class: 'chart-point' }, title));
      }
    }
    svg.append(grp);
  });
  return svg;
}
