// Opens the web console's Recordings tab of a desktop in headless Chromium
// (signed in with TOKEN) and plays a recording to its end, as a person would.
// Run by the Go e2e tests:
//
//   BUREAU_URL=http://127.0.0.1:8090 TOKEN=bureau_… DESKTOP=<desktop id> \
//   RID=<recording id> SCREENSHOT=/tmp/recording.png \
//   [STEP_SEQ=<step number> | STEP_AT=<ISO time of a step>] \
//   node e2e/browser/recordings.mjs
//
// Steps: open BUREAU_URL/#/desktops/DESKTOP/recordings (viewport 1280x1000),
// wait up to 60 s for recording RID's row in the list to be finished (done
// or failed, with a Play button), click Play, wait up to 30 s for the video
// (fetched with the token into a blob URL) to load, play it muted until the
// <video> fires `ended` (60 s), taking SCREENSHOT while it plays.
//
// With STEP_SEQ or STEP_AT: then open the Steps tab, open that step (by its
// number, or the one whose time is STEP_AT, else the last one before it),
// wait for its "Watch in recording (at m:ss)" link, click it and check the
// Recordings tab plays that recording from the step's second t (a second
// before is allowed: currentTime in [t-1.5, t+1.5] once it has seeked). With
// STEP_AT, t must also be STEP_AT − the recording's started_at (±0.5 s) when
// the link opens RID.
//
// stdout: one JSON line
//   {"played":true,"duration":<video.duration>,"ended":true,"width":<videoWidth>,
//    "height":<videoHeight>,"current_time":N,"row":{"state":"done","text":"…"},
//    "step":{"seq":N,"rid":"…","t":N,"current_time":N,"link":"…"},"errors":["page errors"]}
// ("step" only with STEP_SEQ/STEP_AT.) On failure: a message on stderr (with
// the page's errors), the screenshot of the failure, and exit 1.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const env = process.env;
const { BUREAU_URL, TOKEN, DESKTOP, RID, SCREENSHOT } = env;
const STEP_SEQ = env.STEP_SEQ ? Number(env.STEP_SEQ) : 0;
const STEP_AT = env.STEP_AT || '';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';

const errors = [];
let page = null;
let failing = false;

async function fail(msg) {
  if (failing) return new Promise(() => {}); // the first failure reports and exits
  failing = true;
  process.stderr.write(`recordings.mjs: FAIL: ${msg}\n`);
  if (errors.length) process.stderr.write(`recordings.mjs: page errors: ${errors.join(' | ')}\n`);
  if (page && SCREENSHOT) {
    await page.screenshot({ path: SCREENSHOT }).catch(() => {});
    process.stderr.write(`recordings.mjs: screenshot of the failure: ${SCREENSHOT}\n`);
  }
  process.exit(1);
}

/** What the tab says (status, errors, empty list), for failure messages. */
const tabText = () => page.evaluate(() => ['.rec-banner:not([hidden])', '.rec-stage-note', '.tab-body .empty', '.tab-body .loading']
  .map((s) => document.querySelector(s)?.innerText?.trim()).filter(Boolean).join(' / ').slice(0, 400)).catch(() => '');

