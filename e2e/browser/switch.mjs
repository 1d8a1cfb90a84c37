// The "Acting as" switcher of a sign-in session, in headless Chromium:
// signs in with single sign-on (tools/oidc-provider's form), switches the
// top bar to team TEAM (POST /auth/team), checks the role badge and the
// desktop list in the team's context (a viewer gets no "New desktop"),
// then switches back to the person. Run by e2e/teams_test.go:
//
//   BUREAU_URL=… OIDC_USER=bob OIDC_PASSWORD=… TEAM=design SHOT=/tmp/switch.png node e2e/browser/switch.mjs
//
// stdout: one JSON line {"acting","role","owner","new_desktop_buttons",
// "list_shown","back_owner","back_role","errors"}
// On failure: a message on stderr (with the page's errors) and exit 1.
import fs from 'node:fs';
import { chromium } from 'playwright-core';
import { BUREAU_URL, script } from './session.mjs';

const env = process.env;
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const { errors, fail } = script('switch.mjs');
const T = 30_000;

async function main() {
  for (const k of ['OIDC_USER', 'OIDC_PASSWORD', 'TEAM', 'SHOT']) if (!env[k]) fail(`${k} is needed (and BUREAU_URL)`);
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const guard = setTimeout(() => fail('gave up after 3 min'), 180_000);
  const out = { errors };
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    const mainText = async () => (await page.locator('body').innerText().catch(() => '')).slice(0, 800);
    const listShown = () => page.waitForFunction(() => document.querySelector('nav.topnav a[data-section="list"][aria-current="page"]')
      && /Desktops/.test(document.querySelector('main h1')?.textContent || '') && !document.querySelector('main .loading')
      && !document.querySelector('main .skeleton'), null, { timeout: T });

    await page.goto(`${BUREAU_URL}/`, { waitUntil: 'domcontentloaded' });
    await page.locator('#sso-signin').click({ timeout: T });
    await page.locator('input#username').fill(env.OIDC_USER, { timeout: T });
    await page.locator('input#password').fill(env.OIDC_PASSWORD);
    await page.locator('button[type="submit"]').click();
    await page.locator('#team-switch').waitFor({ timeout: T })
      .catch(async () => fail(`no "Acting as" switcher after signing in: ${await mainText()}`));
    await listShown().catch(async () => fail(`the desktop list did not show: ${await mainText()}`));

    // Switch to the team.
    await page.locator('#team-switch > summary').click();
    const item = page.locator(`#team-switch-menu button[data-act-as="${env.TEAM}"]`);
    await item.waitFor({ timeout: T }).catch(async () => fail(`${env.TEAM} is not in the switcher: ${await page.locator('#team-switch-menu').innerText()}`));
    await item.click();
    await page.locator(`#team-switch[data-acting="${env.TEAM}"]`).waitFor({ timeout: T })
      .catch(async () => fail(`the top bar does not act for ${env.TEAM}: ${await mainText()}`));
    out.acting = await page.locator('#team-switch').getAttribute('data-acting');
    out.role = (await page.locator('#whoami-role').innerText().catch(() => '')).trim();
    out.owner = await page.locator('#whoami-name').getAttribute('data-owner');
    await listShown().catch(async () => fail(`the team's desktop list did not show: ${await mainText()}`));
    out.list_shown = true;
    out.new_desktop_buttons = await page.locator('button[data-create="desktop"]:visible').count();
    await page.screenshot({ path: env.SHOT });

    // And back.
    await page.locator('#team-switch > summary').click();
    await page.locator('#team-switch-menu button[data-act-as=""]').click();
    await page.locator('#team-switch[data-acting=""]').waitFor({ timeout: T })
      .catch(async () => fail(`switching back did not act for the person: ${await mainText()}`));
    out.back_owner = await page.locator('#whoami-name').getAttribute('data-owner');
    out.back_role = await page.locator('#whoami-name').getAttribute('data-role');
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
