// Teams in the web console, in headless Chromium signed in with a
// person's own token (BUREAU_TOKEN): the Teams page makes team TEAM (the
// person its admin), a second team of that name shows the API's refusal,
// the team's page adds MEMBER as a viewer and lists them so; then the API
// tokens page mints a token acting for TEAM (its role select defaulting
// to the person's role, admin) as a viewer, and its secret is read. Run
// by e2e/teams_test.go:
//
//   BUREAU_URL=http://127.0.0.1:8090 BUREAU_TOKEN=bureau_… TEAM=design MEMBER=bob \
//   LIST_SHOT=/tmp/teams.png TEAM_SHOT=/tmp/team.png TOKENS_SHOT=/tmp/tokens.png \
//   node e2e/browser/teams.mjs
//
// stdout: one JSON line {"duplicate_error","members":[{member,role}],
// "bob_role","default_role","secret","token_id","listed_owner",
// "listed_role","errors"}
// On failure: a message on stderr (with the page's errors) and exit 1.
import { BUREAU_URL, TOKEN, script } from './session.mjs';

const env = process.env;
const { errors, fail, signedIn } = script('teams.mjs');
const T = 30_000;

async function main() {
  for (const k of ['TEAM', 'MEMBER', 'LIST_SHOT', 'TEAM_SHOT', 'TOKENS_SHOT']) {
    if (!env[k]) fail(`${k} is needed (and BUREAU_URL, BUREAU_TOKEN)`);
  }
  if (!BUREAU_URL || !TOKEN) fail('BUREAU_URL and BUREAU_TOKEN are needed');
  const team = env.TEAM;
  const member = env.MEMBER;
  const out = { errors };
  await signedIn('#/teams', 180_000, async (page) => {
    const text = async (sel) => (await page.locator(sel).first().innerText()).trim();
    const mainText = async () => (await page.locator('main').innerText().catch(() => '')).slice(0, 800);

    // 1. The Teams page, linked from the header: make the team.
    await page.locator('#nav-teams').waitFor({ timeout: T })
      .catch(async () => fail(`the header has no Teams link: ${await mainText()}`));
    await page.locator('#team-form').waitFor({ timeout: T })
      .catch(async () => fail(`no Teams page: ${await mainText()}`));
    await page.locator('#team-name').fill(team);
    await page.locator('#team-create').click();
    await page.waitForURL((u) => u.hash === `#/teams/${encodeURIComponent(team)}`, { timeout: T })
      .catch(async () => fail(`creating ${team} did not open its page: ${await text('#team-create-error').catch(() => '')} ${await mainText()}`));
    await page.locator('#team-members tr[data-member][data-role="admin"]').waitFor({ timeout: T })
      .catch(async () => fail(`the new team lists no admin: ${await mainText()}`));

    // 2. Add the member as a viewer.
    await page.locator('#member-name').fill(member);
    await page.locator('#member-role').selectOption('viewer');
    await page.locator('#member-add').click();
    await page.locator(`#team-members tr[data-member="${member}"]`).waitFor({ timeout: T })
      .catch(async () => fail(`${member} is not listed after adding: ${await text('#member-error').catch(() => '')} ${await mainText()}`));
    out.members = await page.$$eval('#team-members tbody tr', (rows) => rows.map((r) => ({ member: r.dataset.member, role: r.dataset.role })));
    out.bob_role = await page.locator(`#team-members tr[data-member="${member}"]`).getAttribute('data-role');
    const shown = await page.locator(`#team-members tr[data-member="${member}"] select`).inputValue().catch(() => '');
    if (shown !== out.bob_role) fail(`${member}'s role select shows ${shown}, the row says ${out.bob_role}`);
    await page.screenshot({ path: env.TEAM_SHOT, fullPage: true });

    // 3. Back on the list: the team with the person's role; a second team of
    // the same name shows the API's refusal.
    await page.locator('main a.back').click();
    await page.locator(`#teams-table tr[data-team="${team}"][data-role="admin"]`).waitFor({ timeout: T })
      .catch(async () => fail(`the Teams list does not show ${team} as admin: ${await mainText()}`));
    await page.locator('#team-name').fill(team);
    await page.locator('#team-create').click();
    await page.locator('#team-create-error').waitFor({ state: 'visible', timeout: T })
      .catch(() => fail('a second team of the same name: no message'));
    out.duplicate_error = await text('#team-create-error');
    await page.waitForTimeout(300); // the button's colour transition after busy
    await page.screenshot({ path: env.LIST_SHOT, fullPage: true });

    // 4. API tokens: a token acting for the team, as a viewer.
    await page.locator('#nav-tokens').click();
    await page.locator('#token-form').waitFor({ timeout: T });
    await page.locator('#token-owner').waitFor({ state: 'visible', timeout: T })
      .catch(async () => fail(`no "Acts for" select on the API tokens page: ${await mainText()}`));
    await page.locator('#token-name').fill(`${team} viewer from the console`);
    await page.locator('#token-owner').selectOption(team);
    await page.locator('#token-role').waitFor({ state: 'visible', timeout: T })
      .catch(() => fail('no role select for a team token'));
    out.default_role = await page.locator('#token-role').inputValue();
    await page.locator('#token-role').selectOption('viewer');
    await page.locator('#token-create').click();
    await page.locator('#token-secret-value').waitFor({ timeout: T })
      .catch(async () => fail(`no secret shown: ${await text('#token-error').catch(() => '')}`));
    out.secret = await text('#token-secret-value');
    out.token_id = await page.locator('#token-secret-value').getAttribute('data-token-id');
    const cell = page.locator(`#tokens-table tr[data-token-id="${out.token_id}"] td.tokens-acts-cell`);
    // Not listed (GET /tokens leaves the team's out): the test says so.
    if (await cell.waitFor({ timeout: 10_000 }).then(() => true, () => false)) {
      out.listed_owner = await cell.getAttribute('data-owner');
      out.listed_role = await cell.getAttribute('data-role');
    }
    await page.screenshot({ path: env.TOKENS_SHOT, fullPage: true });
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

main().catch((e) => fail(e.stack || String(e)));
