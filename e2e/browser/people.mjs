// Two people in two console pages of one desktop, driven one command at a
// time: the Go e2e test of docs/people.md (e2e/people_test.go) takes over,
// hands back, types, answers and decides the agent's requests through the
// console page's control bar and requests panel, as people would.
//
//   CONSOLE_URL_A='http://…/console/ID?token=…' CONSOLE_URL_B='http://…' \
//   [IGNORE_HTTPS_ERRORS=1] [CHROMIUM=/usr/bin/chromium] node e2e/browser/people.mjs
//
// One headless Chromium, two independent browser contexts (viewport
// 1280x860): person "A" opens CONSOLE_URL_A, "B" CONSOLE_URL_B. Once both
// consoles are connected (body[data-state=connected], the noVNC canvas is
// there and #control-bar shows who holds input) it prints
// {"ok":true,"ready":true}; if they are not within 120 s,
// {"ok":false,"error":"…"} and exits 1.
//
// Then it reads commands from stdin, one JSON object a line, and answers
// each with one JSON line on stdout ({"ok":false,"error":"…"} when it
// failed; it goes on with the next):
//
//   {"do":"state","who":"A"}  → {"ok":true,"status","viewers","badge","title","holder",
//                                "requests":[{"id","kind","text"}]} (read just after a fresh poll)
//   {"do":"take","who":"A"}, {"do":"handback","who":"A"}
//                             → clicks #take-over / #hand-back, waits (15 s) until the bar
//                               says so; {"ok":true,"status","clicked_at_ms"}
//   {"do":"type","who":"A","text":"…"}
//                             → focuses the noVNC canvas without clicking the desktop and
//                               types (60 ms a key); {"ok":true}
//   {"do":"key","who":"A","key":"Return"}
//                             → presses a key (X names like Return, BackSpace or
//                               Playwright's; combinations "ctrl+s")
//   {"do":"wait_request","who":"B","kind":"help"|"approval","timeout_ms":60000}
//                             → waits for a pending request of that kind that this script
//                               has not answered or decided yet;
//                               {"ok":true,"id","kind","text","badge","title"}
//   {"do":"answer","who":"B","id":"req_…","choice":"blue"} (or "answer":"text")
//   {"do":"approve"|"deny","who":"A","id":"req_…","reason":"…"}
//                             → clicks in the request's item, waits (30 s) until it is gone;
//                               {"ok":true,"clicked_at_ms"}; the API's error shown in the
//                               item is the command's error
//   {"do":"screenshot","who":"A","path":"/tmp/x.png"}
//   {"do":"web","token":"bureau_…","desktop":"ID","wait_for":"needs help","path":"/tmp/w.png"}
//                             → opens the web console's desktop list (a third person, signed
//                               in with token), waits (30 s) until the desktop's card shows
//                               wait_for, screenshots the page to path;
//                               {"ok":true,"text":<the card's text>}
//   {"do":"quit"}             → {"ok":true}, closes the browser, exits 0 (so does the end of stdin)
//
// stderr: what it does and the pages' errors, prefixed with the person.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const env = process.env;
const URLS = { A: env.CONSOLE_URL_A || '', B: env.CONSOLE_URL_B || '' };
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const IGNORE_HTTPS_ERRORS = env.IGNORE_HTTPS_ERRORS === '1';
const READY_TIMEOUT_MS = 120_000;
const CONTROL_TIMEOUT_MS = 15_000;
const DECIDE_TIMEOUT_MS = 30_000;

const log = (msg) => process.stderr.write(`people.mjs: ${msg}\n`);
const reply = (obj) => new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + '\n', resolve));

let browser = null;
const pages = {}; // "A" | "B" -> Page
const handled = new Set(); // request ids this script answered or decided

// X keysym names (as the API's key action takes them) → Playwright's.
const KEYS = {
  return: 'Enter', enter: 'Enter', kp_enter: 'Enter', backspace: 'Backspace', tab: 'Tab',
  escape: 'Escape', esc: 'Escape', delete: 'Delete', space: 'Space', up: 'ArrowUp',
  down: 'ArrowDown', left: 'ArrowLeft', right: 'ArrowRight', home: 'Home', end: 'End',
  page_up: 'PageUp', prior: 'PageUp', page_down: 'PageDown', next: 'PageDown', insert: 'Insert',
  ctrl: 'Control', control: 'Control', alt: 'Alt', shift: 'Shift', super: 'Meta', meta: 'Meta', cmd: 'Meta',
};
function playwrightKey(k) {
  return String(k).split('+').map((part) => {
    const m = KEYS[part.toLowerCase()];
    if (m) return m;
    if (/^f\d{1,2}$/i.test(part)) return part.toUpperCase();
    return part;
  }).join('+');
}

