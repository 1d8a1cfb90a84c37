// Opens a live URL (URL, e.g. a share link) in headless Chromium, as a
// person who was sent it would: waits for the page's WebSocket echo
// (#ws reads "echo: …", or "websocket error"), saves SCREENSHOT and prints {"status", "url",
// "title", "h1", "ws"} as JSON. With RELOAD_AFTER_STDIN=1 it then waits
// for a line on stdin and reloads, adding "reload_status".
import fs from 'node:fs';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

const env = process.env;
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';

function fail(msg) {
  process.stderr.write(`liveurl.mjs: FAIL: ${msg}\n`);
  process.exit(1);
}

async function main() {
  if (!env.URL || !env.SCREENSHOT) fail('URL and SCREENSHOT are needed');
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const guard = setTimeout(() => fail('gave up after 120 s'), 120_000);
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 500 } });
    const resp = await page.goto(env.URL, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => !['', 'connecting'].includes(document.getElementById('ws')?.textContent || ''), null, { timeout: 60_000 })
      .catch(() => {});
    const out = {
      status: resp.status(),
      url: page.url(),
      title: await page.title(),
      h1: (await page.locator('h1').first().textContent().catch(() => '')) || '',
      ws: (await page.locator('#ws').textContent().catch(() => '')) || '',
    };
    await page.screenshot({ path: env.SCREENSHOT });
    if (env.RELOAD_AFTER_STDIN === '1') {
      process.stdout.write(JSON.stringify(out) + '\n');
      const rl = readline.createInterface({ input: process.stdin });
      await new Promise((resolve) => rl.once('line', resolve));
      rl.close();
      const again = await page.reload({ waitUntil: 'domcontentloaded' });
      process.stdout.write(JSON.stringify({ reload_status: again.status(), text: (await page.locator('body').textContent()).slice(0, 300) }) + '\n');
    } else {
      process.stdout.write(JSON.stringify(out) + '\n');
    }
  } finally {
    clearTimeout(guard);
    await browser.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
