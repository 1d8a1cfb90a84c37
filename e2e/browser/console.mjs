// Drives the bureau console page in headless Chromium and checks that the
// desktop shows up. Run by the Go e2e tests:
//
//   BUREAU_URL=http://127.0.0.1:8090 CONSOLE_URL='http://…/console/ID?token=…' \
//   VIEW_ONLY=1|'' TYPE_TEXT='echo hi' SCREENSHOT=/tmp/console.png \
//   CLIP_EXPECT='copied on the desktop' CLIP_SEND='sent from the page' \
//   IGNORE_HTTPS_ERRORS=1 (a test CA's certificate) node e2e/browser/console.mjs
//
// Steps: open CONSOLE_URL (viewport 1280x860), wait up to 120 s for
// body[data-state=connected], poll the noVNC canvas up to 60 s until it is not
// blank, screenshot the page to SCREENSHOT, then if TYPE_TEXT is set click the
// canvas centre, type it (60 ms a key) and press Enter. Then if CLIP_EXPECT
// is set open the clipboard panel, wait up to 20 s for it to show that text
// from the desktop, screenshot the page to SCREENSHOT with "-clipboard"
// before ".png", and if CLIP_SEND is set send that text to the desktop.
//
// Then if TERMINAL_TEXT is set: click #terminal-tab, wait up to 60 s for
// body[data-terminal=open], type TERMINAL_TEXT and Enter into the terminal,
// wait up to 30 s for its text to contain TERMINAL_EXPECT, screenshot the
// page to SCREENSHOT with "-terminal" before ".png" and switch back.
//
// stdout: one JSON line
//   {"state":"connected","nonblank":true,"distinct_colors":N,"view_only_badge":bool,"typed":bool,
//    "clip_seen":bool,"clip_sent":"the panel's message","terminal_seen":bool,"terminal_tab":bool}
// On failure: a message on stderr (with the page's console output) and exit 1.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

const env = process.env;
const CONSOLE_URL = env.CONSOLE_URL || '';
const BUREAU_URL = env.BUREAU_URL || '';
const VIEW_ONLY = env.VIEW_ONLY === '1' || env.VIEW_ONLY === 'true';
const TYPE_TEXT = env.TYPE_TEXT || '';
const SCREENSHOT = env.SCREENSHOT || '';
const CLIP_EXPECT = env.CLIP_EXPECT || '';
const CLIP_SEND = env.CLIP_SEND || '';
const TERMINAL_TEXT = env.TERMINAL_TEXT || '';
const TERMINAL_EXPECT = env.TERMINAL_EXPECT || '';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const IGNORE_HTTPS_ERRORS = env.IGNORE_HTTPS_ERRORS === '1';

const CONNECT_TIMEOUT_MS = 120_000;
const NONBLANK_TIMEOUT_MS = 60_000;
const OVERALL_TIMEOUT_MS = 300_000;

const pageLog = [];
const log = (msg) => process.stderr.write(`console.mjs: ${msg}\n`);

function fail(msg) {
  process.stderr.write(`console.mjs: FAIL: ${msg}\n`);
  if (pageLog.length) {
    process.stderr.write('console.mjs: page output (last 40 lines):\n');
    for (const l of pageLog.slice(-40)) process.stderr.write(`  ${l}\n`);
  }
  process.exit(1);
}

// Reads the noVNC canvas' pixels in the page (every 2nd pixel in each
// direction) and counts distinct colours and non-black pixels.
async function canvasStats(page) {
  return page.evaluate(() => {
    const c = document.querySelector('#screen canvas');
    if (!c || !c.width || !c.height) return { ok: false, why: 'no canvas yet' };
    const ctx = c.getContext('2d');
    if (!ctx) return { ok: false, why: 'canvas has no 2d context' };
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    const colours = new Set();
    let sampled = 0;
    let nonBlack = 0;
    const step = 2;
    for (let y = 0; y < c.height; y += step) {
      for (let x = 0; x < c.width; x += step) {
        const i = (y * c.width + x) * 4;
        const r = data[i], g = data[i + 1], b = data[i + 2];
        sampled++;
        if (r + g + b > 24) nonBlack++;
        if (colours.size < 100000) colours.add((r << 16) | (g << 8) | b);
      }
    }
    return { ok: true, width: c.width, height: c.height, distinct: colours.size, nonBlackRatio: nonBlack / sampled };
  });
}