function pageOf(cmd) {
  const p = pages[cmd.who];
  if (!p) throw new Error(`who must be "A" or "B", not ${JSON.stringify(cmd.who)}`);
  return p;
}

// What the console page shows, read in the page.
function readState(page) {
  return page.evaluate(() => {
    const text = (id) => (document.getElementById(id)?.textContent || '').trim();
    return {
      status: text('control-status'),
      holder: document.getElementById('control-bar')?.dataset.holder || '',
      viewers: text('viewers'),
      badge: text('requests-badge'),
      title: document.title,
      requests: [...document.querySelectorAll('#requests [data-request-id]')].map((li) => ({
        id: li.dataset.requestId,
        kind: li.dataset.kind,
        text: (li.querySelector('.req-text')?.textContent || '').trim(),
      })),
    };
  });
}

// Asks the page to read the console state now (instead of waiting for its
// 2 s poll) and waits for it to be shown.
async function fresh(page) {
  await page.evaluate(() => window.bureauPeople && window.bureauPeople.refresh()).catch(() => {});
}

async function open(who) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ignoreHTTPSErrors: IGNORE_HTTPS_ERRORS });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') log(`${who}: [${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => log(`${who}: [pageerror] ${e.message}`));
  page.on('requestfailed', (r) => log(`${who}: [requestfailed] ${r.url().replace(/token=[^&]+/, 'token=…')} ${r.failure()?.errorText || ''}`));
  const resp = await page.goto(URLS[who], { waitUntil: 'domcontentloaded', timeout: 30_000 });
  if (!resp || resp.status() !== 200) throw new Error(`${who}: the console page answered ${resp ? resp.status() : 'nothing'}`);
  try {
    await page.waitForFunction(() => ['connected', 'ended'].includes(document.body.dataset.state), null, { timeout: READY_TIMEOUT_MS, polling: 250 });
  } catch (e) {
    const st = await page.evaluate(() => `${document.body.dataset.state}: ${document.getElementById('state-detail')?.textContent || ''}`).catch(() => '?');
    throw new Error(`${who}: not connected after ${READY_TIMEOUT_MS / 1000} s (${st})`);
  }
  const st = await page.evaluate(() => `${document.body.dataset.state}: ${document.getElementById('state-detail')?.textContent || ''}`);
  if (!st.startsWith('connected')) throw new Error(`${who}: console ${st}`);
  await page.waitForSelector('#screen canvas', { timeout: 30_000 });
  try {
    await page.waitForFunction(() => {
      const bar = document.getElementById('control-bar');
      return bar && !bar.hidden && bar.dataset.holder && document.getElementById('control-status').textContent.trim() !== '';
    }, null, { timeout: 30_000, polling: 250 });
  } catch (e) {
    throw new Error(`${who}: the control bar shows no status (GET …/console/state answered?)`);
  }
  pages[who] = page;
  log(`${who}: connected; ${JSON.stringify((await readState(page)).status)}`);
}

async function waitHolder(page, want) {
  try {
    await page.waitForFunction((w) => {
      const h = document.getElementById('control-bar')?.dataset.holder;
      return w === 'you' ? h === 'you' : h !== 'you';
    }, want, { timeout: CONTROL_TIMEOUT_MS, polling: 100 });
  } catch (e) {
    const s = await readState(page);
    const shown = await page.evaluate(() => document.getElementById('control-error')?.textContent || '');
    throw new Error(`the bar still says ${JSON.stringify(s.status)}${shown ? ` (${shown})` : ''}`);
  }
}

async function control(page, which) {
  const btn = page.locator(which === 'take' ? '#take-over' : '#hand-back');
  try {
    await btn.waitFor({ state: 'visible', timeout: 5_000 });
  } catch (e) {
    const s = await readState(page);
    throw new Error(`no ${which === 'take' ? 'Take over' : 'Hand back'} button (the bar says ${JSON.stringify(s.status)})`);
  }
  const clickedAt = Date.now();
  await btn.click();
  await waitHolder(page, which === 'take' ? 'you' : 'not-you');
  const s = await readState(page);
  return { ok: true, status: s.status, clicked_at_ms: clickedAt };
}

