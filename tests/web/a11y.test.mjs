// Keyboard and colour schemes (issue 12, "Done means"), in headless Chromium at 1440 x 900 and
// 390 x 844 (there on each pane of the phone's Inputs | Results tabs): Tab alone reaches every
// control of the page (collapsed sections opened with Enter on their summary, the other tab with
// an arrow key, as a keyboard user would) and each focused control shows a visible focus
// indicator; in the light and the dark colour scheme the page's text and the timeline's text read
// with a contrast of at least 4.5:1 (3:1 for large text), the schemes differ, and the page never
// scrolls sideways; axe-core finds nothing serious or critical.   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/a11y.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { useBrowser, assertClean, DESKTOP, PHONE } from './harness.mjs';

// axe-core (a devDependency) runs inside the page; its source is evaluated there by the test
// driver, which the page's CSP does not govern
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const env = useBrowser({ viewport: DESKTOP });

/** helpers installed in the page: colour parsing, compositing, contrast, visibility */
function installHelpers() {
  if (window.__a11y) return;
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (fg, bg) => ({ r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a), b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1 });
  const lum = (c) => {
    const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const canvas = () => (matchMedia('(prefers-color-scheme: dark)').matches ? { r: 18, g: 18, b: 18, a: 1 } : { r: 255, g: 255, b: 255, a: 1 });
  /** the opaque colour behind an element: its and its ancestors' backgrounds composited */
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = canvas();
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  /** the product of the opacities of the element and its ancestors (a dimmed part of the page) */
  const opacity = (el) => { let o = 1; for (let n = el; n && n.nodeType === 1; n = n.parentElement) o *= Number(getComputedStyle(n).opacity); return o; };
  const hiddenText = (el) => Boolean(el.closest('.sr-only')) || el.getBoundingClientRect().width <= 1;
  const name = (el) => el.id ? `#${el.id}` : el.dataset?.testid ? `[data-testid=${el.dataset.testid}]`
    : `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}:"${(el.textContent || el.value || '').trim().slice(0, 30)}"`;
  const ids = new WeakMap();
  let next = 0;
  const idOf = (el) => { if (!ids.has(el)) ids.set(el, next++); return ids.get(el); };
  const CONTROLS = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]';
  /** every control a keyboard user should reach now: focusable, rendered, enabled */
  const controls = () => [...document.querySelectorAll(CONTROLS)].filter((el) => el.tabIndex >= 0 && !el.disabled && !el.closest('[inert]')
    && el.checkVisibility({ visibilityProperty: true }) && !el.closest('fieldset:disabled'));
  window.__a11y = { parse, over, ratio, background, opacity, hiddenText, name, idOf, controls, seen: new Set() };
}

/** what the focused element shows: an outline or a box shadow with contrast against what is behind it, on screen */
function inspectFocus() {
  const A = window.__a11y;
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  const id = A.idOf(el);
  const again = A.seen.has(id);
  A.seen.add(id);
  const cs = getComputedStyle(el);
  const outline = cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0;
  const shadow = Boolean(cs.boxShadow) && cs.boxShadow !== 'none';
  const behind = A.background(el.parentElement ?? el);
  const ring = A.parse(outline ? cs.outlineColor : (/rgba?\([^)]+\)/.exec(cs.boxShadow) || [''])[0]);
  const contrast = ring ? A.ratio(A.over(ring, behind), behind) : 0;
  const r = el.getBoundingClientRect();
  let onScreen = r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
  // an ancestor that clips (overflow) must leave some of it visible
  for (let n = el.parentElement; n && onScreen; n = n.parentElement) {
    const o = getComputedStyle(n);
    if (o.overflowX === 'visible' && o.overflowY === 'visible') continue;
    const c = n.getBoundingClientRect();
    if (r.right <= c.left || r.left >= c.right || r.bottom <= c.top || r.top >= c.bottom) onScreen = false;
  }
  const details = el.tagName === 'SUMMARY' ? el.parentElement : null;
  return { again, id, name: A.name(el), indicator: outline || shadow, contrast, onScreen, closedSummary: Boolean(details && !details.open) };
}

