// A table box that scrolls sideways says so: while columns lie past its right edge, that edge
// fades (style.css, .scroll-x[data-more]). At 1366 px the top plans' far columns (training
// choices, layers) were cut off by the box with nothing to say they were there.
import { $$ } from './dom.js';

/** 'right' while the box can scroll further right, else '' */
export function moreSide(scrollLeft, clientWidth, scrollWidth) {
  return scrollLeft + clientWidth < scrollWidth - 1 ? 'right' : '';
}

function mark(el) {
  const side = moreSide(el.scrollLeft, el.clientWidth, el.scrollWidth);
  if ((el.dataset.more ?? '') !== side) el.dataset.more = side;
}

/** marks every .scroll-x box under root now, as it scrolls, and whenever it or its content resizes or changes */
export function installScrollHints(root = document.body) {
  if (typeof ResizeObserver === 'undefined') return;
  // a box's own size and its table's: a new table in the same box resizes the table, not the box
  const sizes = new ResizeObserver((entries) => {
    for (const e of entries) {
      const box = e.target.classList?.contains('scroll-x') ? e.target : e.target.parentElement;
      if (box?.classList.contains('scroll-x')) mark(box);
    }
  });
  const watch = (box) => {
    sizes.observe(box);
    for (const child of box.children) sizes.observe(child);
    mark(box);
  };
  for (const box of $$('.scroll-x', root)) watch(box);
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.removedNodes) if (n instanceof Element) sizes.unobserve(n);
      if (r.target instanceof Element && r.target.classList.contains('scroll-x')) watch(r.target);
      for (const n of r.addedNodes) {
        if (!(n instanceof Element)) continue;
        if (n.classList.contains('scroll-x')) watch(n);
        for (const box of $$('.scroll-x', n)) watch(box);
      }
    }
  }).observe(root, { childList: true, subtree: true });
  // scroll does not bubble: caught on the way down
  root.addEventListener('scroll', (ev) => {
    if (ev.target instanceof Element && ev.target.classList.contains('scroll-x')) mark(ev.target);
  }, { capture: true, passive: true });
}