// focusScreen gives the noVNC canvas the keyboard without a click (a click
// would reach the desktop, and move its focus).
async function focusScreen(page) {
  const ok = await page.evaluate(() => {
    const r = window.bureauRFB;
    const c = document.querySelector('#screen canvas');
    if (!r || !c) return false;
    r.focus();
    return document.activeElement === c;
  });
  if (!ok) throw new Error('the noVNC canvas did not take the keyboard focus');
}

async function openPanel(page) {
  if (await page.locator('#requests').isHidden()) await page.click('#requests-toggle');
}

async function waitRequest(page, kind, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const left = until - Date.now();
    if (left <= 0) {
      const s = await readState(page);
      throw new Error(`no pending ${kind} request after ${timeoutMs / 1000} s (shown: ${JSON.stringify(s.requests)})`);
    }
    let id;
    try {
      const h = await page.waitForFunction(({ kind, skip }) => {
        for (const li of document.querySelectorAll('#requests [data-request-id]')) {
          if (li.dataset.kind === kind && !skip.includes(li.dataset.requestId)) return li.dataset.requestId;
        }
        return '';
      }, { kind, skip: [...handled] }, { timeout: left, polling: 200 });
      id = await h.jsonValue();
    } catch (e) {
      continue; // timed out: reported above
    }
    // Still pending after a fresh read (not one decided a moment ago)?
    await fresh(page);
    const s = await readState(page);
    const r = s.requests.find((x) => x.id === id);
    if (r) return { ok: true, id, kind: r.kind, text: r.text, badge: s.badge, title: s.title };
  }
}

async function decide(page, cmd) {
  if (!cmd.id) throw new Error('no id');
  const item = page.locator(`#requests [data-request-id="${String(cmd.id).replace(/["\\]/g, '\\$&')}"]`);
  if (!(await item.count())) await fresh(page);
  try {
    await item.waitFor({ state: 'attached', timeout: 10_000 });
  } catch (e) {
    throw new Error(`request ${cmd.id} is not shown (shown: ${JSON.stringify((await readState(page)).requests)})`);
  }
  await openPanel(page);
  let btn;
  if (cmd.do === 'answer') {
    if (cmd.choice !== undefined) {
      const choices = item.locator('button[data-choice]');
      const n = await choices.count();
      for (let i = 0; i < n && !btn; i++) {
        if ((await choices.nth(i).getAttribute('data-choice')) === String(cmd.choice)) btn = choices.nth(i);
      }
      if (!btn) throw new Error(`request ${cmd.id} has no choice ${JSON.stringify(cmd.choice)}`);
    } else {
      const input = item.locator('input[data-field=answer]');
      if (!(await input.count())) throw new Error(`request ${cmd.id} has no answer box (it has choices?)`);
      await input.fill(String(cmd.answer ?? ''));
      btn = item.locator('button[data-act=answer]');
    }
  } else {
    if (cmd.reason !== undefined) await item.locator('input[data-field=reason]').fill(String(cmd.reason));
    btn = item.locator(`button[data-act=${cmd.do}]`);
  }
  await btn.scrollIntoViewIfNeeded();
  const clickedAt = Date.now();
  await btn.click();
  // Gone (the API took it) or an error shown in the item.
  const h = await page.waitForFunction((id) => {
    const li = [...document.querySelectorAll('#requests [data-request-id]')].find((x) => x.dataset.requestId === id);
    if (!li) return { gone: true };
    const err = li.querySelector('.req-error')?.textContent || '';
    return err ? { error: err } : false;
  }, String(cmd.id), { timeout: DECIDE_TIMEOUT_MS, polling: 100 }).catch(() => null);
  const r = h ? await h.jsonValue() : null;
  if (!r) throw new Error(`request ${cmd.id} still shown ${DECIDE_TIMEOUT_MS / 1000} s after the click`);
  if (r.error) throw new Error(`the console says: ${r.error}`);
  handled.add(String(cmd.id));
  return { ok: true, clicked_at_ms: clickedAt };
}

