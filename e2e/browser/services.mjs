// Opens the web console's Services tab of a desktop in headless Chromium
// (signed in with TOKEN), waits for the service NAME to show as running,
// opens its log and waits for LOG_EXPECT in it, saves SCREENSHOT and prints
// {"state": …, "log": …} as JSON on stdout. With PORT and PAGE_EXPECT it
// then opens that port's live URL from the Live URLs list (Open: a new
// tab signed in by a one-time link) and adds the tab's "opened" address
// and "page" text.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const env = process.env;
const { BUREAU_URL, TOKEN, DESKTOP, NAME, LOG_EXPECT, SCREENSHOT } = env;
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';

function fail(msg) {
  process.stderr.write(`services.mjs: FAIL: ${msg}\n`);
  process.exit(1);
}

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !NAME || !SCREENSHOT) fail('BUREAU_URL, TOKEN, DESKTOP, NAME and SCREENSHOT are needed');
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const guard = setTimeout(() => fail('gave up after 120 s'), 120_000);
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    // Signed in before any of the app's scripts run, as after a login.
    await context.addInitScript((t) => localStorage.setItem('bureau.token', t), TOKEN);
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${BUREAU_URL}/#/desktops/${encodeURIComponent(DESKTOP)}/services`, { waitUntil: 'domcontentloaded' });
    const row = page.locator(`tr[data-service="${NAME}"]`);
    await row.waitFor({ timeout: 60_000 }).catch(() => fail(`no row for ${NAME}; page errors: ${errors.join('; ')}`));
    await page.waitForFunction((n) => document.querySelector(`tr[data-service="${n}"] .pill`)?.textContent === 'running', NAME, { timeout: 60_000 })
      .catch(() => {});
    const state = await row.locator('.pill').textContent();
    await row.getByRole('button', { name: 'Log' }).click();
    let log = '';
    try {
      await page.waitForFunction((want) => (document.querySelector('pre.log')?.textContent || '').includes(want), LOG_EXPECT || '', { timeout: 30_000 });
    } catch { /* reported below */ }
    log = await page.locator('pre.log').textContent();
    const out = { state, log, errors };
    if (env.PORT) {
      const urlRow = page.locator(`#live-urls tr.url-row[data-port="${env.PORT}"]`);
      await urlRow.waitFor({ timeout: 30_000 }).catch(() => fail(`no Live URLs row for port ${env.PORT}; page errors: ${errors.join('; ')}`));
      out.access = (await urlRow.locator('.pill').textContent()).trim();
      const [tab] = await Promise.all([context.waitForEvent('page'), urlRow.locator('.url-open').click()]);
      await tab.waitForFunction((want) => (document.body?.innerText || '').includes(want), env.PAGE_EXPECT || '', { timeout: 60_000 }).catch(() => {});
      out.opened = tab.url();
      out.page = (await tab.evaluate(() => document.body?.innerText || '')).slice(0, 300);
      await tab.close();
    }
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
