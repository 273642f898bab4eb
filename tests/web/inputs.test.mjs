// The page's inputs beyond the model, cluster and batch, in headless Chromium (as browser.test.mjs):
// measured profiles, custom devices and calibration from the user's own runs (the software stack,
// link types per group and the memory breakdown: inputs-stack.test.mjs).
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/inputs.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { encodeShare } from '../../web/share.js';
import { loadModule } from './load-module.mjs';
import { inputsHelpers } from './inputs-helpers.mjs';
import { useBrowser, assertClean, ROOT, demoScenario, demoPlan } from './harness.mjs';

let site;
let searchWorks = true;
const env = useBrowser({ ready: (e) => { ({ site, searchWorks } = e); } });

const { open, demoLink, waitPlan, copyLink, tokensOf } = inputsHelpers(env);

// ---------------------------------------------------------------- measured profiles

const PROFILE_ID = 'llama3.2-1b-a100-illustrative';
// Llama 3.2 1B on one DGX A100. Stage 0: TP 1, 4 samples per replica (between the preset's measured
// points 2 and 8: interpolated); stage 1: TP 2, DP 2, 2 samples (a measured point).
const profScenario = { model: 'llama3.2-1b', training: { global_batch_size: 16 }, cluster: 'dgx-a100-1' };
const profPlan = { micro_batch_size: 4, num_micro_batches: 4, schedule: '1f1b',
  stages: [{ group: 0, num_layers: 8, tp: 1, dp: 1 }, { group: 0, num_layers: 8, tp: 2, dp: 2 }] };
const profLink = async (extra = {}) => `${site.url}index.html#${await encodeShare({ m: profScenario.model, c: profScenario.cluster, t: profScenario.training, p: profPlan, ...extra })}`;
const sourceCells = (page) => page.$$eval('[data-testid=stage-table] td.source', (tds) => tds.map((td) => td.dataset.source));
const headers = (page) => page.$$eval('[data-testid=stage-table] th[scope=col]', (ths) => ths.map((th) => th.textContent));

