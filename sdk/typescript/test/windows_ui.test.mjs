// Offline tests of windows and apps, the accessibility tree and verified computer use against a fake server.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { AnthropicComputer, Bureau, BureauError, CannotVerifyError, GoneError, NoEffectError, OpenAIComputer } from "../dist/index.js";

const D = "/api/v1/desktops/d1";
const PNG = "iVBORw0KGgo=";
let server, url;
const routes = new Map();
const seen = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method, url: req.url, body: body ? JSON.parse(body) : undefined });
      const u = new URL(req.url, "http://x");
      const route = routes.get(`${req.method} ${u.pathname}`);
      const [status, out] = route ? route(seen.at(-1).body) : [404, { error: { code: "not_found", message: "no route" } }];
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

const json = (method, path, status, obj) => routes.set(`${method} ${path}`, () => [status, obj]);
const last = () => {
  const u = new URL(seen.at(-1).url, "http://x");
  return { method: seen.at(-1).method, path: u.pathname, query: Object.fromEntries(u.searchParams), body: seen.at(-1).body };
};
const desktop = () => new Bureau({ url, token: "bureau_test" }).desktop("d1");
const rejection = (p) => p.then(() => null, (e) => e);

const WINDOW = { id: "0x1e00004", title: "notes.txt - Mousepad", app: "Mousepad", instance: "mousepad", pid: 812, x: 40, y: 60, width: 800, height: 600,
  focused: true, minimized: false, maximized: false, workspace: 0, frame: { left: 1, right: 1, top: 28, bottom: 1 }, display_bounds: { x: 32, y: 48, width: 640, height: 480 } };
const SAVE = { id: "OjEuMzJ8L29yZy9hMTF5L2F0c3BpL2FjY2Vzc2libGUvMTc", role: "push button", name: "Save", states: ["enabled", "showing"], actions: ["click"],
  bounds: { x: 620, y: 512, width: 84, height: 34 }, parent: "Oj12", children: [], child_count: 0, app: "mousepad", depth: 4 };

describe("windows and apps", () => {
  test("list with a display", async () => {
    json("GET", `${D}/windows`, 200, { windows: [WINDOW], screen: { width: 1600, height: 1000, workspace: 0 } });
    const ws = await desktop().windows({ display: [1280, 800] });
    assert.deepEqual(last().query, { display: "1280x800" });
    assert.equal(ws.windows[0].display_bounds.width, 640);
    await desktop().windows();
    assert.deepEqual(last().query, {});
  });
  test("actions send the geometry given; close says whether it closed", async () => {
    json("POST", `${D}/windows/0x1e00004`, 200, WINDOW);
    const d = desktop();
    const w = await d.focusWindow("0x1e00004");
    assert.deepEqual(last().body, { action: "focus" });
    await d.moveWindow(w, 10, 20);
    assert.deepEqual([last().path, last().body], [`${D}/windows/0x1e00004`, { action: "move", x: 10, y: 20 }]);
    await d.resizeWindow(w, 640, 480);
    assert.deepEqual(last().body, { action: "resize", width: 640, height: 480 });
    await d.windowAction(w, "minimize");
    assert.deepEqual(last().body, { action: "minimize" });
    json("POST", `${D}/windows/0x1e00004`, 200, { closed: false, window: WINDOW });
    const c = await d.closeWindow(w);
    assert.deepEqual([c.closed, c.window.title], [false, "notes.txt - Mousepad"]);
  });
  test("launch", async () => {
    json("POST", `${D}/apps`, 200, { process: { id: "p-1", pid: 812 }, window: WINDOW, timed_out: false });
    const r = await desktop().launchApp({ desktopFile: "mousepad", waitS: 30 });
    assert.deepEqual(last().body, { desktop_file: "mousepad", wait_s: 30 });
    assert.deepEqual([r.process.pid, r.window.id, r.timed_out], [812, "0x1e00004", false]);
    await desktop().launchApp({ argv: ["xterm", "-e", "top"] });
    assert.deepEqual(last().body, { argv: ["xterm", "-e", "top"] });
  });
});