/**
 * Tab through the whole page once (opening closed sections with Enter); returns the stops and the
 * controls never reached. On a phone's tabs (one pane at a time) each pane in turn: after the
 * first, the arrow key on the selected tab shows the next pane (the ARIA tab pattern: one tab stop
 * for the tab list, arrows between its tabs) and Tab goes on through it.
 */
async function tabThrough(page) {
  await page.evaluate(installHelpers);
  await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
  const stops = [];
  const missed = [];
  const panes = Math.max(1, await page.$$eval('[role=tab]', (tabs) => tabs.filter((el) => el.checkVisibility()).length));
  for (let pane = 0; pane < panes; pane++) {
    if (pane > 0) {
      await page.evaluate(() => document.querySelector('[role=tab][aria-selected=true]').focus());
      await page.keyboard.press('ArrowRight');
      const f = await page.evaluate(inspectFocus);
      assert.ok(f && !f.again, 'the arrow key moves to the next tab');
      stops.push(f);
    }
    for (let i = 0; i < 2000; i++) {
      await page.keyboard.press('Tab');
      const f = await page.evaluate(inspectFocus);
      if (!f) continue;
      if (f.again) break;
      stops.push(f);
      if (f.closedSummary) await page.keyboard.press('Enter');
    }
    missed.push(...await page.evaluate(() => window.__a11y.controls().filter((el) => !window.__a11y.seen.has(window.__a11y.idOf(el))).map((el) => window.__a11y.name(el))));
  }
  return { stops, missed };
}

/** the result on screen belongs to the inputs: no search running, not stale */
const settled = (page) => page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale')
  && document.querySelector('#cancel').disabled && /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 30000 });

for (const [label, viewport, planned] of [['1440 x 900', DESKTOP, false], ['390 x 844', PHONE, false], ['1440 x 900 after the live search', DESKTOP, true]]) {
  test(`keyboard only at ${label}: Tab reaches every control, each with a visible focus indicator`, async (t) => {
    if (planned && !env.searchWorks) { t.skip(env.searchSkipReason); return; }
    // a shared plan (deterministic), and the default page after its search (top plans to choose from)
    const { page, problems } = await env.open(t, planned ? `${env.site.url}index.html` : await env.demoLink(), { viewport });
    if (planned) await settled(page);
    else await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
    await page.waitForSelector('#timeline svg');
    const { stops, missed } = await tabThrough(page);
    t.diagnostic(`${stops.length} tab stops at ${label}`);
    assert.ok(stops.length > 60, `${stops.length} stops`);
    assert.deepStrictEqual(missed, [], 'every control is reached with Tab');
    const names = stops.map((s) => s.name);
    for (const id of ['#run', '#theme', '#model-preset', '#f-budget-tokens', '#copy-link', '#export-megatron', '#open-perfetto', '#timeline', '#zoom-in', '#sort-plans']) {
      assert.ok(names.some((n) => n === id || n.startsWith(`${id}`)), `${id} reached`);
    }
    assert.deepStrictEqual(stops.filter((s) => !s.indicator).map((s) => s.name), [], 'every focused control shows an outline or a ring');
    assert.deepStrictEqual(stops.filter((s) => s.contrast < 3).map((s) => `${s.name} (${s.contrast.toFixed(2)}:1)`), [], 'the focus ring contrasts 3:1 with what is behind it');
    assert.deepStrictEqual(stops.filter((s) => !s.onScreen).map((s) => s.name), [], 'the focused control is scrolled into view, not clipped away');
    await assertClean(page, problems);
  });
}

/** the pane shown on a phone's tabs ('inputs' or 'results'); nothing where the page has no tabs */
async function showPane(page, pane) {
  if (await page.isVisible(`#tab-${pane}`)) await page.click(`#tab-${pane}`);
}

