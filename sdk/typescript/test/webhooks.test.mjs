// Offline tests of webhooks: verifyWebhook, and bureau.webhooks against a fake server.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, test } from "node:test";
import { Bureau, BureauError, verifyWebhook, WebhookVerificationError } from "../dist/index.js";
import { jsonServer } from "./fake.mjs";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// A signature computed here, per the spec, independently of the SDK.
const signed = (secret, id, ts, body) =>
  "v1," + createHmac("sha256", Buffer.from(secret.split("_")[1], "base64")).update(`${id}.${ts}.${body}`).digest("base64");

describe("verifyWebhook", () => {
  const body = '{"type":"desktop.stopped","timestamp":"2026-01-02T03:04:05Z","data":{"owner":"alice","message":"stopped"}}';
  const now = () => Math.floor(Date.now() / 1000);
  const headers = (ts = now(), sig = signed(SECRET, "msg_1", ts, body)) => ({ "Webhook-Id": "msg_1", "Webhook-Timestamp": String(ts), "Webhook-Signature": sig });

  test("the spec's test vector", () => {
    assert.equal(signed(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}'), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    const h = new Headers({ "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" });
    assert.throws(() => verifyWebhook(SECRET, h, '{"test": 2432232314}'), WebhookVerificationError);
    assert.deepEqual(verifyWebhook(SECRET, h, '{"test": 2432232314}', { toleranceS: 1e10 }), { test: 2432232314 });
  });

  test("accepts a signed message, also among signatures and as bytes", () => {
    assert.equal(verifyWebhook(SECRET, headers(), body).type, "desktop.stopped");
    const ts = now();
    assert.equal(verifyWebhook(SECRET, headers(ts, "v1,AAAA " + signed(SECRET, "msg_1", ts, body)), new TextEncoder().encode(body)).data.owner, "alice");
  });

  test("rejects forged, changed, replayed and future messages", () => {
    const ts = now();
    const other = "whsec_" + Buffer.alloc(32, 7).toString("base64");
    for (const [name, h, b] of [
      ["forged", headers(ts, signed(other, "msg_1", ts, body)), body],
      ["body changed", headers(), body.replace("stopped", "started")],
      ["replayed", headers(ts - 3600, signed(SECRET, "msg_1", ts - 3600, body)), body],
      ["future", headers(ts + 3600, signed(SECRET, "msg_1", ts + 3600, body)), body],
      ["id changed", { ...headers(), "Webhook-Id": "msg_2" }, body],
      ["no signature", { "webhook-id": "msg_1", "webhook-timestamp": String(ts) }, body],
    ]) {
      assert.throws(() => verifyWebhook(SECRET, h, b), WebhookVerificationError, name);
    }
  });
});

describe("bureau.webhooks", () => {
  const fake = jsonServer();
  const { seen, json } = fake;
  const hook = { id: "wh_1", owner: "alice", url: "https://h.example/", description: "", events: ["help.*"], all_owners: false, enabled: true,
    created_at: "2026-01-02T03:04:05Z", created_by: "alice/t", failures: 0 };
  const d = { id: "whd_1", webhook_id: "wh_1", message_id: "msg_1", event_type: "webhook.ping", status: "pending", attempts: 0, created_at: "2026-01-02T03:04:05Z" };

  test("every route", async () => {
    const b = new Bureau({ url: fake.url, token: "tok" });
    json("POST", "/api/v1/webhooks", 201, { ...hook, secret: "whsec_eA==" });
    assert.equal((await b.webhooks.create("https://h.example/", ["help.*"], { allOwners: true })).secret, "whsec_eA==");
    assert.deepEqual(JSON.parse(seen.at(-1).body), { url: "https://h.example/", events: ["help.*"], description: "", all_owners: true });
    json("GET", "/api/v1/webhooks", 200, { webhooks: [hook] });
    assert.equal((await b.webhooks.list({ owner: "alice" }))[0].id, "wh_1");
    assert.equal(seen.at(-1).url, "/api/v1/webhooks?owner=alice");
    json("GET", "/api/v1/webhooks/wh_1", 200, hook);
    assert.equal((await b.webhooks.get(hook)).url, "https://h.example/");
    json("PATCH", "/api/v1/webhooks/wh_1", 200, hook);
    await b.webhooks.update("wh_1", { enabled: true });
    assert.deepEqual(JSON.parse(seen.at(-1).body), { enabled: true });
    json("POST", "/api/v1/webhooks/wh_1/ping", 202, d);
    assert.equal((await b.webhooks.ping("wh_1")).id, "whd_1");
    json("GET", "/api/v1/webhooks/wh_1/deliveries", 200, { deliveries: [d] });
    assert.equal((await b.webhooks.deliveries("wh_1", { status: "failed", limit: 5 })).length, 1);
    assert.match(seen.at(-1).url, /status=failed/);
    json("GET", "/api/v1/webhooks/wh_1/deliveries/whd_1", 200, d);
    assert.equal((await b.webhooks.delivery("wh_1", d)).message_id, "msg_1");
    json("POST", "/api/v1/webhooks/wh_1/deliveries/whd_1/redeliver", 202, { ...d, id: "whd_2" });
    assert.equal((await b.webhooks.redeliver("wh_1", "whd_1")).id, "whd_2");
    json("POST", "/api/v1/webhooks/wh_1/rotate-secret", 200, { ...hook, secret: "whsec_eQ==" });
    assert.equal((await b.webhooks.rotateSecret("wh_1")).secret, "whsec_eQ==");
    json("DELETE", "/api/v1/webhooks/wh_1", 204, undefined);
    await b.webhooks.delete("wh_1");
    json("POST", "/api/v1/webhooks", 422, { error: { code: "invalid", message: "no", field: "url" } });
    const err = await b.webhooks.create("http://10.0.0.1/", ["*"]).then(() => null, (e) => e);
    assert.ok(err instanceof BureauError && err.field === "url");
  });
});
