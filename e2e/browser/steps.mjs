// Opens the web console's Steps tab of a desktop in headless Chromium
// (signed in with TOKEN) and checks the step log shows as a person sees it.
// Run by the Go e2e tests:
//
//   BUREAU_URL=http://127.0.0.1:8090 TOKEN=bureau_… DESKTOP=<desktop id> \
//   MIN_STEPS=3 SCREENSHOT=/tmp/steps.png [EXPORT=bureau|anthropic|openai] \
//   node e2e/browser/steps.mjs
//
// Steps: open BUREAU_URL/#/desktops/DESKTOP/steps (viewport 1280x1000), wait
// up to 60 s for at least MIN_STEPS (default 1) step rows (steps are recorded
// just after their call returns, and the tab polls every 2 s), wait up to 30 s
// for the first (newest) row's thumbnail <img> to load (naturalWidth > 0),
// click that row, wait up to 30 s for its before and after images to load and
// check its input is shown as JSON (it parses) and its result is shown. Then
// save a full-page screenshot to SCREENSHOT. With EXPORT, also click that
// export button and parse the downloaded JSON.
//
// stdout: one JSON line
//   {"rows":N,"first":{"seq":N,"kind":"…","summary":"…","failed":bool,"thumb_width":N},
//    "detail":{"before_width":N,"after_width":N,"input":{…},"result":"…"},
//    "export":{"format":"…","file":"…","bytes":N,"items":N},"errors":["page errors"]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const env = process.env;
const { BUREAU_URL, TOKEN, DESKTOP, SCREENSHOT } = env;
const MIN_STEPS = Number(env.MIN_STEPS || 1);
const EXPORT = env.EXPORT || '';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';

const errors = [];
let page = null;
let failing = false;

async function fail(msg) {
  if (failing) return new Promise(() => {}); // the first failure reports and exits
  failing = true;
  process.stderr.write(`steps.mjs: FAIL: ${msg}\n`);
  if (errors.length) process.stderr.write(`steps.mjs: page errors: ${errors.join(' | ')}\n`);
  if (page && SCREENSHOT) {
    await page.evaluate(() => window.scrollTo(0, 0)).catch(() => {});
    await page.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => {});
    process.stderr.write(`steps.mjs: screenshot of the failure: ${SCREENSHOT}\n`);
  }
  process.exit(1);
}

/** Waits for the <img> under selector to have loaded; its naturalWidth, or 0 on timeout. */
async function imgWidth(selector, timeout) {
  try {
    await page.waitForFunction((sel) => {
      const img = document.querySelector(sel);
      return !!img && img.complete && img.naturalWidth > 0;
    }, selector, { timeout });
  } catch { /* reported as 0 */ }
  return page.evaluate((sel) => document.querySelector(sel)?.naturalWidth || 0, selector);
}

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !SCREENSHOT) await fail('BUREAU_URL, TOKEN, DESKTOP and SCREENSHOT are needed');
  if (!fs.existsSync(CHROMIUM)) await fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const guard = setTimeout(() => fail('gave up after 180 s'), 180_000);
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, acceptDownloads: true });
    // Signed in before any of the app's scripts run, as after a login.
    await context.addInitScript((t) => localStorage.setItem('bureau.token', t), TOKEN);
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${BUREAU_URL}/#/desktops/${encodeURIComponent(DESKTOP)}/steps`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.tab[data-tab="steps"][aria-selected="true"], form.login-card', { timeout: 30_000 })
      .catch(() => fail('the Steps tab did not open'));
    if (await page.locator('form.login-card').count()) await fail('the sign-in page shows: the token was not accepted');

    // The rows.
    try {
      await page.waitForFunction((n) => document.querySelectorAll('ol.steps li.step').length >= n, MIN_STEPS, { timeout: 60_000 });
    } catch {
      const shown = await page.locator('ol.steps li.step').count();
      const text = await page.evaluate(() => ['.steps-status', '.tab-body .empty:not([hidden])', '.tab-body .loading']
        .map((s) => document.querySelector(s)?.innerText?.trim()).filter(Boolean).join(' / '));
      await fail(`${shown} step rows shown after 60 s, want at least ${MIN_STEPS}; the tab says: ${JSON.stringify(text.slice(0, 400))}`);
    }
    const rows = await page.locator('ol.steps li.step').count();
    const first = page.locator('ol.steps li.step').first();
    const out = {
      rows,
      first: {
        seq: Number(await first.getAttribute('data-seq')),
        kind: await first.getAttribute('data-kind'),
        summary: (await first.locator('.step-summary').innerText()).trim(),
        failed: await first.evaluate((el) => el.classList.contains('step-failed')),
        thumb_width: 0,
      },
      detail: {},
      errors,
    };
    await first.scrollIntoViewIfNeeded();
    out.first.thumb_width = await imgWidth('ol.steps li.step:first-child .step-thumb img', 30_000);
    if (!out.first.thumb_width) {
      const why = await first.locator('.step-thumb').innerText().catch(() => '');
      await fail(`the first row's (step ${out.first.seq}) thumbnail did not load${why ? ` (it says "${why.trim()}")` : ''}`);
    }

    // Its details.
    await first.locator('.step-row').click();
    await page.waitForSelector('ol.steps li.step:first-child .step-detail', { timeout: 10_000 })
      .catch(() => fail('clicking the first row did not open its details'));
    out.detail.before_width = await imgWidth('ol.steps li.step:first-child .step-shot[data-which="before"] img', 30_000);
    out.detail.after_width = await imgWidth('ol.steps li.step:first-child .step-shot[data-which="after"] img', 30_000);
    const inputText = await page.locator('ol.steps li.step:first-child .step-input').innerText();
    try { out.detail.input = JSON.parse(inputText); } catch { await fail(`the input is not shown as JSON: ${inputText.slice(0, 200)}`); }
    out.detail.result = (await page.locator('ol.steps li.step:first-child .step-result').innerText()).slice(0, 300);
    out.detail.revert_button = await page.locator('ol.steps li.step:first-child .step-revert').isVisible();
    // From the top, so the sticky top bar does not cover the page in the full-page picture.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    if (!out.detail.before_width || !out.detail.after_width) {
      await fail(`the before/after pictures of step ${out.first.seq} did not load (widths ${out.detail.before_width}/${out.detail.after_width})`);
    }
    if (!out.detail.result) await fail('the result is not shown');
    if (!out.detail.revert_button) await fail('no "Revert to before this step" button');

    // An export, downloaded as a person would.
    if (EXPORT) {
      const btn = page.locator(`button[data-format="${EXPORT}"]`);
      const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), btn.click()])
        .catch((e) => fail(`export ${EXPORT}: no download (${e.message})`));
      const file = await dl.path();
      const text = fs.readFileSync(file, 'utf8');
      let doc;
      try { doc = JSON.parse(text); } catch { await fail(`export ${EXPORT}: not JSON: ${text.slice(0, 200)}`); }
      const items = (doc.steps || doc.messages || doc.input || []).length;
      out.export = { format: doc.format, file: dl.suggestedFilename(), bytes: text.length, items };
      if (doc.format !== EXPORT || !items) await fail(`export ${EXPORT}: ${JSON.stringify(out.export)}`);
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
