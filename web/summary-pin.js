// The results' summary, pinned: once the page scrolls past its place, the sticky summary takes a
// compact form (style.css, .summary.pinned) so that the plan's pictures keep most of the screen
// (at 1366 x 768 the full form covered a third of it): the headline in at most two lines (three
// below 900 px), the cost in one, then the status line. The context line, the problems' details
// and what is cut are shown in the full form, a scroll up away. The summary keeps its full
// height in the page (a bottom margin makes up for what the compact form leaves out), so pinning,
// or a search that ends while pinned, moves nothing below it, and the page never flips between
// the two forms at the edge.
import { $ } from './dom.js';
import { isEmbed } from './state.js';

let pinned = false;

/**
 * The summary's height in the other form, measured on a copy out of the page's flow: a layout of
 * the page with the other form (a read forces one) would move what is below, and the browser's
 * scroll anchoring would then move the page, up to the top near the pinning edge.
 */
function copyHeightPx(summary, asPinned) {
  const copy = summary.cloneNode(true);
  for (const el of [copy, ...copy.querySelectorAll('[id], [data-testid]')]) { el.removeAttribute('id'); el.removeAttribute('data-testid'); }
  copy.classList.toggle('pinned', asPinned);
  copy.classList.add('summary-measure');
  copy.setAttribute('aria-hidden', 'true');
  copy.style.marginBottom = '';
  copy.style.width = `${summary.getBoundingClientRect().width}px`;
  summary.after(copy);
  const px = copy.getBoundingClientRect().height;
  copy.remove();
  return px;
}

/** the form that the scroll calls for, with a margin that keeps the summary's full height in the page */
function fit() {
  const summary = $('#summary');
  const was = summary.classList.contains('pinned');
  if (!pinned) {
    summary.classList.remove('pinned');
    summary.style.marginBottom = '';
    return;
  }
  const ownPx = summary.getBoundingClientRect().height;
  const fullPx = was ? copyHeightPx(summary, false) : ownPx;
  const pinnedPx = was ? ownPx : copyHeightPx(summary, true);
  summary.classList.add('pinned');
  summary.style.marginBottom = `${Math.max(0, fullPx - pinnedPx)}px`;
}

const inStatusLine = (node) => Boolean((node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement)?.closest('.summary-status'));

export function wireSummaryPin() {
  const summary = $('#summary');
  // the embed's summary is not sticky (it scrolls with the page)
  if (isEmbed || !summary || !('IntersectionObserver' in window) || !('MutationObserver' in window)) return;
  // a mark at the summary's place in the page, as far above it as the summary sticks below the
  // top (style.css): it leaves the screen exactly when the summary sticks
  const mark = document.createElement('div');
  mark.className = 'summary-mark';
  mark.setAttribute('aria-hidden', 'true');
  summary.before(mark);
  new IntersectionObserver(([e]) => {
    // a hidden mark (the Inputs tab shown) has no box: its top is 0, the summary is not pinned
    const now = !e.isIntersecting && e.boundingClientRect.top < 0;
    if (now === pinned) return;
    pinned = now;
    fit();
  }).observe(mark);
  // a new plan while pinned: the margin follows the full form's new height (the status line's height is fixed)
  new MutationObserver((records) => { if (pinned && records.some((r) => !inStatusLine(r.target))) fit(); })
    .observe(summary, { subtree: true, childList: true, characterData: true });
  addEventListener('resize', () => { if (pinned) fit(); });
}
