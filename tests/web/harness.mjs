// Shared set-up of the browser tests (browser, workbench, a11y, timeline): the built site served
// with the strict CSP header on 127.0.0.1, headless Debian Chromium through playwright-core (no
// browser download), pages that record page errors, CSP violations and every request.
//   import { useBrowser } from './harness.mjs'; const env = useBrowser(); ... env.open(t, url)
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { encodeShare } from '../../web/share.js';
import { siteDir, loadModule } from './load-module.mjs';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync'];
export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
export const demoScenario = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/examples/demo.scenario.json'), 'utf8'));
export const demoPlan = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/examples/demo.plan.json'), 'utf8'));
// the inputs a plain visit starts with (web/state.js's defaults)
export const pageScenario = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/examples/page.scenario.json'), 'utf8'));
/** the demo scenario's inputs as a share payload without a plan (a page opened on it plans them on load) */
export const demoInputs = { m: demoScenario.model, c: demoScenario.cluster, t: demoScenario.training };
export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };
export const SMALL = { width: 360, height: 740 };

/**
 * Registers before/after hooks that load the wasm module (to compare with the core and to see
 * whether its search works), serve the site and launch Chromium. Returns the environment, filled
 * in once `before` has run: {M, site, browser, searchWorks, searchSkipReason, open, link}; ready(env)
 * is called then (to copy them into a test file's variables).
 */
export function useBrowser({ viewport = { width: 1300, height: 900 }, ready = () => {} } = {}) {
  const env = { M: null, site: null, browser: null, searchWorks: true, searchSkipReason: '' };
  before(async () => {
    env.M = await loadModule();
    const res = JSON.parse(env.M.plan(JSON.stringify(demoScenario), JSON.stringify({ top: 1, time_limit_s: 0.5 })));
    if (res.error) {
      env.searchWorks = false;
      env.searchSkipReason = `the core's search fails on the demo scenario: ${res.error.message}`;
    }
    env.site = await serve(siteDir(), { csp: true });
    env.browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    ready(env);
  });
  after(async () => {
    await env.browser?.close();
    env.site?.server.close();
  });

  /**
   * A fresh page (in a new context unless `context` is given, closed after the test) that records
   * page errors, console errors, CSP violations and requests; resolves once the page is ready.
   */
  env.open = async (t, url, { viewport: vp = viewport, colorScheme = 'light', context = null } = {}) => {
    const ctx = context ?? await env.browser.newContext({ acceptDownloads: true, viewport: vp, colorScheme });
    const page = await ctx.newPage();
    const problems = [];
    const requests = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    page.on('request', (r) => requests.push(r.url()));
    await page.addInitScript(() => {
      window.__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.goto(url);
    await page.waitForFunction(() => window.__poseidonReady === true, null, { timeout: 30000 });
    t.after(async () => { if (!context) await ctx.close(); });
    return { page, problems, requests, ctx };
  };

  /** the page URL of a share payload ({m, c, t, p, ...}); extra goes before the fragment (e.g. '?embed=1') */
  env.link = async (payload, extra = '') => `${env.site.url}index.html${extra}#${await encodeShare(payload)}`;
  /** the demo scenario with the demo plan, as a link */
  env.demoLink = () => env.link({ ...demoInputs, p: demoPlan });
  /** the demo scenario's inputs without a plan, as a link: the page plans them on load (the plain visit's inputs until 2026-12-06) */
  env.demoInputsLink = (extra = '') => env.link(demoInputs, extra);
  return env;
}

/** no CSP violation and no page error (a 404 for an optional file is not one) */
export async function assertClean(page, problems) {
  assert.deepStrictEqual(await page.evaluate(() => window.__csp), [], 'no CSP violations');
  assert.deepStrictEqual(problems.filter((p) => !/Failed to load resource.*404/.test(p)), [], 'no page errors');
}
