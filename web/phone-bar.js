// The phone's sticky bar (issue 36 item 5): at 900 px and below the inputs follow the results (or,
// below 700 px, share the screen with them as tabs: phone-tabs.js), so an edit changes a result far
// up the page or on the other tab. Once the results' summary is out of view (scrolled away, or the
// Inputs tab shown), a bar at the bottom of the screen shows the newest result (tokens/s and
// iteration, or what is happening: outdated, searching), a link to the plan ("See results" with
// tabs: a tap anywhere on the bar but Cancel follows it), and Cancel while a search runs.
import { $, fmtInt, fmtTime } from './dom.js';
import { selectedEstimate, state, subscribe } from './store.js';
import { tabbed } from './phone-tabs.js';

const narrow = matchMedia('(max-width: 900px)');
let summaryOut = false;

export function renderPhoneBar() {
  const bar = $('#phone-bar');
  if (!bar) return;
  const est = state.result ? selectedEstimate() : state.searchBest?.est ?? null;
  const text = $('#phone-bar-text');
  const what = est ? `${fmtInt(est.tokens_per_s)} tokens/s · iteration ${fmtTime(est.iteration_time_s)}${state.result ? '' : ' (best so far)'}` : 'No plan yet';
  // an outdated result says so first: the numbers after it may be cut off, the mark may not
  const stale = Boolean(state.stale && state.result);
  text.textContent = stale ? `Outdated: ${state.staleNext ?? 're-planning…'} · was ${what}` : `${what}${state.running ? ' · searching…' : ''}`;
  $('#phone-bar-cancel').hidden = !state.running;
  bar.classList.toggle('stale', stale);
  const tabs = tabbed();
  $('#phone-bar .phone-bar-plan').textContent = tabs ? 'See results' : 'Plan ↑';
  // with tabs the summary is on screen exactly while the Results tab is
  bar.hidden = !(narrow.matches && (tabs ? state.phoneTab === 'inputs' : summaryOut));
}

export function wirePhoneBar() {
  const summary = $('#summary');
  if (!summary || !('IntersectionObserver' in window)) return;
  // the summary is sticky inside the results: it leaves the screen once the page is in the inputs
  new IntersectionObserver(([e]) => { summaryOut = !e.isIntersecting; renderPhoneBar(); }).observe($('#results'));
  narrow.addEventListener?.('change', renderPhoneBar);
  // a tap on the result's text is a tap on the link (a small target on a phone); Cancel stays Cancel
  $('#phone-bar').addEventListener('click', (e) => {
    if (!e.target.closest('a, button')) $('#phone-bar .phone-bar-plan').click();
  });
}

for (const topic of ['result', 'selection', 'status', 'stale', 'search-best', 'phone-tab']) subscribe(topic, renderPhoneBar);
