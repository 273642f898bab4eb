// Helpers shared by the workbench's browser tests (workbench.test.mjs, workbench-fields.test.mjs,
// results.test.mjs, choices.test.mjs): a fresh page, share links, waiting for a settled result, the
// link's payload, page width, long plans.
import { decodeShare } from '../../web/share.js';
import { DESKTOP } from './harness.mjs';

export function workbenchHelpers(env) {
  /** A fresh page that records page errors, CSP violations and every request it makes. */
  const open = (t, url, viewport = DESKTOP, { colorScheme = 'light' } = {}) => env.open(t, url, { viewport, colorScheme });
  const link = (payload, extra = '') => env.link(payload, extra);
  const tokensOf = async (page) => Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
  /** the result on screen belongs to the current inputs: not stale, no search running */
  const settled = (page, timeout = 30000) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale')
    && document.querySelector('#cancel').disabled && !/^Searching/.test(document.querySelector('[data-testid=progress]').textContent)
    && /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent)
    && location.hash.startsWith('#v=') && document.querySelector('#share-url').value === location.href, null, { timeout });
  const hashPayload = async (page) => decodeShare(await page.evaluate(() => location.hash));
  const noHorizontalScroll = (page) => page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  return { open, link, tokensOf, settled, hashPayload, noHorizontalScroll };
}

/** n stages on the 256-GPU DGX A100 slice, one GPU each, the layers as even as they go */
export function longPlan(model, layers, n, m = 64) {
  const per = Math.floor(layers / n);
  const extra = layers - per * n;
  return { payload: { m: model, c: 'dgx-a100-superpod-slice', t: { global_batch_size: m },
    p: { micro_batch_size: 1, num_micro_batches: m, stages: Array.from({ length: n }, (_, i) => ({ group: 0, num_layers: per + (i < extra ? 1 : 0), tp: 1, dp: 1 })) } } };
}
