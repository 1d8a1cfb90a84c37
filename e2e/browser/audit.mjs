// Opens the web console's Audit page in headless Chromium (signed in with
// BUREAU_TOKEN), filters it to DESKTOP and checks the entries show: rows,
// and among them a refused call (a red 403 outcome). Run by the Go e2e
// tests:
//
//   BUREAU_URL=http://127.0.0.1:8090 BUREAU_TOKEN=bureau_… DESKTOP=d_… \
//   SCREENSHOT=/tmp/audit.png node e2e/browser/audit.mjs
//
// stdout: one JSON line {"rows":N,"refusal":true,"errors":["page errors"]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const { errors, fail, signedIn } = script('audit.mjs');

async function main() {
  if (!BUREAU_URL || !TOKEN || !env.DESKTOP || !env.SCREENSHOT) fail('BUREAU_URL, BUREAU_TOKEN, DESKTOP and SCREENSHOT are needed');
  await signedIn('#/audit', 120_000, async (page) => {
    // The header links to it.
    await page.locator('nav.topnav a[href="#/audit"]').waitFor({ timeout: 30_000 })
      .catch(() => fail('the header has no Audit link'));
    await page.locator('table.audit-table').waitFor({ timeout: 30_000 });
    await page.getByLabel('Only this desktop (or object) id').fill(env.DESKTOP);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll('table.audit-table tbody tr')];
      return rows.length > 0 && rows.every((r) => r.innerText.includes(id) || r.querySelector(`a[href$="${id}"]`));
    }, env.DESKTOP, { timeout: 30_000 }).catch(async () => fail(`no rows for ${env.DESKTOP}: ${(await page.locator('main').innerText()).slice(0, 600)}`));
    const out = await page.$$eval('table.audit-table tbody tr', (rows) => ({
      rows: rows.length,
      refusal: rows.some((r) => /desktop\.update/.test(r.innerText) && r.querySelector('.pill-bad')?.textContent.includes('403')),
    }));
    await page.screenshot({ path: env.SCREENSHOT, fullPage: false });
    process.stdout.write(JSON.stringify({ ...out, errors }) + '\n');
  });
}

main().catch((e) => fail(e.stack || String(e)));
