// The SDK against a real bureau and a running desktop. Runs when
// BUREAU_URL, BUREAU_TOKEN and BUREAU_DESKTOP are set (the e2e suite sets
// them); the desktop is left as it was found.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { before, describe, test } from "node:test";
import { AnthropicComputer, Bureau, BureauError, OpenAIComputer, eventJSON } from "../dist/index.js";
import { assertNoDrift } from "./drift.mjs";

const LIVE = ["BUREAU_URL", "BUREAU_TOKEN", "BUREAU_DESKTOP"].every((k) => process.env[k]);
const PREFIX = `sdk-ts-${process.pid}`;

describe("live", { skip: !LIVE && "set BUREAU_URL, BUREAU_TOKEN and BUREAU_DESKTOP to run against a server", concurrency: false }, () => {
  let b, d;
  before(async () => {
    b = new Bureau();
    d = b.desktop(process.env.BUREAU_DESKTOP);
    await d.waitReady({ timeoutMs: 300_000 }); // running, its session up: exec and files work
  });

  test("drift: the SDK's operations and interfaces are the served spec's", async () => {
    assertNoDrift(await b.openapi(), "the served spec");
  });

  test("desktop, lists, info, agent, stats", async () => {
    assert.equal((await d.refresh()).state, "running");
    assert.equal(d.data.ready, true);
    assert.equal(d.data.up, "session");
    assert.ok((await b.desktops.list()).some((x) => x.id === d.id));
    assert.ok(["kvm", "tcg"].includes((await b.info()).accelerator));
    assert.ok((await d.events(5)).length > 0);
    assert.ok((await d.agentStatus()).up);
    assert.ok((await d.stats()).memory_max_kib > 0);
  });

  test("errors carry the API's status, code and field", async () => {
    const e = await b.desktops.get("no-such-desktop").then(() => null, (e) => e);
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.status, e.code], [404, "not_found"]);
    const bad = await d.snapshots.create("bad name!").then(() => null, (e) => e);
    assert.deepEqual([bad.status, bad.code, bad.field], [422, "invalid", "name"]);
  });

  test("exec and execStream", async () => {
    const r = await d.exec("echo out; echo err >&2; exit 3");
    assert.deepEqual([r.exit_code, r.stdout, r.stderr], [3, "out\n", "err\n"]);
    assert.equal((await d.exec(["printf", "%s", "a b"])).stdout, "a b");
    const evs = [];
    for await (const ev of d.execStream("for i in 1 2 3; do echo $i; done; exit 4")) evs.push(ev);
    assert.equal(evs.filter((e) => e.event === "stdout").map((e) => eventJSON(e).data).join(""), "1\n2\n3\n");
    assert.equal(evs.at(-1).event, "exit");
    assert.equal(eventJSON(evs.at(-1)).exit_code, 4);
  });

  test("files: a streamed 4 MiB round trip, text, listing, path tricks", async () => {
    const blob = randomBytes(4 << 20);
    const path = `${PREFIX}/blob.bin`;
    try {
      let off = 0;
      const stream = new ReadableStream({ pull(c) { if (off >= blob.length) return c.close(); c.enqueue(blob.subarray(off, off + 65536)); off += 65536; } });
      assert.equal((await d.files.write(path, stream)).size, blob.length);
      const h = createHash("sha256");
      let n = 0;
      for await (const chunk of await d.files.download(path)) { h.update(chunk); n += chunk.length; }
      assert.equal(n, blob.length);
      assert.equal(h.digest("hex"), createHash("sha256").update(blob).digest("hex"));
      await d.files.write(`${PREFIX}/note.txt`, "héllo");
      assert.equal(await d.files.readText(`${PREFIX}/note.txt`), "héllo");
      assert.deepEqual((await d.files.list(PREFIX)).map((e) => e.name).sort(), ["blob.bin", "note.txt"]);
      const e = await d.files.read("../../etc/shadow").then(() => null, (e) => e);
      assert.ok(e instanceof BureauError && [403, 404, 422].includes(e.status));
    } finally {
      await d.files.delete(PREFIX, { recursive: true });
    }
    await assert.rejects(d.files.read(path), (e) => e.status === 404);
  });

  test("clipboard", async () => {
    await d.clipboard.setText("from the typescript sdk");
    assert.equal(await d.clipboard.getText(), "from the typescript sdk");
  });

  test("screen and both adapters", async () => {
    const png = await d.screenshot({ width: 640 });
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    const anthropic = new AnthropicComputer(d, [1024, 640]);
    let r = await anthropic.run({ type: "tool_use", id: "t1", name: "computer", input: { action: "mouse_move", coordinate: [100, 120] } });
    assert.equal(r.is_error, undefined);
    assert.equal(Buffer.from(r.content[0].source.data, "base64").subarray(1, 4).toString(), "PNG");
    assert.deepEqual((await anthropic.run({ id: "t2", input: { action: "cursor_position" } })).content, [{ type: "text", text: "X=100,Y=120" }]);
    assert.equal((await anthropic.run({ id: "t3", input: { action: "zoom", region: [0, 0, 512, 320] } })).content[0].type, "image");
    assert.equal((await anthropic.run({ id: "t4", input: { action: "teleport" } })).is_error, true);
    const openai = new OpenAIComputer(d, [1024, 640]);
    const out = await openai.run({ type: "computer_call", call_id: "c1", actions: [{ type: "move", x: 300, y: 200 }, { type: "wait" }] });
    assert.ok(out.output.image_url.startsWith("data:image/png;base64,iVBOR"));
    assert.deepEqual((await anthropic.run({ id: "t5", input: { action: "cursor_position" } })).content, [{ type: "text", text: "X=300,Y=200" }]);
  });

  test("a data snapshot", async () => {
    const name = `${PREFIX}-snap`;
    const sn = await d.snapshots.create(name, { scope: "data" });
    try {
      assert.deepEqual([sn.name, sn.scope], [name, "data"]);
      assert.ok((await d.snapshots.list()).some((s) => s.name === name));
    } finally {
      await d.snapshots.delete(name);
    }
    assert.ok(!(await d.snapshots.list()).some((s) => s.name === name));
  });

  test("secrets, tokens, console links, URLs", async () => {
    const sec = PREFIX.replaceAll("-", "_").toUpperCase();
    await d.secrets.set(sec, "s3cr3t-value");
    try {
      assert.ok((await d.secrets.list()).some((s) => s.name === sec));
      const r = await d.exec(`test "$${sec}" = s3cr3t-value && echo set; echo "$${sec}"`, { secrets: [sec] });
      assert.match(r.stdout, /set/);
      assert.doesNotMatch(r.stdout, /s3cr3t-value/);
    } finally {
      await d.secrets.delete(sec);
    }
    const tok = await b.tokens.create({ name: PREFIX, scope: "desktop", desktop_id: d.id, ttl_seconds: 600 });
    try {
      assert.equal((await new Bureau({ token: tok.token }).desktop(d.id).refresh()).id, d.id);
    } finally {
      await b.tokens.revoke(tok.info.id);
    }
    const link = await d.console.create({ view_only: true, ttl_seconds: 120 });
    assert.ok(link.url.startsWith(`${b.http.url}/console/${d.id}`));
    assert.ok((await d.console.list()).some((t) => t.id === link.id));
    await d.console.revoke(link.id);
    assert.ok(Array.isArray(await d.urls.list()));
  });

  test("pause → paused → resume → running; waitUntil gives up", async () => {
    await d.pause();
    assert.equal((await d.waitUntil("paused", { timeoutMs: 120_000 })).state, "paused");
    await d.resume();
    assert.equal((await d.waitUntil("running", { timeoutMs: 120_000 })).state, "running");
    assert.equal((await d.waitReady({ timeoutMs: 120_000 })).data.ready, true);
    await assert.rejects(d.waitUntil("hibernated", { timeoutMs: 1000, pollMs: 200 }), (e) => e instanceof BureauError);
  });
});
