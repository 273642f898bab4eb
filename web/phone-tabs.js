// The phone's two panes (issue 36 item 5): below 700 px the page shows the inputs or the results,
// one at a time, under a sticky tab bar "Inputs | Results" (an ARIA tablist: arrow keys, Home and
// End move between the tabs and show their pane). Which pane is shown is the store's
// (state.phoneTab, setPhoneTab): the sticky phone bar (phone-bar.js) shows the newest result while
// the inputs are on screen, and its "See results" shows the results. Wider screens, and the embed,
// keep the two columns (or the stacked layout) and no tabs. Each pane keeps its scroll position.
import { $, $$ } from './dom.js';
import { isEmbed } from './state.js';
import { setPhoneTab, state, subscribe } from './store.js';

const narrow = matchMedia('(max-width: 700px)');
const PANES = ['inputs', 'results'];
const scrolls = { inputs: null, results: null }; // each pane's page scroll when it was left
let shownTab = null; // the pane on screen, as last drawn (null: the two columns)

/** true while the page shows one pane at a time (a narrow screen, not the embed) */
export const tabbed = () => !isEmbed && narrow.matches;

/** the top of the panes in the page: the tab bar's place before it sticks */
const panesTop = () => $('main').getBoundingClientRect().top + scrollY;

export function renderPhoneTabs() {
  const bar = $('#phone-tabs');
  if (!bar) return;
  const on = tabbed();
  document.documentElement.classList.toggle('tabbed', on);
  bar.hidden = !on;
  const tab = on ? state.phoneTab : null;
  const before = shownTab;
  if (before && tab && before !== tab) scrolls[before] = scrollY;
  for (const pane of PANES) {
    const section = $(`#${pane}`);
    const button = $(`#tab-${pane}`);
    const selected = pane === state.phoneTab;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    // a tab panel only while the tabs are on screen; in two columns a section named by its heading
    if (on) {
      section.setAttribute('role', 'tabpanel');
      section.setAttribute('aria-labelledby', `tab-${pane}`);
    } else {
      section.removeAttribute('role');
      section.setAttribute('aria-labelledby', `${pane}-h`);
    }
    section.hidden = on && !selected;
  }
  shownTab = tab;
  if (before && tab && before !== tab) {
    // back where this pane was left; a pane not seen yet starts at its top
    const top = panesTop();
    window.scrollTo(0, scrolls[tab] ?? Math.min(scrollY, top));
  }
}

/** shows the pane that holds el (a link's target, a field with an error) when the page shows one at a time */
export function revealPane(el) {
  if (!tabbed() || !el) return;
  const pane = PANES.find((p) => $(`#${p}`).contains(el));
  if (pane && pane !== state.phoneTab) setPhoneTab(pane);
}

export function wirePhoneTabs() {
  const tabs = $$('#phone-tabs [role=tab]');
  for (const button of tabs) {
    button.addEventListener('click', () => setPhoneTab(button.getAttribute('aria-controls')));
    // arrows move to the other tab and show its pane (automatic activation), Home and End to the ends
    button.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(button);
      const to = { ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      const next = tabs[(to + tabs.length) % tabs.length];
      setPhoneTab(next.getAttribute('aria-controls'));
      next.focus();
    });
  }
  // the screen turned or the window changed width: tabs on or off (the phone bar follows the store)
  narrow.addEventListener?.('change', () => setPhoneTab(state.phoneTab));
  renderPhoneTabs();
}

subscribe('phone-tab', renderPhoneTabs);