async function run(cmd) {
  switch (cmd.do) {
    case 'state': {
      const page = pageOf(cmd);
      await fresh(page);
      return { ok: true, ...(await readState(page)) };
    }
    case 'take':
    case 'handback':
      return control(pageOf(cmd), cmd.do);
    case 'type': {
      const page = pageOf(cmd);
      await focusScreen(page);
      await page.keyboard.type(String(cmd.text ?? ''), { delay: 60 });
      await page.waitForTimeout(300); // noVNC sends as it goes; let the last keys out
      return { ok: true };
    }
    case 'key': {
      const page = pageOf(cmd);
      await focusScreen(page);
      await page.keyboard.press(playwrightKey(cmd.key));
      await page.waitForTimeout(200);
      return { ok: true };
    }
    case 'wait_request': {
      const kind = cmd.kind || 'help';
      if (kind !== 'help' && kind !== 'approval') throw new Error(`kind must be help or approval, not ${JSON.stringify(kind)}`);
      return waitRequest(pageOf(cmd), kind, Number(cmd.timeout_ms) || 60_000);
    }
    case 'answer':
    case 'approve':
    case 'deny':
      return decide(pageOf(cmd), cmd);
    case 'screenshot': {
      if (!cmd.path) throw new Error('no path');
      fs.mkdirSync(path.dirname(path.resolve(cmd.path)), { recursive: true });
      await pageOf(cmd).screenshot({ path: cmd.path });
      return { ok: true, path: cmd.path };
    }
    case 'web':
      return web(cmd);
    default:
      throw new Error(`unknown command ${JSON.stringify(cmd.do)}`);
  }
}

// web opens the web console's desktop list signed in with cmd.token (a
// page of its own, kept for later commands) and reads the desktop's card.
async function web(cmd) {
  if (!cmd.token || !cmd.desktop) throw new Error('web needs token and desktop');
  if (!pages.web) {
    const base = new URL(URLS.A).origin;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ignoreHTTPSErrors: IGNORE_HTTPS_ERRORS });
    await context.addInitScript((t) => localStorage.setItem('bureau.token', t), String(cmd.token));
    pages.web = await context.newPage();
    pages.web.on('pageerror', (e) => log(`web: page error: ${e.message}`));
    await pages.web.goto(`${base}/#/`, { waitUntil: 'domcontentloaded' });
  }
  const page = pages.web;
  const want = String(cmd.wait_for || '');
  const deadline = Date.now() + 30_000;
  let text = '';
  for (;;) {
    text = await page.evaluate((id) => {
      const el = [...document.querySelectorAll('[data-id], [data-desktop], [data-desktop-id]')]
        .find((e) => (e.dataset.id || e.dataset.desktop || e.dataset.desktopId) === id);
      return el ? el.innerText : '';
    }, String(cmd.desktop));
    if (text && text.includes(want)) break;
    if (Date.now() > deadline) throw new Error(`the web console's card for ${cmd.desktop} shows ${JSON.stringify(text.slice(0, 300))}, not ${JSON.stringify(want)}`);
    await page.waitForTimeout(500);
  }
  if (cmd.path) await page.screenshot({ path: cmd.path });
  return { ok: true, text };
}

async function quit(code) {
  await browser?.close().catch(() => {});
  process.exit(code);
}

async function main() {
  if (!URLS.A || !URLS.B) throw new Error('CONSOLE_URL_A and CONSOLE_URL_B are needed');
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found (apt-get install -y chromium)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  await Promise.all([open('A'), open('B')]);
  // Both are watching now: each page shows the other before "ready".
  await Promise.all([fresh(pages.A), fresh(pages.B)]);
  await reply({ ok: true, ready: true });

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      await reply({ ok: false, error: `not JSON: ${line.slice(0, 200)}` });
      continue;
    }
    if (cmd.do === 'quit') {
      await reply({ ok: true });
      await quit(0);
    }
    try {
      const r = await run(cmd);
      log(`${cmd.do} ${cmd.who || ''}: ok`);
      await reply(r);
    } catch (e) {
      const msg = (e && e.message) || String(e);
      log(`${cmd.do} ${cmd.who || ''}: ${msg}`);
      await reply({ ok: false, error: msg });
    }
  }
  await quit(0); // stdin ended
}

main().catch(async (e) => {
  const msg = (e && e.message) || String(e);
  log(`FAIL: ${e && e.stack ? e.stack : msg}`);
  await reply({ ok: false, ready: false, error: msg });
  await quit(1);
});