describe("accessibility tree", () => {
  test("tree and find send their filters", async () => {
    const listing = { nodes: [SAVE], truncated: false, screen: { width: 1600, height: 1000 } };
    json("GET", `${D}/ui`, 200, listing);
    json("GET", `${D}/ui/find`, 200, listing);
    const t = await desktop().uiTree({ window: "Mousepad", depth: 3, limit: 50, display: [1280, 800] });
    assert.deepEqual([last().path, last().query], [`${D}/ui`, { window: "Mousepad", depth: "3", limit: "50", display: "1280x800" }]);
    assert.equal(t.nodes[0].name, "Save");
    await desktop().uiFind({ role: ["button", "check box"], name: "save", states: ["enabled", "!checked"], visibleOnly: false, root: t.nodes[0], timeoutMs: 2000 });
    assert.deepEqual([last().path, last().query], [`${D}/ui/find`, { role: "button,check box", name: "save", states: "enabled,!checked", visible_only: "false", root: SAVE.id, timeout_ms: "2000" }]);
  });
  test("an action, and a stale id rejects with GoneError", async () => {
    const path = `${D}/ui/${SAVE.id}`;
    json("POST", path, 200, { node: SAVE, changed: true, gone: false, performed: "click", screen: { width: 1600, height: 1000 } });
    const r = await desktop().uiAction(SAVE.id);
    assert.deepEqual(last().body, { action: "click" });
    assert.deepEqual([r.changed, r.performed, r.node.name], [true, "click", "Save"]);
    await desktop().uiAction(r.node, "set_value", { value: "notes.txt", display: [1280, 800] });
    assert.deepEqual([last().query, last().body], [{ display: "1280x800" }, { action: "set_value", value: "notes.txt" }]);
    json("POST", path, 410, { error: { code: "gone", message: "the element is no longer there" } });
    const e = await rejection(desktop().uiAction(SAVE.id));
    assert.ok(e instanceof GoneError && e instanceof BureauError);
    assert.deepEqual([e.status, e.code], [410, "gone"]);
  });
});

describe("verified computer use", () => {
  test("expect, verifyMs and elements", async () => {
    json("POST", `${D}/computer`, 200, { results: [{ action: "left_click", duration_ms: 30, screen_changed: true, changed_after_ms: 40, element: { id: SAVE.id, role: "push button", name: "Save", changed: true } }],
      display: { width: 1600, height: 1000 }, screen: { width: 1600, height: 1000 } });
    const r = await desktop().computer({ action: "left_click", element: SAVE }, { expect: "change", verifyMs: 800 });
    assert.deepEqual(last().body, { action: "left_click", element: SAVE.id, expect: "change", verify_ms: 800 });
    assert.deepEqual([r.results[0].screen_changed, r.results[0].element.changed], [true, true]);
    await desktop().computer([{ action: "left_click", element: { role: "button", name: "Save" } }, { type: "move", element: SAVE }], { verifyMs: 0 });
    assert.deepEqual(last().body, { actions: [{ action: "left_click", element: { role: "button", name: "Save" } }, { type: "move", element: SAVE.id }], verify_ms: 0 });
  });
  test("no_effect and cannot_verify", async () => {
    json("POST", `${D}/computer`, 422, { error: { code: "no_effect", index: 1, message: "actions[1] key: the screen did not change within 500 ms" } });
    let e = await rejection(desktop().computer([{ action: "left_click", coordinate: [1, 2] }, { action: "key", text: "F12" }], { expect: "change" }));
    assert.ok(e instanceof NoEffectError);
    assert.deepEqual([e.status, e.index], [422, 1]);
    json("POST", `${D}/computer`, 409, { error: { code: "cannot_verify", message: "no live framebuffer" } });
    e = await rejection(desktop().computer({ action: "key", text: "a" }, { expect: "change" }));
    assert.ok(e instanceof CannotVerifyError && e.status === 409);
  });
});

describe("adapters verify", () => {
  let changed = false;
  before(() => {
    routes.set(`POST ${D}/computer`, (req) => [200, {
      results: (req.actions ?? [req]).map((a) => ({ action: a.action ?? a.type, duration_ms: 1, screen_changed: changed })),
      screenshot: { media_type: "image/png", data: PNG, width: 1, height: 1 }, display: req.display, screen: { width: 1920, height: 1200 },
    }]);
  });
  test("Anthropic says when the screen did not change", async () => {
    changed = false;
    const tool = new AnthropicComputer(desktop(), [1024, 640], "computer_20251124", "computer", { expect: "change", verifyMs: 700 });
    let r = await tool.run({ id: "t1", input: { action: "left_click", coordinate: [5, 6] } });
    assert.deepEqual([last().body.expect, last().body.verify_ms], ["change", 700]);
    assert.deepEqual(r.content.slice(1), [{ type: "text", text: "the screen did not change after left_click" }]);
    r = await tool.run({ id: "t2", input: { action: "mouse_move", coordinate: [5, 6] } });
    assert.equal(r.content.length, 1);
    changed = true;
    r = await tool.run({ id: "t3", input: { action: "left_click", coordinate: [5, 6] } });
    assert.deepEqual(r.content.map((c) => c.type), ["image"]);
    await new AnthropicComputer(desktop()).run({ id: "t4", input: { action: "key", text: "a" } });
    assert.deepEqual([last().body.expect, last().body.verify_ms], [undefined, undefined]);
  });
  test("OpenAI keeps the result", async () => {
    changed = false;
    const tool = new OpenAIComputer(desktop(), [1280, 800], "linux", { verifyMs: 300 });
    await tool.run({ call_id: "c1", actions: [{ type: "click", x: 1, y: 2, button: "left" }, { type: "move", x: 3, y: 4 }] });
    assert.equal(last().body.verify_ms, 300);
    assert.deepEqual(tool.unchanged(), ["click"]);
    assert.equal(tool.lastResult.results[0].screen_changed, false);
  });
});
