// The phone's sticky bar (issue 36 item 5): at 900 px and below the inputs follow the results, so
// an edit far down the page changes a result far up it. Once the results' summary has scrolled out
// of view, a bar at the bottom of the screen shows the newest result (tokens/s and iteration, or
// what is happening: outdated, searching), a link back to the plan, and Cancel while a search runs.
import { $, fmtInt, fmtTime } from './dom.js';
import { selectedEstimate, state, subscribe } from './store.js';

const narrow = matchMedia('(max-width: 900px)');
let summaryOut = false;

export function renderPhoneBar() {
  const bar = $('#phone-bar');
  if (!bar) return;
  const est = state.result ? selectedEstimate() : state.searchBest?.est ?? null;
  const text = $('#phone-bar-text');
  const what = est ? `${fmtInt(est.tokens_per_s)} tokens/s · iteration ${fmtTime(est.iteration_time_s)}${state.result ? '' : ' (best so far)'}` : 'No plan yet';
  const mark = state.stale && state.result ? ` · Outdated: ${state.staleNext ?? 're-planning…'}` : state.running ? ' · searching…' : '';
  text.textContent = `${what}${mark}`;
  $('#phone-bar-cancel').hidden = !state.running;
  bar.classList.toggle('stale', Boolean(state.stale && state.result));
  bar.hidden = !(narrow.matches && summaryOut);
}

export function wirePhoneBar() {
  const summary = $('#summary');
  if (!summary || !('IntersectionObserver' in window)) return;
  // the summary is sticky inside the results: it leaves the screen once the page is in the inputs
  new IntersectionObserver(([e]) => { summaryOut = !e.isIntersecting; renderPhoneBar(); }).observe($('#results'));
  narrow.addEventListener?.('change', renderPhoneBar);
}

for (const topic of ['result', 'selection', 'status', 'stale', 'search-best']) subscribe(topic, renderPhoneBar);