/** fn() once, or on a phone's tabs once on each pane (the results' last); what each returned */
async function onEachPane(page, fn) {
  const tabs = await page.$$eval('[role=tab]', (els) => els.filter((el) => el.checkVisibility()).map((el) => el.getAttribute('aria-controls')));
  if (!tabs.length) return [await fn()];
  const out = [];
  for (const pane of [...tabs.filter((p) => p !== 'results'), 'results']) { await showPane(page, pane); out.push(await fn()); }
  return out;
}

/** schemeReport on every pane, in one report */
async function schemeReports(page) {
  const rs = await onEachPane(page, () => page.evaluate(schemeReport));
  return { ...rs.at(-1), fails: rs.flatMap((r) => r.fails), checked: rs.reduce((a, r) => a + r.checked, 0) };
}

/** computed colours of the page and the timeline, and every text whose contrast is under its threshold */
function schemeReport() {
  const A = window.__a11y;
  const fails = [];
  const all = [];
  let checked = 0;
  const check = (el, fg, size, weight) => {
    const bg = A.background(el);
    const c = A.parse(fg);
    if (!c) return;
    // text in a dimmed part (stale results) is blended with what is behind it: it must still read
    c.a *= A.opacity(el);
    const r = A.ratio(A.over(c, bg), bg);
    const large = size >= 24 || (size >= 18.66 && weight >= 700);
    checked++;
    all.push([r, A.name(el)]);
    if (r < (large ? 3 : 4.5)) fails.push(`${A.name(el)} ${r.toFixed(2)}:1`);
  };
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || el.disabled || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue; // disabled controls are exempt (WCAG 1.4.3)
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const field = /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName) && el.type !== 'checkbox' && el.type !== 'radio' && el.type !== 'file';
    if ((!own && !field) || A.hiddenText(el)) continue;
    const cs = getComputedStyle(el);
    check(el, cs.color, parseFloat(cs.fontSize), Number(cs.fontWeight));
  }
  // the timeline's own text (stage and lane names, axis, legend) on the page's background
  const svg = document.querySelector('#timeline svg');
  const tl = [...svg.querySelectorAll('text.tl-text')];
  for (const el of tl) {
    const cs = getComputedStyle(el);
    const bg = A.background(svg.parentElement);
    const r = A.ratio(A.over(A.parse(cs.fill), bg), bg);
    checked++;
    if (r < 4.5) fails.push(`timeline text "${el.textContent}" ${r.toFixed(2)}:1`);
  }
  const body = getComputedStyle(document.body);
  const lane = svg.querySelector('rect.tl-lane');
  return {
    fails, checked, lowest: all.sort((a, b) => a[0] - b[0]).slice(0, 3).map(([r, n]) => `${n} ${r.toFixed(1)}:1`).join('; '),
    body: { color: body.color, background: body.backgroundColor, ratio: A.ratio(A.parse(body.color), A.background(document.body)) },
    timeline: { text: getComputedStyle(tl[0]).fill, lane: getComputedStyle(lane).fill, laneVsPage: A.ratio(A.parse(getComputedStyle(lane).fill), A.background(svg.parentElement)) },
    scroll: { width: document.documentElement.scrollWidth, client: document.documentElement.clientWidth },
  };
}

