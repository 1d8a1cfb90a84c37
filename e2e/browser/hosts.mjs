// Opens the web console's Hosts page in headless Chromium (signed in with an
// admin token), checks every host the API lists is shown with its state,
// drains HOST through the page and undrains it again. Run by the Go e2e
// tests:
//
//   BUREAU_URL=http://127.0.0.1:8090 BUREAU_TOKEN=bureau_… HOST=two \
//   SCREENSHOT=/tmp/hosts.png node e2e/browser/hosts.mjs
//
// Steps: open BUREAU_URL/#/hosts (viewport 1280x1000); wait up to 30 s for
// the header's Hosts link (shown to admins only) and for a card per host of
// GET /api/v1/hosts whose state pill shows the state the API gives (asked
// again while they differ: a host may just have connected). Click Drain on
// HOST's card and confirm the dialog; wait up to 60 s for the card to show it
// draining, then up to 5 min for its drain to end (HOST runs no desktops, so
// it ends at once); save a full-page screenshot to SCREENSHOT. Click Undrain
// and wait up to 60 s for the card to no longer show it draining.
//
// stdout: one JSON line
//   {"listed":["local","two"],"states":{"local":"up",…},"nav":true,"drained":true,
//    "drain":"done","undrained":true,"errors":["page errors"]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const HOST = env.HOST || '';
const SCREENSHOT = env.SCREENSHOT || '';

const { errors, fail, signedIn } = script('hosts.mjs');

async function apiHosts() {
  const res = await fetch(`${BUREAU_URL}/api/v1/hosts`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) fail(`GET /api/v1/hosts: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()).hosts || [];
}

const card = (name) => `article.host-card[data-host="${name}"]`;

async function main() {
  if (!BUREAU_URL || !TOKEN || !HOST || !SCREENSHOT) fail('BUREAU_URL, BUREAU_TOKEN, HOST and SCREENSHOT are needed');
  await signedIn('#/hosts', 480_000, async (page) => {
    const out = { listed: [], states: {}, nav: false, drained: false, drain: '', undrained: false, errors };
    // The header's Hosts link shows for admins.
    out.nav = await page.locator('nav.topnav a[href="#/hosts"]').waitFor({ timeout: 30_000 }).then(() => true, () => false);

    // Every host, with the state the API gives.
    await page.locator('article.host-card').first().waitFor({ timeout: 30_000 })
      .catch(async () => fail(`no host cards; page says: ${(await page.locator('main').innerText()).slice(0, 400)}`));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const want = await apiHosts();
      const shown = await page.$$eval('article.host-card', (cards) => Object.fromEntries(cards.map((c) => [c.dataset.host, c.querySelector('.host-state')?.textContent.trim() || ''])));
      out.states = shown;
      out.listed = want.filter((x) => shown[x.name] === x.state).map((x) => x.name);
      if (out.listed.length === want.length || Date.now() > deadline) break;
      await page.waitForTimeout(1000);
    }
    if (!out.listed.includes(HOST)) fail(`${HOST} is not listed with its state: page shows ${JSON.stringify(out.states)}`);

    // Drain HOST: the confirm dialog says its desktops move off.
    const c = page.locator(card(HOST));
    await c.getByRole('button', { name: 'Drain', exact: true }).click();
    const dlg = page.locator('dialog.modal[open]');
    await dlg.waitFor({ timeout: 10_000 });
    const said = await dlg.innerText();
    if (!/moved off/.test(said)) fail(`the drain dialog does not say desktops are moved off: ${said}`);
    await dlg.getByRole('button', { name: 'Drain host' }).click();
    const draining = await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.draining === 'true', card(HOST), { timeout: 60_000 })
      .then(() => true, () => false);
    if (!draining) fail(`${HOST} never showed draining; card: ${await c.innerText()}`);
    // The drain ends (HOST runs no desktops): its box says done.
    out.drain = await page.waitForFunction((sel) => {
      const k = document.querySelector(`${sel} .drain`)?.dataset.drain;
      return k && k !== 'running' ? k : null;
    }, card(HOST), { timeout: 300_000 }).then((hd) => hd.jsonValue(), () => 'running');
    out.drained = draining && out.drain === 'done';
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // Undrain: the card no longer shows it draining.
    await c.getByRole('button', { name: 'Undrain', exact: true }).click();
    out.undrained = await page.waitForFunction((sel) => {
      const el = document.querySelector(sel);
      return el && el.dataset.draining === 'false' && !el.querySelector('.host-draining');
    }, card(HOST), { timeout: 60_000 }).then(() => true, () => false);
    const actionError = await c.locator('.host-action-error').textContent({ timeout: 1000 }).catch(() => '');
    if (actionError) errors.push(`card: ${actionError}`);
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

main().catch((e) => fail(e.stack || String(e)));