test('attaching a profile changes the result and shows where each stage\'s numbers come from', async (t) => {
  const { page, problems } = await open(t, await profLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  const before = await page.textContent('[data-testid=best-tokens]');
  assert.ok(!(await headers(page)).includes('source'), 'no source column without a profile');
  // the matching preset is offered, then attached
  assert.match(await page.textContent('#profile-hint'), /matches this model and cluster/);
  assert.equal(await page.inputValue('#profile-preset'), PROFILE_ID);
  await page.focus('#profile-use-preset');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /^Attached: preset/.test(document.querySelector('#profile-status').textContent));
  assert.match(await page.textContent('#profile-status'), /a100-sxm4-80gb/);
  assert.ok(await page.isEnabled('#profile-remove'));
  // the same plan, estimated again with the profile (a plan file). Not the exported one: attaching
  // the profile is an edit, so a live search starts 350 ms later and may already have replaced the
  // shared plan on screen (the export round trip is browser.test.mjs's)
  await page.setInputFiles('#plan-file', { name: 'plan.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(profPlan)) });
  await waitPlan(page, /Loaded plan/);
  const after = await page.textContent('[data-testid=best-tokens]');
  assert.notEqual(after, before, 'the profile changes the estimate');
  assert.ok((await headers(page)).includes('source'));
  assert.deepStrictEqual(await sourceCells(page), ['interpolated', 'profile']);
  assert.match(await page.textContent('[data-testid=stage-table] tbody tr:nth-child(2) td.source'), /^measured/);
  // the same numbers as the core gives for this scenario with the profile
  const M = await loadModule();
  const expected = JSON.parse(M.estimate(JSON.stringify({ ...profScenario, profile: PROFILE_ID }), JSON.stringify(profPlan)));
  assert.equal(Number(after.replace(/[^\d]/g, '')), Math.round(expected.tokens_per_s));
  if (searchWorks) {
    await page.fill('[data-path="options.time_limit_s"]', '1');
    await page.click('[data-testid=run]');
    await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
    assert.ok((await headers(page)).includes('source'), 'a search with a profile shows the sources too');
  }
  // another model: the preset's id names the model it was measured for, and the status says so
  await page.selectOption('#model-preset', 'opt-350m');
  await page.waitForFunction(() => /measured for another model than “opt-350m”/.test(document.querySelector('#profile-status').textContent));
  await page.selectOption('#model-preset', 'llama3.2-1b');
  await page.waitForFunction(() => !/another model/.test(document.querySelector('#profile-status').textContent));
  // removing it goes back to the analytic model
  await page.click('#profile-remove');
  await page.waitForFunction(() => /^No profile/.test(document.querySelector('#profile-status').textContent));
  await assertClean(page, problems);
});

test('an invalid profile shows the core\'s message next to the profile field', async (t) => {
  const { page, problems } = await open(t, `${site.url}index.html`);
  await page.click('#profile-paste summary');
  // not JSON: the page says so next to the field
  await page.fill('#profile-json', '{"devices": [');
  await page.click('#profile-attach');
  await page.waitForFunction(() => document.querySelector('[data-error-for="profile"]').textContent.length > 0);
  assert.match(await page.textContent('[data-error-for="profile"]'), /not valid JSON/);
  assert.equal(await page.getAttribute('#profile-json', 'aria-invalid'), 'true');
  // valid JSON, invalid profile: the core's message, with the path inside the profile
  const bad = { name: 'bad', devices: [{ device: 'a100-sxm4-80gb', points: [{ tp: 1, samples: 1, layer_forward_s: -1, layer_backward_s: 0.01 }] }] };
  await page.fill('#profile-json', JSON.stringify(bad));
  await page.click('#profile-attach');
  await page.waitForFunction(() => /layer_forward_s/.test(document.querySelector('[data-error-for="profile"]').textContent));
  const M = await loadModule();
  const core = JSON.parse(M.estimate(JSON.stringify({ ...demoScenario, profile: bad }), JSON.stringify(demoPlan))).error;
  // in words, then the core's message with the path inside the profile (issue 36 item 9)
  assert.match(await page.textContent('[data-error-for="profile"] .said'), /^Layer forward \(s\): -1 is too small\. Enter a number above 0/);
  assert.equal(await page.textContent('[data-error-for="profile"] .detail'), `(devices[0].points[0].layer_forward_s: ${core.message})`);
  assert.equal(await page.getAttribute('#profile-json', 'aria-invalid'), 'true');
  assert.match(await page.textContent('[data-testid=error]'), /profile\.devices\[0\]\.points\[0\]\.layer_forward_s/);
  assert.equal(await page.inputValue('#profile-json'), JSON.stringify(bad), 'the text is kept');
  // an unknown device (a file upload this time)
  const unknown = { devices: [{ device: 'no-such-gpu', optimizer_s_per_billion_params: 0.02 }] };
  await page.setInputFiles('#profile-file', { name: 'p.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(unknown)) });
  await page.waitForFunction(() => /no-such-gpu/.test(document.querySelector('[data-error-for="profile"]').textContent));
  assert.match(await page.textContent('#profile-status'), /file p\.json/);
  if (searchWorks) {
    await page.click('[data-testid=run]');
    await page.waitForFunction(() => /fix the inputs/.test(document.querySelector('[data-testid=progress]').textContent));
    assert.match(await page.textContent('[data-error-for="profile"]'), /no-such-gpu/);
    // the status does not read as in use: the core refuses it and nothing is planned
    assert.match(await page.textContent('#profile-status'), /^Attached but refused: file p\.json\. The planner does not accept it/);
    assert.equal(await page.getAttribute('#profile-status', 'class'), 'profile-status refused');
    // text that is not JSON is not attached: the message says the refused profile is still the one attached
    await page.fill('#profile-json', '{"devices"');
    await page.click('#profile-attach');
    await page.waitForFunction(() => /not valid JSON/.test(document.querySelector('[data-error-for="profile"]').textContent));
    assert.match(await page.textContent('[data-error-for="profile"]'), /The profile attached before stays attached\.$/);
    assert.match(await page.textContent('#profile-status'), /^Attached but refused: file p\.json/);
  }
  // removing the profile clears the message
  await page.click('#profile-remove');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]').hidden && !document.querySelector('[data-error-for="profile"]').textContent);
  await assertClean(page, problems);
});

test('a custom device that no group uses is checked too, next to its field; the stale mark says to fix the inputs', async (t) => {
  if (!searchWorks) { t.skip('search not available'); return; }
  const { page, problems } = await open(t, `${site.url}index.html`);
  await waitPlan(page, /[\d,]+ tokens\/s/);
  await page.click('#devices summary');
  await page.selectOption('#device-base', 'h100-sxm5-80gb');
  await page.click('#add-device');
  // the H100 leaves flash_attention at the core's default: the custom device still shows it, ticked
  assert.equal(await page.isChecked('[data-path="devices.custom-1.flash_attention"]'), true);
  const field = '[data-path="devices.custom-1.memory_GiB"]';
  await page.fill(field, '-1');
  await page.waitForFunction(() => /fix the inputs/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.equal(await page.getAttribute(field, 'aria-invalid'), 'true');
  const message = await page.$eval(field, (el) => document.getElementById(el.getAttribute('aria-describedby'))?.textContent ?? '');
  assert.match(message, /^-1 is too small\. Enter a number above 0 .*\(devices\.custom-1\.memory_GiB: -1 is out of range; expected a finite number > 0/);
  assert.match(await page.textContent('[data-testid=error]'), /devices\.custom-1\.memory_GiB/);
  assert.equal(await page.textContent('[data-testid=stale]'), 'Outdated: fix the inputs');
  // the problem's line in the list is a link to its field
  await page.click('#devices summary'); // closed again: the link opens it
  await page.click('[data-testid=error] .error-link');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.path), 'devices.custom-1.memory_GiB');
  // fixed: the search runs again and the result is current
  await page.fill(field, '80');
  await page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale') && /^Done/.test(document.querySelector('[data-testid=progress]').textContent));
  assert.equal(await page.getAttribute(field, 'aria-invalid'), null);
  // a 500-character name (the core takes up to 4096) in use: legends and notes wrap, the page does not widen
  await page.fill('[data-path="devices.custom-1.name"]', 'x'.repeat(500));
  assert.match(await page.textContent('#f-group-0-device option[value="custom-1"]'), /^x{500} \(custom\)$/, 'the group selects show the new name');
  await page.selectOption('#f-group-0-device', 'custom-1');
  await page.waitForFunction(() => !document.querySelector('#results').classList.contains('stale') && /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 60000 });
  const width = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(width[0] <= width[1], `the page is ${width[0]} px wide in ${width[1]}`);
  // a second custom device of the same name: the selects tell them apart by id
  await page.click('#add-device');
  await page.fill('[data-path="devices.custom-2.name"]', 'x'.repeat(500));
  const labels = await page.$$eval('#f-group-0-device option[value^="custom-"]', (os) => os.map((o) => o.textContent.slice(-12)));
  assert.deepStrictEqual(labels, ['x (custom-1)', 'x (custom-2)']);
  await assertClean(page, problems);
});

test('a share link with a profile round-trips (preset and pasted)', async (t) => {
  const inline = JSON.parse(fs.readFileSync(path.join(ROOT, `presets/profiles/${PROFILE_ID}.json`), 'utf8'));
  inline.name = 'pasted copy';
  inline.devices[0].points = inline.devices[0].points.filter((p) => p.tp !== 2); // stage 1 falls back to analytic
  for (const [f, status, sources] of [[PROFILE_ID, /^Attached: preset/, ['interpolated', 'profile']], [{ o: inline }, /^Attached: profile from the link “pasted copy”/, ['interpolated', 'analytic']]]) {
    const link = await profLink({ f });
    assert.match(link, /#v=2&s=/);
    const { page, problems } = await open(t, link);
    await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
    assert.match(await page.textContent('#profile-status'), status);
    assert.deepStrictEqual(await sourceCells(page), sources);
    const best = await page.textContent('[data-testid=best-plan]');
    await page.click('[data-testid=copy-link]');
    await page.waitForFunction(() => document.querySelector('#share-url').value.includes('#v=2&s='));
    const { page: fresh, problems: p2 } = await open(t, await page.inputValue('#share-url'));
    await waitPlan(fresh, /Shared plan: [\d,]+ tokens\/s/);
    assert.equal(await fresh.textContent('[data-testid=best-plan]'), best);
    assert.deepStrictEqual(await sourceCells(fresh), sources);
    assert.match(await fresh.textContent('#profile-status'), status);
    assert.match(await fresh.inputValue('#profile-json'), /"devices"/);
    await assertClean(page, problems);
    await assertClean(fresh, p2);
  }
  // a link naming a profile preset this version lacks is refused; inputs are kept
  const { page, problems } = await open(t, await profLink({ f: 'no-such-profile' }));
  await page.waitForFunction(() => /profile preset "no-such-profile"/.test(document.querySelector('[data-testid=error]').textContent));
  assert.match(await page.textContent('#profile-status'), /^No profile/);
  await assertClean(page, problems);
  // a pasted profile too large for a link: the link leaves it out and the page says so
  const { page: big, problems: p3 } = await open(t, await profLink());
  await waitPlan(big, /Shared plan/);
  const points = [];
  for (let i = 1; i <= 4000; i++) points.push({ tp: 1 + (i % 4), samples: i, layer_forward_s: 0.001 + ((i * 7919) % 9973) * 1.37e-7, layer_backward_s: 0.002 + ((i * 104729) % 9967) * 2.91e-7 });
  await big.click('#profile-paste summary');
  await big.fill('#profile-json', JSON.stringify({ name: 'large', devices: [{ device: 'a100-sxm4-80gb', points }] }));
  await big.click('#profile-attach');
  await big.waitForFunction(() => /^Attached: pasted profile/.test(document.querySelector('#profile-status').textContent));
  await big.click('[data-testid=copy-link]');
  await big.waitForFunction(() => /too large for a link/.test(document.querySelector('#copy-status').textContent));
  assert.match(await big.inputValue('#share-url'), /#v=1&s=/, 'the link without the profile');
  // its thousands of points the core finds too fast (8,000 problems): the first few are said, then
  // how many more, next to the field and in the summary; the page stays responsive (it froze for a
  // minute when every one was drawn)
  await big.waitForFunction(() => /more problems/.test(document.querySelector('#profile-json-err').textContent), null, { timeout: 30000 });
  const shown = await big.evaluate(() => ({ field: document.querySelector('#profile-json-err').textContent, said: document.querySelectorAll('#profile-json-err .said').length,
    links: document.querySelectorAll('[data-testid=error] .error-link').length,
    summary: document.querySelector('[data-testid=error]').textContent }));
  assert.equal(shown.said, 3, shown.field.slice(0, 400));
  assert.match(shown.field, /; … and [\d,]+ more problems$/);
  assert.equal(shown.links, 20);
  assert.match(shown.summary, /\n… and [\d,]+ more problems/);
  await assertClean(big, p3);
});

// ---------------------------------------------------------------- calibration

test('calibrate with my measurements: upload runs, see the fit, plan with it, share it; errors next to the field', async (t) => {
  const M = await loadModule();
  const runsText = fs.readFileSync(path.join(ROOT, 'docs/examples/demo.runs.json'), 'utf8');
  const expected = JSON.parse(M.calibrate(JSON.stringify(demoScenario), runsText));
  assert.ok(!expected.error, JSON.stringify(expected.error));
  const { page, problems } = await open(t, await demoLink());
  await waitPlan(page, /Shared plan: [\d,]+ tokens\/s/);
  assert.match(await page.textContent('[data-testid=calibration-status]'), /^No calibration/);
  await page.click('#calibrate-paste summary');
  await page.setInputFiles('#runs-file', { name: 'demo.runs.json', mimeType: 'application/json', buffer: Buffer.from(runsText) });
  await page.waitForSelector('[data-testid=calibrate-apply]');
  // the fitted values are the core's
  const fitted = expected.report.devices.flatMap((d) => Object.entries(d.parameters).filter(([, p]) => p.status === 'fitted').map(([k, p]) => ({ device: d.device, k, p })));
  assert.ok(fitted.length > 0);
  assert.equal(await page.locator('[data-testid=calibration-fitted] tbody tr').count(), fitted.length);
  for (const { device, k, p } of fitted) {
    const cell = await page.textContent(`[data-testid=calibration-fitted] tr[data-device="${device}"][data-parameter="${k}"] td.to`);
    assert.ok(Math.abs(parseFloat(cell.replace(/,/g, '')) - p.to) <= 1e-6 * Math.max(1, p.to), `${device} ${k}: ${cell} vs ${p.to}`);
  }
  // each run's error before and after
  const errs = await page.$$eval('[data-testid=calibration-runs] tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td[data-error]')].map((td) => Number(td.dataset.error))));
  assert.deepStrictEqual(errs, expected.report.runs.map((r) => [r.error_before, r.error_after]));
  assert.match(await page.textContent('[data-testid=calibration-runs] tbody tr'), /(?:[+−]\d+\.\d|0\.0)%/);
  // runs predicted less well after the fit are marked, and a note says why
  const worse = expected.report.runs.filter((r) => Math.abs(r.error_after) > Math.abs(r.error_before) + 0.005).map((r) => r.name);
  assert.deepStrictEqual(await page.$$eval('[data-testid=calibration-runs] td[data-worse]', (tds) => tds.map((td) => td.parentElement.querySelector('th').textContent)), worse);
  assert.equal(await page.locator('[data-testid=calibration-worse]').count(), worse.length ? 1 : 0);
  assert.match(await page.textContent('#calibration-report'), /RMS log error of the iteration time/);
  if (searchWorks) {
    // plan with it: the devices become the calibrated ones and the search runs with them
    await page.fill('[data-path="options.time_limit_s"]', '5');
    await page.click('[data-testid=calibrate-apply]');
    await page.waitForFunction(() => /^Calibrated devices/.test(document.querySelector('[data-testid=calibration-status]').textContent));
    await page.waitForFunction(() => /^Done/.test(document.querySelector('[data-testid=progress]').textContent), null, { timeout: 30000 });
    for (const { device } of fitted) assert.equal(await page.locator(`[data-testid=calibration-status] li[data-device="${device}"]`).count(), 1);
    const res = JSON.parse(M.plan(JSON.stringify(expected.scenario), JSON.stringify({ top: 5, time_limit_s: 5 })));
    if (res.stats.complete) assert.equal(await tokensOf(page), Math.round(res.plans[0].tokens_per_s), 'the core\'s best plan for the calibrated scenario');
    // the calibration travels in the link: a fresh page shows the same plan with the same numbers
    const tps = await tokensOf(page);
    const link = await copyLink(page, 3);
    const { page: fresh, problems: p2 } = await open(t, link);
    await waitPlan(fresh, /Shared plan: [\d,]+ tokens\/s/);
    assert.equal(await tokensOf(fresh), tps);
    assert.match(await fresh.textContent('[data-testid=calibration-status]'), /^Calibrated devices/);
    for (const { device, k } of fitted) assert.match(await fresh.textContent(`[data-testid=calibration-status] li[data-device="${device}"]`), new RegExp(k));
    // removing it goes back to the preset devices (and to a format-1 link)
    await fresh.click('#calibration-remove');
    await fresh.waitForFunction(() => /^No calibration/.test(document.querySelector('[data-testid=calibration-status]').textContent));
    await copyLink(fresh, 1);
    await assertClean(fresh, p2);
  }
  // the core's messages next to the runs field, with the path inside the runs; the text is kept
  const bad = JSON.stringify({ runs: [{ plan: demoPlan, iteration_time_s: -2 }] });
  const core = JSON.parse(M.calibrate(JSON.stringify(demoScenario), bad)).error;
  await page.fill('#runs-json', bad);
  await page.click('[data-testid=calibrate]');
  await page.waitForFunction(() => document.querySelector('[data-error-for="runs"]').textContent.length > 0);
  assert.equal(await page.textContent('[data-error-for="runs"]'), `runs[0].iteration_time_s: ${core.message}`);
  assert.equal(await page.getAttribute('#runs-json', 'aria-invalid'), 'true');
  // the summary names the same path inside the runs, not the core's doubled runs.runs[0]
  assert.match(await page.textContent('[data-testid=error]'), /In the runs: runs\[0\]\.iteration_time_s: /);
  assert.doesNotMatch(await page.textContent('[data-testid=error]'), /runs\.runs/);
  assert.equal(await page.inputValue('#runs-json'), bad);
  await page.fill('#runs-json', '{"runs": [');
  await page.click('[data-testid=calibrate]');
  await page.waitForFunction(() => /not valid JSON/.test(document.querySelector('[data-error-for="runs"]').textContent));
  assert.match(await page.textContent('[data-error-for="runs"]'), /^The runs document is not valid JSON at line 1/);
  assert.match(await page.textContent('[data-testid=error]'), /The calibration failed:\nThe runs document is not valid JSON/);
  // a failed calibration leaves no earlier report with an Apply button
  assert.equal(await page.locator('[data-testid=calibrate-apply]').count(), 0);
  await page.fill('#runs-json', '');
  await page.click('[data-testid=calibrate]');
  await page.waitForFunction(() => /empty/.test(document.querySelector('[data-error-for="runs"]').textContent));
  // the summary no longer shows the previous failure's message
  assert.doesNotMatch(await page.textContent('[data-testid=error]'), /not valid JSON/);
  await assertClean(page, problems);
});

test('calibrate the stack: the status lists the fitted stack, Remove brings back the preset stack', async (t) => {
  const M = await loadModule();
  const stack = 'deepspeed-megatron-v1-2022';
  const training = { global_batch_size: 64, precision: 'fp16', recompute: 'none', stack };
  const base = { model: 'tiny-8l', cluster: 'demo-mixed-16', training };
  const truth = { ...base, training: { ...training, stack: { base: stack, pass_overhead_us: 5000, layer_overhead_us: 2500 } } };
  const st = (group, layers, dp) => ({ group, num_layers: layers, tp: 1, dp });
  const plans = [{ micro_batch_size: 8, num_micro_batches: 8, stages: [st(0, 8, 8)] },
    { micro_batch_size: 1, num_micro_batches: 64, stages: [st(0, 4, 1), st(0, 4, 1)] },
    { micro_batch_size: 8, num_micro_batches: 8, stages: [st(1, 8, 8)] },
    { micro_batch_size: 2, num_micro_batches: 32, stages: [st(0, 8, 1)] }];
  const runs = { runs: plans.map((plan, i) => ({ name: `r${i}`, plan, iteration_time_s: JSON.parse(M.estimate(JSON.stringify(truth), JSON.stringify(plan))).iteration_time_s })) };
  const { page, problems } = await open(t, `${site.url}index.html#${await encodeShare({ m: base.model, c: base.cluster, t: training })}`);
  await page.waitForFunction(() => /tokens\/s/.test(document.querySelector('[data-testid=best-plan]').textContent), null, { timeout: 30000 });
  await page.click('#calibrate-paste summary');
  await page.fill('#runs-json', JSON.stringify(runs));
  await page.click('[data-testid=calibrate]');
  await page.waitForSelector('[data-testid=calibrate-apply]');
  await page.click('[data-testid=calibrate-apply]');
  await page.waitForFunction(() => document.querySelector('[data-testid=calibration-status] li[data-stack]'), null, { timeout: 30000 });
  assert.match(await page.textContent('[data-testid=calibration-status] li[data-stack]'), new RegExp(`^stack ${stack}: .*overhead_us`));
  assert.equal(await page.isDisabled('#calibration-remove'), false);
  await page.click('#calibration-remove');
  await page.waitForFunction(() => /^No calibration/.test(document.querySelector('[data-testid=calibration-status]').textContent));
  assert.equal(await page.evaluate(() => window.__poseidon.result()?.scenario ?? null) !== null, true);
  await page.waitForFunction((id) => { const r = window.__poseidon.result(); return r && !document.querySelector('#results').classList.contains('stale') && r.scenario.training.stack === id; }, stack, { timeout: 30000 });
  await assertClean(page, problems);
});
