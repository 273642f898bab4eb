// A table box that scrolls sideways says so: while columns lie past its right edge, that edge
// fades (style.css, .scroll-x[data-more]). At 1366 px the top plans' far columns (training
// choices, layers) were cut off by the box with nothing to say they were there. The stage
// diagram's row of boxes (ol.stages) scrolls sideways too and fades the same way.
import { $$ } from './dom.js';

/** the sideways scrollers marked: table boxes and the stage diagram's row (17 stages ran past 1366 px unsaid) */
const SCROLLERS = '.scroll-x, ol.stages';
const isScroller = (el) => el instanceof Element && el.matches(SCROLLERS);

/** 'right' while the box can scroll further right, else '' */
export function moreSide(scrollLeft, clientWidth, scrollWidth) {
  return scrollLeft + clientWidth < scrollWidth - 1 ? 'right' : '';
}

function mark(el) {
  const side = moreSide(el.scrollLeft, el.clientWidth, el.scrollWidth);
  if ((el.dataset.more ?? '') !== side) el.dataset.more = side;
}

/** marks every .scroll-x box (and stage row) under root now, as it scrolls, and whenever it or its content resizes or changes */
export function installScrollHints(root = document.body) {
  if (typeof ResizeObserver === 'undefined') return;
  // a box's own size and its table's: a new table in the same box resizes the table, not the box
  const sizes = new ResizeObserver((entries) => {
    for (const e of entries) {
      const box = isScroller(e.target) ? e.target : e.target.parentElement;
      if (isScroller(box)) mark(box);
    }
  });
  const watch = (box) => {
    sizes.observe(box);
    for (const child of box.children) sizes.observe(child);
    mark(box);
  };
  for (const box of $$(SCROLLERS, root)) watch(box);
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.removedNodes) if (n instanceof Element) sizes.unobserve(n);
      if (isScroller(r.target)) watch(r.target);
      for (const n of r.addedNodes) {
        if (!(n instanceof Element)) continue;
        if (isScroller(n)) watch(n);
        for (const box of $$(SCROLLERS, n)) watch(box);
      }
    }
  }).observe(root, { childList: true, subtree: true });
  // scroll does not bubble: caught on the way down
  root.addEventListener('scroll', (ev) => {
    if (isScroller(ev.target)) mark(ev.target);
  }, { capture: true, passive: true });
}
