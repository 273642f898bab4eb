// Helpers shared by the page's input tests (inputs.test.mjs, inputs-stack.test.mjs): a fresh page,
// the demo plan's link, waiting for the plan on screen, the copied share link, the tokens/s shown.

export function inputsHelpers(env) {
  /** A fresh page (1300 x 900) that records console errors, page errors and CSP violations. */
  const open = (t, url, options = {}) => env.open(t, url, options);
  const demoLink = () => env.demoLink();
  const waitPlan = (page, re) => page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid=best-plan]').textContent), re.source);
  /** copies the share link and waits for the link of format `version` */
  const copyLink = async (page, version) => {
    await page.click('[data-testid=copy-link]');
    await page.waitForFunction((v) => document.querySelector('#share-url').value.includes(`#v=${v}&s=`), version);
    return page.inputValue('#share-url');
  };
  const tokensOf = async (page) => Number((await page.textContent('[data-testid=best-tokens]')).replace(/[^\d]/g, ''));
  return { open, demoLink, waitPlan, copyLink, tokensOf };
}