test('light and dark colour schemes: readable text and timeline, different colours, no sideways scroll, at both sizes', async (t) => {
  const url = await env.demoLink();
  const schemes = ['light', 'dark'];
  for (const viewport of [DESKTOP, PHONE]) {
    // one page per size; the colour scheme is CSS only, so each check switches the same page
    const { page, problems } = await env.open(t, url, { viewport });
    await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
    await page.waitForSelector('#timeline svg rect.tl-ev');
    // every section open, so that all inputs are measured too
    await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
    await page.evaluate(installHelpers);
    const seen = {};
    for (const colorScheme of schemes) {
      await page.emulateMedia({ colorScheme });
      const r = await schemeReports(page);
      const where = `${viewport.width} px, ${colorScheme}`;
      t.diagnostic(`${where}: ${r.checked} texts checked; body ${r.body.color} on ${r.body.background} (${r.body.ratio.toFixed(1)}:1); timeline text ${r.timeline.text}, lanes ${r.timeline.lane}; lowest: ${r.lowest}`);
      assert.ok(r.checked > 100, `${where}: ${r.checked} texts`);
      assert.ok(r.body.ratio >= 4.5, `${where}: body text ${r.body.ratio}`);
      assert.deepStrictEqual(r.fails, [], `${where}: every text at least 4.5:1 (3:1 large)`);
      assert.ok(r.timeline.laneVsPage > 1.05, `${where}: the timeline's lanes stand out from the page`);
      assert.ok(r.scroll.width <= r.scroll.client, `${where}: no horizontal scroll (${r.scroll.width} in ${r.scroll.client})`);
      seen[colorScheme] = r;
    }
    assert.notEqual(seen.light.body.color, seen.dark.body.color, 'text colour follows the scheme');
    assert.notEqual(seen.light.body.background, seen.dark.body.background, 'background follows the scheme');
    assert.notEqual(seen.light.timeline.text, seen.dark.timeline.text, "the timeline's text follows the scheme");
    assert.notEqual(seen.light.timeline.lane, seen.dark.timeline.lane, "the timeline's lanes follow the scheme");
    // the states with coloured text: a message next to a field and in the summary, the
    // Megatron-LM command with its notes
    await showPane(page, 'inputs');
    await page.fill('[data-path="training.global_batch_size"]', '0');
    await page.waitForSelector('[data-testid=error]:not([hidden])');
    await showPane(page, 'results');
    await Promise.all([page.waitForEvent('download'), page.click('#export-megatron')]);
    await page.waitForSelector('#megatron-notes li');
    for (const colorScheme of schemes) {
      await page.emulateMedia({ colorScheme });
      const r2 = await schemeReports(page);
      const where = `${viewport.width} px, ${colorScheme}`;
      t.diagnostic(`${where}, with an error and the Megatron notes: ${r2.checked} texts; lowest: ${r2.lowest}`);
      assert.deepStrictEqual(r2.fails, [], `${where}: messages and notes at least 4.5:1`);
    }
    await assertClean(page, problems);
  }
});

/** axe-core's violations of impact serious or critical on the page as it is now: ["rule: target (help)"] */
async function axeSerious(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(AXE);
  const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')} (${v.help})`)));
  return found;
}

for (const [label, viewport] of [['1440 px', DESKTOP], ['390 px', PHONE]]) {
  test(`axe-core at ${label}: no serious or critical finding on a shared plan, its embed and the searched default page`, async (t) => {
    const pages = [['shared plan', await env.demoLink()], ['embed', (await env.demoLink()).replace('index.html#', 'index.html?embed=1#')]];
    if (env.searchWorks) pages.push(['default page after its search', `${env.site.url}index.html`]);
    for (const [what, url] of pages) {
      const { page, problems } = await env.open(t, url, { viewport });
      if (what === 'default page after its search') await settled(page);
      else await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
      await page.waitForSelector('#timeline svg rect.tl-ev');
      // every section open (inputs, the timeline's table, the what-if's), the Megatron notes shown
      await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
      if (what !== 'embed') {
        await Promise.all([page.waitForEvent('download'), page.click('#export-megatron')]);
        await page.waitForSelector('#megatron-notes li, #megatron:not([hidden])');
      }
      // on a phone's tabs, each pane (the other is hidden from axe-core as from everyone)
      const found = (await onEachPane(page, () => axeSerious(page))).flat();
      t.diagnostic(`${label}, ${what}: ${found.length} serious or critical`);
      assert.deepStrictEqual(found, [], `${label}, ${what}`);
      await assertClean(page, problems);
    }
  });
}
