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
// With FILES_BACKUP (a complete backup of DESKTOP): before leaving the tab,
// click that backup's Files button, wait up to 3 min for the browser of its
// /home, click down the folders of FILES_PATH (default /home/agent), save a
// screenshot to FILES_SCREENSHOT (default: SCREENSHOT with -files), read
// what it lists and close it: "files" in the output.
//
// stdout: one JSON line; rows are in the order shown (newest first), kind
// and state as their tag and pill read:
//   {"nav":true,
//    "tab":[{"id":"…","kind":"incremental","state":"complete"},…],
//    "targets":[{"name":"offsite","kind":"s3"}],
//    "page":[{"id":"…","desktop_id":"…","desktop":"web-1","link":true,"target":"offsite","kind":"full","state":"complete"},…],
//    "files":{"path":"/home/agent","crumbs":"/home/agent","entries":[{"name":"notes.txt","type":"file","size":"12 B"},…]},
//    "errors":["page errors"]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const DESKTOP = env.DESKTOP || '';
const SCREENSHOT = env.SCREENSHOT || '';
const PAGE_SCREENSHOT = env.PAGE_SCREENSHOT || SCREENSHOT.replace(/(\.png)?$/, '-page.png');
const FILES_BACKUP = env.FILES_BACKUP || '';
const FILES_PATH = env.FILES_PATH || '/home/agent';
const FILES_SCREENSHOT = env.FILES_SCREENSHOT || SCREENSHOT.replace(/(\.png)?$/, '-files.png');

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

// Opens FILES_BACKUP's Files view from the tab, walks to FILES_PATH and
// reads what it lists.
async function browseFiles(page) {
  const dialog = page.locator('dialog.bf-dialog');
  const says = async () => (await dialog.innerText().catch(() => '(no dialog)')).slice(0, 600);
  // The folder shown: its path (the crumbs) once read, null while it loads.
  const shown = () => dialog.evaluate((d) => {
    if (d.querySelector('.bf-listing.is-loading, .bf-listing .loading')) return null;
    if (d.querySelector('.bf-error')) return { error: d.querySelector('.bf-error').innerText };
    if (!d.querySelector('.bf-table')) return null;
    return { path: '/' + [...d.querySelectorAll('.bf-crumbs a, .bf-crumbs strong')].map((x) => x.textContent.trim()).join('/') };
  });
  async function waitFor(path, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
      const st = await shown();
      if (st?.error) fail(`the Files view of backup ${FILES_BACKUP} says: ${st.error}`);
      if (st?.path === path) return;
      if (Date.now() > deadline) fail(`the Files view of backup ${FILES_BACKUP} does not show ${path} (it shows ${JSON.stringify(st)}); it says: ${await says()}`);
      await page.waitForTimeout(500);
    }
  }
  const btn = page.locator(`.tab-body tr.bk-row[data-backup="${FILES_BACKUP}"] button.bk-files`);
  await btn.waitFor({ timeout: 30_000 }).catch(() => fail(`no Files button on backup ${FILES_BACKUP}'s row`));
  await btn.click();
  await dialog.waitFor({ timeout: 10_000 }).catch(() => fail('the Files button opened no dialog'));
  await waitFor('/home', 180_000); // the first read opens the backup
  const parts = FILES_PATH.split('/').filter(Boolean).slice(1);
  let at = '/home';
  for (const part of parts) {
    const row = dialog.locator(`tr.bf-row[data-type="dir"][data-name="${part}"]`);
    await row.waitFor({ timeout: 10_000 }).catch(async () => fail(`${at} in the Files view lists no folder ${part}; it says: ${await says()}`));
    await row.locator('td.bf-name a').click();
    at = `${at}/${part}`;
    await waitFor(at, 60_000);
  }
  const files = {
    path: at,
    crumbs: (await dialog.locator('.bf-crumbs').innerText()).replace(/\s+/g, ''),
    entries: await dialog.locator('tr.bf-row').evaluateAll((rows) => rows.map((r) => ({
      name: r.dataset.name, type: r.dataset.type, size: r.querySelector('.bf-size')?.textContent.trim() || '',
    }))),
  };
  await page.screenshot({ path: FILES_SCREENSHOT });
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached', timeout: 10_000 }).catch(() => fail('the Files dialog did not close on Escape'));
  return files;
}

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !SCREENSHOT) fail('BUREAU_URL, BUREAU_TOKEN, DESKTOP and SCREENSHOT are needed');
  await signedIn(`#/desktops/${encodeURIComponent(DESKTOP)}/backups`, 240_000, async (page) => {
    const out = { nav: false, tab: [], targets: [], page: [], files: null, errors };

    // The desktop's Backups tab.
    await page.locator('a.tab[data-tab="backups"][aria-selected="true"]').waitFor({ timeout: 30_000 })
      .catch(async () => fail(`no Backups tab selected; page says: ${(await page.locator('main').innerText()).slice(0, 400)}`));
    await page.locator('.bk-row, .bk-empty').first().waitFor({ timeout: 30_000 })
      .catch(async () => fail(`the Backups tab shows no list; it says: ${(await page.locator('.tab-body').innerText()).slice(0, 400)}`));
    out.tab = (await rowsFor(page, '.tab-body', () => api(`/desktops/${encodeURIComponent(DESKTOP)}/backups`, 'backups'), 60_000))
      .map(({ id, kind, state }) => ({ id, kind, state }));
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    if (FILES_BACKUP) out.files = await browseFiles(page);

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