/** Scrolls so the top of selector is just below the sticky top bar. */
const scrollTo = (selector) => page.evaluate((sel) => {
  const el = document.querySelector(sel);
  if (el) window.scrollTo(0, Math.max(0, el.getBoundingClientRect().top + window.scrollY - 70));
}, selector);

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP || !RID || !SCREENSHOT) await fail('BUREAU_URL, TOKEN, DESKTOP, RID and SCREENSHOT are needed');
  if (!fs.existsSync(CHROMIUM)) await fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--autoplay-policy=no-user-gesture-required'],
  });
  const guard = setTimeout(() => fail('gave up after 240 s'), 240_000);
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    // Signed in before any of the app's scripts run, as after a login.
    await context.addInitScript((t) => localStorage.setItem('bureau.token', t), TOKEN);
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    const base = `${BUREAU_URL}/#/desktops/${encodeURIComponent(DESKTOP)}`;
    await page.goto(`${base}/recordings`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.tab[data-tab="recordings"][aria-selected="true"], form.login-card', { timeout: 30_000 })
      .catch(() => fail('the Recordings tab did not open'));
    if (await page.locator('form.login-card').count()) await fail('the sign-in page shows: the token was not accepted');

    // The recording's row, finished (the list is asked for every 3 s).
    const rowSel = `.rec-table tr[data-rid="${RID}"]`;
    try {
      await page.waitForFunction((sel) => {
        const tr = document.querySelector(sel);
        return !!tr && tr.dataset.state !== 'recording' && !!tr.querySelector('.rec-play');
      }, rowSel, { timeout: 60_000 });
    } catch {
      const row = (await page.locator(rowSel).count()) ? await page.locator(rowSel).first().innerText() : '';
      const shown = await page.evaluate(() => [...document.querySelectorAll('.rec-table tr[data-rid]')].map((tr) => `${tr.dataset.rid} (${tr.dataset.state})`).join(', '));
      await fail(row ? `recording ${RID} is listed but cannot be played: ${JSON.stringify(row.replace(/\s+/g, ' ').trim())}`
        : `recording ${RID} is not in the list after 60 s; the list shows: ${shown || 'none'}; the tab says: ${JSON.stringify(await tabText())}`);
    }
    const out = {
      played: false, duration: 0, ended: false, width: 0, height: 0, current_time: 0,
      row: {
        state: await page.locator(rowSel).getAttribute('data-state'),
        text: (await page.locator(rowSel).innerText()).replace(/\s+/g, ' ').trim(),
      },
      errors,
    };

    // Play it.
    await page.locator(`${rowSel} .rec-play`).click();
    const videoSel = `video.rec-video[data-rid="${RID}"]`;
    await page.waitForSelector(videoSel, { timeout: 30_000 })
      .catch(async () => fail(`the video did not load within 30 s; the player says: ${JSON.stringify(await tabText())}`));
    await page.evaluate((sel) => {
      const v = document.querySelector(sel);
      window.__recEnded = false;
      v.addEventListener('ended', () => { window.__recEnded = true; });
      v.muted = true;
      if (v.paused && !v.ended) v.play().catch((e) => { window.__recPlayError = String(e); });
    }, videoSel);
    try {
      await page.waitForFunction((sel) => {
        const v = document.querySelector(sel);
        return !!v && (v.currentTime > 0 || v.ended || !!v.error);
      }, videoSel, { timeout: 30_000 });
    } catch {
      const why = await page.evaluate(() => window.__recPlayError || '');
      await fail(`the video does not play${why ? `: ${why}` : ''}`);
    }
    await scrollTo('.rec-player');
    await page.screenshot({ path: SCREENSHOT });
    try {
      await page.waitForFunction((sel) => {
        const v = document.querySelector(sel);
        return window.__recEnded || (!!v && (v.ended || !!v.error));
      }, videoSel, { timeout: 60_000 });
    } catch { /* reported below */ }
    Object.assign(out, await page.evaluate((sel) => {
      const v = document.querySelector(sel);
      return {
        ended: !!(window.__recEnded || v?.ended),
        duration: v?.duration ?? 0, // Infinity would mean the file has no duration: JSON null
        width: v?.videoWidth || 0,
        height: v?.videoHeight || 0,
        current_time: v?.currentTime || 0,
        media_error: v?.error ? `${v.error.code}: ${v.error.message}` : '',
      };
    }, videoSel));
    out.played = out.current_time > 0 && !out.media_error;
    if (!Number.isFinite(out.duration)) out.duration = null;
    if (out.media_error) await fail(`the browser cannot play the video: ${out.media_error}`);
    delete out.media_error;
    if (!out.ended) await fail(`the video did not end within 60 s (at ${out.current_time.toFixed(1)} s of ${out.duration})`);

    // A step the recording covers opens it at the step's time.
    if (STEP_SEQ || STEP_AT) out.step = await stepJump(base);

    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

async function stepJump(base) {
  const startedOfRID = await page.locator(`.rec-table tr[data-rid="${RID}"]`).getAttribute('data-started').catch(() => '');
  await page.goto(`${base}/steps`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('ol.steps li.step', { timeout: 60_000 }).catch(() => fail('the Steps tab shows no steps'));
  const seq = STEP_SEQ || await page.evaluate((at) => {
    const want = Date.parse(at);
    let best = 0;
    let bestAt = -Infinity;
    for (const li of document.querySelectorAll('ol.steps li.step')) {
      const t = Date.parse(li.querySelector('.step-meta time')?.getAttribute('datetime') || '');
      if (t === want) return Number(li.dataset.seq);
      if (t <= want && t > bestAt) { best = Number(li.dataset.seq); bestAt = t; }
    }
    return best;
  }, STEP_AT);
  if (!seq) await fail(`no step shown at or before ${STEP_AT}`);
  const li = `ol.steps li.step[data-seq="${seq}"]`;
  if (!(await page.locator(li).count())) await fail(`step ${seq} is not shown in the Steps tab`);
  await page.locator(`${li} .step-row`).click();
  const link = `${li} a.step-watch`;
  await page.waitForSelector(link, { timeout: 15_000 })
    .catch(async () => fail(`step ${seq} has no "Watch in recording" link (its foot says: ${JSON.stringify((await page.locator(`${li} .step-detail-foot`).innerText().catch(() => '')).trim())})`));
  const step = {
    seq,
    rid: await page.locator(link).getAttribute('data-rid'),
    t: Number(await page.locator(link).getAttribute('data-t')),
    link: (await page.locator(link).innerText()).trim(),
    current_time: 0,
  };
  if (STEP_AT && step.rid === RID && startedOfRID) {
    const want = (Date.parse(STEP_AT) - Date.parse(startedOfRID)) / 1000;
    if (Math.abs(want - step.t) > 0.5) await fail(`step ${seq}: the link opens ${step.t} s into the video, want ${want.toFixed(2)} s (STEP_AT − started_at)`);
  }
  await page.locator(link).click();
  const videoSel = `video.rec-video[data-rid="${step.rid}"]`;
  try {
    await page.waitForFunction((sel) => {
      const v = document.querySelector(sel);
      return !!v && v.readyState >= 2 && !v.seeking && (v.currentTime > 0 || !!v.error);
    }, videoSel, { timeout: 30_000 });
  } catch {
    await fail(`the link of step ${seq} did not open recording ${step.rid} in a player; the tab says: ${JSON.stringify(await tabText())}`);
  }
  step.current_time = await page.evaluate((sel) => document.querySelector(sel).currentTime, videoSel);
  await scrollTo('.rec-player');
  if (!(step.current_time >= step.t - 1.5 && step.current_time <= step.t + 1.5)) {
    await fail(`step ${seq}: the video is at ${step.current_time.toFixed(2)} s, want about ${step.t} s`);
  }
  return step;
}

main().catch((e) => fail(e.stack || String(e)));
