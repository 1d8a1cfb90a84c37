// Drives bureau's MCP server with the official TypeScript MCP client
// (@modelcontextprotocol/sdk, streamable HTTP) as an agent framework
// would: BUREAU_URL, TOKEN and DESKTOP (a running desktop). Lists the
// tools, then uses files, a data snapshot, the clipboard, the screen
// size, events, a console link and URLs, leaving the desktop as it found
// it (what it creates it deletes; the clipboard's text is put back).
// Prints {"tools", "checks", "resolution", "console_url", "events"} as
// JSON; exits 1 on the first failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const { BUREAU_URL, TOKEN, DESKTOP } = process.env;

function fail(msg) {
  process.stderr.write(`mcp-client.mjs: FAIL: ${msg}\n`);
  process.exit(1);
}

async function main() {
  if (!BUREAU_URL || !TOKEN || !DESKTOP) fail('BUREAU_URL, TOKEN and DESKTOP are needed');
  const client = new Client({ name: 'bureau-e2e-ts', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', BUREAU_URL), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport);
  const checks = [];
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: { desktop: DESKTOP, ...args } });
    const text = res.content?.[0]?.type === 'text' ? res.content[0].text : '';
    if (res.isError) fail(`${name}: ${text}`);
    checks.push(name);
    return { res, text };
  };
  const expect = (cond, what) => { if (!cond) fail(what); };

  const { tools } = await client.listTools();
  const names = new Set(tools.map((t) => t.name));
  for (const want of ['get_desktop', 'exec', 'read_file', 'write_file', 'list_files', 'delete_file', 'create_snapshot', 'list_snapshots', 'revert_snapshot',
    'delete_snapshot', 'pause_desktop', 'resume_desktop', 'reboot_desktop', 'delete_desktop', 'get_clipboard', 'set_clipboard', 'get_resolution',
    'set_resolution', 'desktop_events', 'console_link', 'create_service', 'list_urls', 'share_url']) {
    expect(names.has(want), `tool ${want} missing (have ${[...names].join(', ')})`);
  }
  for (const t of tools) expect((t.description || '').length >= 30, `tool ${t.name} has no real description`);
  for (const name of ['delete_desktop', 'delete_snapshot', 'delete_file', 'revert_snapshot']) {
    expect(tools.find((t) => t.name === name).annotations?.destructiveHint === true, `${name} not marked destructive`);
  }
  for (const name of ['get_desktop', 'list_files', 'list_snapshots', 'get_clipboard', 'get_resolution', 'desktop_events']) {
    expect(tools.find((t) => t.name === name).annotations?.readOnlyHint === true, `${name} not marked read-only`);
  }
  const del = tools.find((t) => t.name === 'delete_desktop');
  expect(del.inputSchema.properties?.delete_data && !del.inputSchema.required?.includes('delete_data'), `delete_desktop's delete_data: ${JSON.stringify(del.inputSchema)}`);

  let r = await call('get_desktop', {});
  expect(JSON.parse(r.text).state === 'running', `get_desktop: ${r.text}`);
  r = await call('exec', { cmd: 'echo from-typescript' });
  expect(r.text.includes('from-typescript\\n'), `exec: ${r.text}`);
  await call('write_file', { path: 'mcp-ts/note.txt', content: 'written by the TypeScript client' });
  r = await call('list_files', { path: 'mcp-ts' });
  const listing = JSON.parse(r.text);
  expect(listing.path === '/home/agent/mcp-ts' && listing.entries.some((e) => e.name === 'note.txt' && e.type === 'file'), `list_files: ${r.text}`);
  r = await call('read_file', { path: 'mcp-ts' });
  expect(r.text.includes('note.txt'), `read_file of a directory: ${r.text}`);
  r = await call('read_file', { path: 'mcp-ts/note.txt' });
  expect(r.text === 'written by the TypeScript client', `read_file: ${r.text}`);
  await call('delete_file', { path: 'mcp-ts', recursive: true });
  r = await client.callTool({ name: 'read_file', arguments: { desktop: DESKTOP, path: 'mcp-ts/note.txt' } });
  expect(r.isError, 'the deleted file can still be read');

  await call('create_snapshot', { name: 'mcp-ts', memory: false, scope: 'data' });
  r = await call('list_snapshots', {});
  expect(r.text.includes('"mcp-ts"'), `list_snapshots: ${r.text}`);
  await call('delete_snapshot', { name: 'mcp-ts' });
  r = await call('list_snapshots', {});
  expect(!r.text.includes('"mcp-ts"'), `after delete_snapshot: ${r.text}`);

  r = await call('get_clipboard', {});
  const clipBefore = r.res.content[0].type === 'text' ? JSON.parse(r.text).text : undefined;
  await call('set_clipboard', { text: 'from TypeScript ✓' });
  r = await call('get_clipboard', {});
  expect(JSON.parse(r.text).text === 'from TypeScript ✓', `get_clipboard: ${r.text}`);
  if (clipBefore) await call('set_clipboard', { text: clipBefore });

  r = await call('get_resolution', {});
  const resolution = JSON.parse(r.text);
  expect(resolution.width >= 640 && resolution.height >= 480, `get_resolution: ${r.text}`);
  r = await call('desktop_events', { limit: 5 });
  const events = JSON.parse(r.text).events;
  expect(events.length > 0 && events.length <= 5, `desktop_events: ${r.text}`);
  expect(events.every((e, i) => i === 0 || Date.parse(e.created_at) >= Date.parse(events[i - 1].created_at)), `desktop_events not in time order: ${r.text}`);
  r = await call('console_link', { view_only: true, ttl_minutes: 1 });
  const link = JSON.parse(r.text).url;
  expect(link.startsWith(`${BUREAU_URL}/console/${DESKTOP}?token=`), `console_link: ${r.text}`);
  const page = await fetch(link);
  expect(page.status === 200, `the console link answers ${page.status}`);
  r = await call('list_urls', {});
  expect(Array.isArray(JSON.parse(r.text).urls), `list_urls: ${r.text}`);

  await client.close();
  process.stdout.write(JSON.stringify({ tools: tools.length, checks, resolution, console_url: link, events: events.length }) + '\n');
}

main().catch((e) => fail(e.stack || String(e)));