async function main() {
  if (!CONSOLE_URL) fail('CONSOLE_URL is not set');
  if (!SCREENSHOT) fail('SCREENSHOT is not set');
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found (apt-get install -y chromium)`);
  let target;
  try {
    target = new URL(CONSOLE_URL, BUREAU_URL || undefined).toString();
  } catch (e) {
    fail(`bad CONSOLE_URL ${CONSOLE_URL}: ${e.message}`);
  }

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  const guard = setTimeout(() => fail(`gave up after ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS);
  try {
    // A proxy's private test CA (e2e/proxy_test.go) is not in the browser's store.
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ignoreHTTPSErrors: IGNORE_HTTPS_ERRORS });
    const page = await context.newPage();
    page.on('console', (m) => pageLog.push(`[${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => pageLog.push(`[pageerror] ${e.message}`));
    page.on('requestfailed', (r) => pageLog.push(`[requestfailed] ${r.url().replace(/token=[^&]+/, 'token=…')} ${r.failure()?.errorText || ''}`));

    const resp = await page.goto(target, { waitUntil: 'domcontentloaded', timeout: 30_000 });
    if (!resp) fail('no response for the console page');
    if (resp.status() !== 200) fail(`console page answered HTTP ${resp.status()}: ${(await resp.text()).slice(0, 200)}`);

    // Wait for connected; stop early when the session has ended.
    try {
      await page.waitForFunction(
        () => ['connected', 'ended'].includes(document.body.dataset.state),
        null, { timeout: CONNECT_TIMEOUT_MS, polling: 250 });
    } catch (e) {
      const st = await page.evaluate(() => `${document.body.dataset.state}: ${document.getElementById('state-detail')?.textContent || ''}`).catch(() => '?');
      fail(`not connected after ${CONNECT_TIMEOUT_MS / 1000} s (state ${st})`);
    }
    const state = await page.evaluate(() => document.body.dataset.state);
    if (state !== 'connected') {
      const detail = await page.evaluate(() => document.getElementById('state-detail')?.textContent || '');
      fail(`console state is ${state}: ${detail}`);
    }
    log('connected');

    // Poll until the framebuffer shows something.
    let stats = { ok: false, why: 'not checked' };
    let nonblank = false;
    const until = Date.now() + NONBLANK_TIMEOUT_MS;
    while (Date.now() < until) {
      stats = await canvasStats(page);
      if (stats.ok && stats.distinct >= 4 && stats.nonBlackRatio >= 0.01) { nonblank = true; break; }
      await page.waitForTimeout(1000);
    }
    if (!nonblank) {
      fail(`canvas still blank after ${NONBLANK_TIMEOUT_MS / 1000} s (${JSON.stringify(stats)})`);
    }
    log(`canvas ${stats.width}x${stats.height}, ${stats.distinct} colours, ${(stats.nonBlackRatio * 100).toFixed(1)}% non-black`);

    const badge = await page.isVisible('#view-only-badge');
    const rfbViewOnly = await page.evaluate(() => !!(window.bureauRFB && window.bureauRFB.viewOnly));
    if (VIEW_ONLY && !(badge && rfbViewOnly)) fail(`view-only token but badge visible=${badge}, rfb.viewOnly=${rfbViewOnly}`);
    if (!VIEW_ONLY && (badge || rfbViewOnly)) fail(`full-access token but badge visible=${badge}, rfb.viewOnly=${rfbViewOnly}`);

    // Let a frame settle before the screenshot.
    await page.waitForTimeout(500);
    fs.mkdirSync(path.dirname(path.resolve(SCREENSHOT)), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    log(`screenshot ${SCREENSHOT}`);

    let typed = false;
    if (TYPE_TEXT) {
      const box = await page.locator('#screen canvas').boundingBox();
      if (!box) fail('canvas has no bounding box');
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await page.waitForTimeout(300);
      await page.keyboard.type(TYPE_TEXT, { delay: 60 });
      await page.keyboard.press('Enter');
      // Give noVNC time to flush the last key events before closing.
      await page.waitForTimeout(1000);
      const after = await page.evaluate(() => document.body.dataset.state);
      if (after !== 'connected') fail(`console ${after} while typing`);
      typed = true;
      log(`typed ${TYPE_TEXT.length} characters`);
    }

    let clipSeen = false;
    let clipSent = '';
    if (CLIP_EXPECT) {
      await page.click('#btn-clipboard');
      try {
        await page.waitForFunction((want) => document.getElementById('clip-in').value === want,
          CLIP_EXPECT, { timeout: 20_000, polling: 250 });
        clipSeen = true;
      } catch (e) {
        log(`clipboard panel shows ${JSON.stringify(await page.inputValue('#clip-in'))}`);
      }
      await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + '-clipboard.png' });
      if (CLIP_SEND) {
        await page.fill('#clip-out', CLIP_SEND);
        await page.click('#btn-clip-send');
        try {
          await page.waitForFunction(() => document.getElementById('clip-sent').textContent !== '', null, { timeout: 20_000 });
        } catch (e) { /* reported empty */ }
        clipSent = await page.textContent('#clip-sent');
      }
    }

    // The Terminal tab is offered to interactive consoles only.
    const terminalTab = await page.isVisible('#terminal-tab');
    let terminalSeen = false;
    if (TERMINAL_TEXT) {
      if (!terminalTab) fail('no Terminal tab on an interactive console');
      await page.click('#terminal-tab');
      await page.waitForSelector('body[data-terminal=open]', { timeout: 60_000 });
      await page.click('#terminal');
      await page.keyboard.type(TERMINAL_TEXT, { delay: 20 });
      await page.keyboard.press('Enter');
      const text = () => page.evaluate(() => {
        const t = window.bureauTerminal;
        const lines = [];
        for (let i = 0; t && i < t.buffer.active.length; i++) lines.push(t.buffer.active.getLine(i).translateToString(true));
        return lines.join('\n');
      });
      try {
        await page.waitForFunction((want) => {
          const t = window.bureauTerminal;
          for (let i = 0; t && i < t.buffer.active.length; i++) {
            if (t.buffer.active.getLine(i).translateToString(true).includes(want)) return true;
          }
          return false;
        }, TERMINAL_EXPECT, { timeout: 30_000, polling: 250 });
        terminalSeen = true;
      } catch (e) {
        log(`terminal shows ${JSON.stringify(await text())}`);
      }
      await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + '-terminal.png' });
      await page.click('#terminal-tab');
    }

    process.stdout.write(JSON.stringify({
      state,
      nonblank,
      distinct_colors: stats.distinct,
      view_only_badge: badge,
      typed,
      clip_seen: clipSeen,
      clip_sent: clipSent,
      terminal_seen: terminalSeen,
      terminal_tab: terminalTab,
    }) + '\n');
  } finally {
    clearTimeout(guard);
    await browser.close().catch(() => {});
  }
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
