// Signs in to the web console with single sign-on in headless Chromium,
// the way a person does: the sign-in page's single sign-on button, the
// provider's login form (tools/oidc-provider: #username, #password),
// back on the desktop list signed in; then the API tokens page: a name
// missing and an API refusal each show their message, a token is created
// and its secret read; then signs out. Run by e2e/signin_test.go:
//
//   BUREAU_URL=http://127.0.0.1:8090 OIDC_USER=bob OIDC_PASSWORD=… \
//   TOKEN_NAME='my agent' LIST_SHOT=/tmp/list.png TOKENS_SHOT=/tmp/tokens.png \
//   SIGNIN_SHOT=/tmp/signin.png node e2e/browser/signin.mjs
//
// stdout: one JSON line {"sso_button","provider_page","name","owner",
// "admin","list_shown","name_error","api_error","secret","secret_token_id",
// "listed","session_cookie","signed_out","errors"}
// On failure: a message on stderr (with the page's errors) and exit 1.
import fs from 'node:fs';
import { chromium } from 'playwright-core';
import { BUREAU_URL, script } from './session.mjs';

const env = process.env;
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const { errors, fail } = script('signin.mjs');
const T = 30_000;

async function main() {
  for (const k of ['OIDC_USER', 'OIDC_PASSWORD', 'TOKEN_NAME', 'LIST_SHOT', 'TOKENS_SHOT', 'SIGNIN_SHOT']) {
    if (!env[k]) fail(`${k} is needed (and BUREAU_URL)`);
  }
  if (!BUREAU_URL) fail('BUREAU_URL is needed');
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const guard = setTimeout(() => fail('gave up after 3 min'), 180_000);
  const out = { errors };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    const text = async (sel) => (await page.locator(sel).first().innerText()).trim();
    const mainText = async () => (await page.locator('body').innerText().catch(() => '')).slice(0, 800);

    // 1. The sign-in page offers single sign-on beside the token form.
    await page.goto(`${BUREAU_URL}/`, { waitUntil: 'domcontentloaded' });
    await page.locator('#sso-signin').waitFor({ timeout: T })
      .catch(async () => fail(`no single sign-on button on the sign-in page: ${await mainText()}`));
    out.sso_button = await text('#sso-signin');
    if (!(await page.locator('input#token').isVisible())) fail('the token form is gone beside single sign-on');
    await page.screenshot({ path: env.SIGNIN_SHOT });

    // 2. The provider's login form.
    await page.locator('#sso-signin').click();
    await page.locator('input#username').waitFor({ timeout: T })
      .catch(async () => fail(`the provider's login form did not show (at ${page.url()}): ${await mainText()}`));
    out.provider_page = page.url().replace(/\?.*/, '');
    await page.locator('input#username').fill(env.OIDC_USER);
    await page.locator('input#password').fill(env.OIDC_PASSWORD);
    await page.locator('button[type="submit"]').click();

    // 3. Back on bureau, signed in, on the desktop list.
    await page.waitForURL((u) => u.href.startsWith(`${BUREAU_URL}/`), { timeout: T })
      .catch(async () => fail(`not back on bureau (at ${page.url()}): ${await mainText()}`));
    await page.locator('#whoami-name').waitFor({ timeout: T })
      .catch(async () => fail(`not signed in after the provider (at ${page.url()}): ${await mainText()}`));
    out.name = await text('#whoami-name');
    out.owner = await page.locator('#whoami-name').getAttribute('data-owner');
    out.admin = await page.locator('#whoami-admin').count() > 0;
    await page.waitForFunction(() => document.title.startsWith('Desktops')
      && document.querySelector('nav.topnav a[data-section="list"][aria-current="page"]')
      && /Desktops/.test(document.querySelector('main h1')?.textContent || '')
      && !document.querySelector('main .loading'), null, { timeout: T })
      .catch(async () => fail(`the desktop list did not show: ${await mainText()}`));
    out.list_shown = true;
    await page.screenshot({ path: env.LIST_SHOT });

    // 4. API tokens: bad input shows why, then a token is made.
    await page.locator('#nav-tokens').click();
    await page.locator('#token-form').waitFor({ timeout: T })
      .catch(async () => fail(`no API tokens page: ${await mainText()}`));
    await page.locator('#tokens-table').waitFor({ timeout: T });
    await page.locator('#token-create').click();
    await page.locator('#token-error').waitFor({ state: 'visible', timeout: T })
      .catch(() => fail('a token without a name: no message'));
    out.name_error = await text('#token-error');
    // A desktop token for a desktop that is not there: the API's refusal.
    await page.locator('#token-name').fill(env.TOKEN_NAME);
    await page.locator('#token-scope').selectOption('desktop');
    await page.locator('#token-desktop').evaluate((sel) => { sel.replaceChildren(new Option('gone', 'd_nosuchdesktop')); sel.value = 'd_nosuchdesktop'; });
    await page.locator('#token-create').click();
    await page.waitForFunction(() => /desktop/i.test(document.querySelector('#token-error')?.textContent || '')
      && document.querySelector('#token-error')?.textContent.includes('d_nosuchdesktop'), null, { timeout: T })
      .catch(async () => fail(`no API refusal shown: ${await text('#token-error').catch(() => '')}`));
    out.api_error = await text('#token-error');
    // An owner token, 30 days.
    await page.locator('#token-scope').selectOption('owner');
    await page.locator('#token-expiry').selectOption('2592000');
    await page.locator('#token-create').click();
    await page.locator('#token-secret-value').waitFor({ timeout: T })
      .catch(async () => fail(`no secret shown: ${await text('#token-error').catch(() => '')}`));
    out.secret = await text('#token-secret-value');
    out.secret_token_id = await page.locator('#token-secret-value').getAttribute('data-token-id');
    out.warning = await text('#token-secret .tokens-warning');
    await page.locator(`#tokens-table tr[data-token-id="${out.secret_token_id}"]`).waitFor({ timeout: T })
      .catch(() => fail(`the new token ${out.secret_token_id} is not listed`));
    out.listed = await page.$$eval('#tokens-table tbody tr', (rows) => rows.map((r) => ({ id: r.dataset.tokenId, name: r.dataset.tokenName, state: r.dataset.state })));
    await page.screenshot({ path: env.TOKENS_SHOT });

    // 5. The session cookie (HttpOnly: not the page's), then sign out.
    const cookie = (await context.cookies(BUREAU_URL)).find((c) => c.name === 'bureau_session');
    if (!cookie) fail('no bureau_session cookie after signing in');
    out.session_cookie = cookie.value;
    out.cookie_http_only = cookie.httpOnly;
    out.script_sees_cookie = await page.evaluate(() => document.cookie.includes('bureau_session'));
    await page.locator('#signout').click();
    await page.locator('#sso-signin').waitFor({ timeout: T })
      .catch(async () => fail(`signing out did not show the sign-in page: ${await mainText()}`));
    out.signed_out = true;
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
