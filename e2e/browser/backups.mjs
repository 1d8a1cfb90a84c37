// Opens the web console's backups in headless Chromium (signed in with an
// admin token) and reports what they show: DESKTOP's Backups tab and the
// Backups page (targets and every backup). Read-only: it backs nothing up,
// verifies and restores nothing. Run by the Go e2e tests
// (backups_web_test.go):
//
//   BUREAU_URL=http://127.0.0.1:8090 BUREAU_TOKEN=bureau_… DESKTOP=<id> \
//   SCREENSHOT=/tmp/backups.png node e2e/browser/backups.mjs
//
// Steps: open BUREAU_URL/#/desktops/DESKTOP/backups (viewport 1280x1000);
// wait up to 60 s for a row per backup of GET /api/v1/desktops/DESKTOP/backups
// (asked again while they differ: one may be running), each showing the
// state the API gives; save a screenshot of the page to SCREENSHOT. Then
// click the header's Backups link (shown to admins only; without it, go to
// #/backups) and wait up to 60 s for a row per target of GET
// /api/v1/backup-targets and per backup of GET /api/v1/backups, states as
// the API gives them; save a full-page screenshot to PAGE_SCREENSHOT
// (default: SCREENSHOT with -page before .png).
//
// stdout: one JSON line; rows are in the order shown (newest first), kind
// and state as their tag and pill read:
//   {"nav":true,
//    "tab":[{"id":"…","kind":"incremental","state":"complete"},…],
//    "targets":[{"name":"offsite","kind":"s3"}],
//    "page":[{"id":"…","desktop_id":"…","desktop":"web-1","link":true,"target":"offsite","kind":"full","state":"complete"},…],
//    "errors":["page errors"]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const DESKTOP = env.DESKTOP || '';
const SCREENSHOT = env.SCREENSHOT || '';
const PAGE_SCREENSHOT = env.PAGE_SCREENSHOT || SCREENSHOT.replace(/(\.png)?$/, '-page.png');

const { errors, fail, signedIn } = script('backups.mjs');

async function api(path, key) {
  const res = await fetch(`${BUREAU_URL}/api/v1${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) fail(`GET /api/v1${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json())[key] || [];
}

// The backup rows a table shows, in order, as a person reads them.
const readRows = (page, scope) => page.$$eval(`${scope} tr.bk-row`, (rows) => rows.map((r) => ({
  id: r.dataset.backup,
  desktop_id: r.dataset.desktop || '',
  desktop: r.querySelector('.bk-desktop')?.textContent.trim() || '',
  link: !!r.querySelector('a.bk-desktop'),
  target: r.querySelector('.bk-target')?.textContent.trim() || '',
  kind: r.querySelector('.bk-kind .tag')?.textContent.trim() || '',
  state: r.querySelector('.bk-state')?.textContent.trim() || '',
})));

// Waits up to ms for the rows under scope to show every backup list() gives
// with its state; returns the last rows read.
async function rowsFor(page, scope, list, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const want = await list();
    const rows = await readRows(page, scope);
    const shown = new Map(rows.map((r) => [r.id, r]));
    const missing = want.filter((b) => shown.get(b.id)?.state !== b.state || shown.get(b.id)?.kind !== b.kind);
    if (!missing.length) return rows;
    if (Date.now() > deadline) {
      fail(`${scope}: ${missing.length} of ${want.length} backups not shown as the API gives them (${missing.map((b) => `${b.id} ${b.kind} ${b.state}`).join(', ')}); rows: ${JSON.stringify(rows)}; page says: ${(await page.locator('main').innerText()).slice(0, 600)}`);
    }
    await page.waitForTimeout(1000);
  }
}

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !SCREENSHOT) fail('BUREAU_URL, BUREAU_TOKEN, DESKTOP and SCREENSHOT are needed');
  await signedIn(`#/desktops/${encodeURIComponent(DESKTOP)}/backups`, 240_000, async (page) => {
    const out = { nav: false, tab: [], targets: [], page: [], errors };

    // The desktop's Backups tab.
    await page.locator('a.tab[data-tab="backups"][aria-selected="true"]').waitFor({ timeout: 30_000 })
      .catch(async () => fail(`no Backups tab selected; page says: ${(await page.locator('main').innerText()).slice(0, 400)}`));
    await page.locator('.bk-row, .bk-empty').first().waitFor({ timeout: 30_000 })
      .catch(async () => fail(`the Backups tab shows no list; it says: ${(await page.locator('.tab-body').innerText()).slice(0, 400)}`));
    out.tab = (await rowsFor(page, '.tab-body', () => api(`/desktops/${encodeURIComponent(DESKTOP)}/backups`, 'backups'), 60_000))
      .map(({ id, kind, state }) => ({ id, kind, state }));
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The Backups page, through the header's link (admins).
    const link = page.locator('nav.topnav a[href="#/backups"]');
    out.nav = await link.waitFor({ timeout: 30_000 }).then(() => true, () => false);
    if (out.nav) await link.click();
    else await page.evaluate(() => { location.hash = '#/backups'; });
    await page.locator('.bk-all .bk-row, .bk-all .empty').first().waitFor({ timeout: 30_000 })
      .catch(async () => fail(`the Backups page shows no list; it says: ${(await page.locator('main').innerText()).slice(0, 400)}`));

    const wantTargets = await api('/backup-targets', 'targets');
    const deadline = Date.now() + 60_000;
    for (;;) {
      out.targets = await page.$$eval('tr.bk-target-row', (rows) => rows.map((r) => ({ name: r.dataset.target, kind: r.dataset.kind })));
      if (wantTargets.every((t) => out.targets.some((x) => x.name === t.name))) break;
      if (Date.now() > deadline) fail(`the Backups page lists targets ${JSON.stringify(out.targets)}, the API ${wantTargets.map((t) => t.name).join(', ')}`);
      await page.waitForTimeout(1000);
    }
    out.page = await rowsFor(page, '.bk-all', () => api('/backups', 'backups'), 60_000);
    await page.screenshot({ path: PAGE_SCREENSHOT, fullPage: true });
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

main().catch((e) => fail(e.stack || String(e)));
