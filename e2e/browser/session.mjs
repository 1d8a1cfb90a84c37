// What the console scripts (hosts.mjs, move.mjs) share: bureau's address
// and token from the environment, failing with the page's errors, and a
// Chromium page signed in to the web console.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

export const BUREAU_URL = (process.env.BUREAU_URL || '').replace(/\/+$/, '');
export const TOKEN = process.env.BUREAU_TOKEN || process.env.TOKEN || '';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// script gives the script called name: errors (the page's, reported with
// a failure and in its output), fail (a message on stderr, exit 1), and
// signedIn, which opens the console at hash path (e.g. "#/hosts") signed
// in with TOKEN, runs body(page), and closes the browser; the whole run
// fails after limitMs.
export function script(name) {
  const errors = [];
  let failing = false;
  const fail = (msg) => {
    if (failing) return;
    failing = true;
    process.stderr.write(`${name}: FAIL: ${msg}\n`);
    if (errors.length) process.stderr.write(`${name}: page errors: ${errors.join(' | ')}\n`);
    process.exit(1);
  };
  const signedIn = async (path, limitMs, body) => {
    if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    const guard = setTimeout(() => fail(`gave up after ${limitMs / 60_000} min`), limitMs);
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
      // Signed in before any of the app's scripts run, as after a login.
      await context.addInitScript((t) => localStorage.setItem('bureau.token', t), TOKEN);
      const page = await context.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${BUREAU_URL}/${path}`, { waitUntil: 'domcontentloaded' });
      await body(page);
    } finally {
      clearTimeout(guard);
      await browser.close();
    }
  };
  return { errors, fail, signedIn };
}
