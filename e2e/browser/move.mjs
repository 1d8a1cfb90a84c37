// Opens a desktop's page in the web console in headless Chromium (signed in
// with an admin token) and starts moving it to HOST through the "Move to
// host…" dialog. Run by the Go e2e tests, which follow the move through the
// API (this script does not wait for it to finish):
//
//   BUREAU_URL=http://127.0.0.1:8090 BUREAU_TOKEN=bureau_… DESKTOP=<id> HOST=local \
//   SCREENSHOT=/tmp/move.png node e2e/browser/move.mjs
//
// Steps: open BUREAU_URL/#/desktops/DESKTOP (viewport 1280x1000); wait up to
// 30 s for the page head and its "Move to host…" button (shown to admins when
// bureau has more than one host; enabled in the states a move may start
// from); click it and wait up to 30 s for the dialog's host list; save a
// screenshot with the dialog open to SCREENSHOT; pick HOST (it must be one the
// dialog offers, i.e. its radio is enabled) and click "Move to HOST"; wait up
// to 60 s for the page head's state pill to show the desktop migrating (a
// MutationObserver notes it even if it is brief) and note the step it shows
// and whether "Cancel move" showed.
//
// stdout: one JSON line
//   {"offered":["two"],"refused":{"three":"Cannot take desktops: unreachable"},
//    "from":"local","moving":true,"step":"to two: disks","cancel":true,"errors":[]}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const DESKTOP = env.DESKTOP || '';
const HOST = env.HOST || '';
const SCREENSHOT = env.SCREENSHOT || '';

const { errors, fail, signedIn } = script('move.mjs');

const HEAD = '.details-head';

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !HOST || !SCREENSHOT) fail('BUREAU_URL, BUREAU_TOKEN, DESKTOP, HOST and SCREENSHOT are needed');
  await signedIn(`#/desktops/${encodeURIComponent(DESKTOP)}`, 240_000, async (page) => {
    const out = { offered: [], refused: {}, from: '', moving: false, step: '', cancel: false, errors };
    const mainText = async () => (await page.locator('main').innerText().catch(() => '')).slice(0, 400);

    await page.locator(HEAD).waitFor({ timeout: 30_000 })
      .catch(async () => fail(`desktop ${DESKTOP}'s page did not load; page says: ${await mainText()}`));
    // The hosts are asked for after the desktop: the button comes then.
    const open = page.locator(`${HEAD} button.move-open`);
    await open.waitFor({ timeout: 30_000 })
      .catch(async () => fail(`no "Move to host…" button on desktop ${DESKTOP}'s page (admin token? more than one host? already moving?); page head: ${await page.locator(HEAD).innerText().catch(() => '')}`));
    if (await open.isDisabled()) fail(`"Move to host…" is disabled: ${await open.getAttribute('title')}`);
    await open.click();

    const dlg = page.locator('dialog.modal[open]');
    await dlg.waitFor({ timeout: 10_000 }).catch(() => fail('"Move to host…" opened no dialog'));
    // The host list is loaded: choices, "no other host", or an error.
    await dlg.locator('.host-options label.host-option, .host-options p.muted, .host-options .form-error').first().waitFor({ timeout: 30_000 })
      .catch(async () => fail(`the dialog's host list did not load: ${await dlg.innerText()}`));
    out.from = (await dlg.locator('form#move-form > p strong').first().textContent().catch(() => '')).trim();
    const choices = await dlg.locator('label.host-option').evaluateAll((ls) => ls.map((l) => ({
      name: l.dataset.host,
      ok: !l.querySelector('input[type=radio]')?.disabled,
      why: l.querySelector('.host-option-why')?.textContent.trim() || '',
    })));
    out.offered = choices.filter((c) => c.ok).map((c) => c.name);
    out.refused = Object.fromEntries(choices.filter((c) => !c.ok).map((c) => [c.name, c.why]));
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    if (!out.offered.includes(HOST)) {
      fail(`the dialog does not offer host ${HOST}: offered ${JSON.stringify(out.offered)}, refused ${JSON.stringify(out.refused)}; dialog: ${(await dlg.innerText()).slice(0, 400)}`);
    }

    await dlg.locator(`label.host-option[data-host="${HOST}"] input[type=radio]`).check();
    const confirm = dlg.getByRole('button', { name: `Move to ${HOST}`, exact: true });
    await confirm.waitFor({ timeout: 5_000 }).catch(async () => fail(`no "Move to ${HOST}" button after picking it; dialog buttons: ${await dlg.locator('button').allInnerTexts()}`));
    if (await confirm.isDisabled()) fail(`"Move to ${HOST}" is disabled`);

    // Note what the page head shows from now on, however briefly.
    await page.evaluate((head) => {
      const seen = { migrating: false, steps: [], cancel: false };
      window.__moveSeen = seen;
      const look = () => {
        const el = document.querySelector(head);
        if (!el) return;
        const pill = el.querySelector('h1 .pill');
        const text = pill?.textContent || '';
        if (/^\s*migrating\b/.test(text)) seen.migrating = true;
        const note = pill?.querySelector('.pill-note')?.textContent.replace(/^·\s*/, '').trim();
        if (note && /^\s*migrating\b/.test(text) && !seen.steps.includes(note)) seen.steps.push(note);
        if (el.querySelector('button.move-cancel')) seen.cancel = true;
      };
      new MutationObserver(look).observe(document.querySelector('main') || document.body, { subtree: true, childList: true, characterData: true });
      look();
    }, HEAD);

    await confirm.click();
    // The dialog closes once the move is accepted, or says why not.
    const after = await Promise.race([
      dlg.waitFor({ state: 'detached', timeout: 60_000 }).then(() => 'closed', () => 'open'),
      dlg.locator('.form-error:not([hidden])').waitFor({ timeout: 60_000 }).then(() => 'error', () => 'open'),
    ]);
    if (after === 'error') fail(`the move was refused: ${(await dlg.locator('.form-error:not([hidden])').first().innerText()).trim()}`);
    if (after !== 'closed') fail(`the dialog did not close after "Move to ${HOST}": ${(await dlg.innerText().catch(() => '')).slice(0, 400)}`);

    const seen = await page.waitForFunction(() => (window.__moveSeen?.migrating ? window.__moveSeen : null), null, { timeout: 60_000, polling: 100 })
      .then((hd) => hd.jsonValue(), () => null);
    if (!seen) fail(`the page never showed desktop ${DESKTOP} migrating; page head: ${await page.locator(HEAD).innerText().catch(() => '')}`);
    // Give the step and "Cancel move" a moment to show if they had not yet.
    await page.waitForFunction(() => window.__moveSeen.steps.length && window.__moveSeen.cancel, null, { timeout: 5_000, polling: 100 }).catch(() => {});
    const last = await page.evaluate(() => window.__moveSeen);
    out.moving = true;
    out.step = last.steps[0] || '';
    out.cancel = last.cancel;
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

main().catch((e) => fail(e.stack || String(e)));
