import { createHmac, timingSafeEqual } from "node:crypto";
import { WebhookVerificationError } from "./errors.js";
import type { Transport } from "./transport.js";

/**
 * Webhooks: endpoints bureau POSTs desktops' events to, signed per Standard Webhooks
 * (https://www.standardwebhooks.com). `bureau.webhooks` manages them; `verifyWebhook` checks a message a receiver got.
 * See docs/webhooks.md for the event types and the payload.
 */

/** A webhook endpoint (never its secret, but right after it is made or rotated). */
export interface Webhook {
  id: string;
  owner: string;
  url: string;
  description: string;
  events: string[];
  all_owners: boolean;
  enabled: boolean;
  created_at: string;
  created_by: string;
  disabled_at?: string;
  disabled_reason?: string;
  failing_since?: string;
  failures: number;
  secret_rotated_at?: string;
  previous_secret_until?: string;
}

/** A message to an endpoint and its attempts. */
export interface WebhookDelivery {
  id: string;
  webhook_id: string;
  message_id: string;
  event_type: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  response_code?: number;
  latency_ms?: number;
  last_error?: string;
  created_at: string;
  next_attempt_at?: string;
  delivered_at?: string;
  redelivery_of?: string;
  payload?: WebhookMessage;
}

/** A message's body, as POSTed. */
export interface WebhookMessage {
  type: string;
  timestamp: string;
  data: {
    desktop_id?: string;
    owner: string;
    event_id?: string;
    message: string;
    actor?: string;
    webhook_id?: string;
    limit?: string;
    desktop?: { id: string; name: string; state: string; owner: string };
  };
}

/** A webhook: its id, or a Webhook. A delivery: its id, or a WebhookDelivery. */
export type WebhookRef = string | { id: string };
export type DeliveryRef = string | { id: string };
const idOf = (x: WebhookRef | DeliveryRef) => (typeof x === "string" ? x : x.id);

/** The v1 signature of a message: base64 of HMAC-SHA256, keyed with the base64 after `whsec_`, of `<id>.<timestamp>.<body>`. */
export function signWebhook(secret: string, msgId: string, timestamp: number, body: string | Uint8Array): string {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  const mac = createHmac("sha256", key).update(`${msgId}.${timestamp}.`).update(body).digest("base64");
  return `v1,${mac}`;
}

function header(headers: Headers | Record<string, string | string[] | undefined>, name: string): string {
  let v: string | string[] | null | undefined;
  if (typeof (headers as Headers).get === "function") {
    v = (headers as Headers).get(name);
  } else {
    for (const [k, x] of Object.entries(headers)) if (k.toLowerCase() === name) v = x;
  }
  if (Array.isArray(v)) v = v[0];
  if (!v) throw new WebhookVerificationError(`missing header ${name}`);
  return v;
}

/**
 * Checks a webhook message and returns its body parsed as JSON. `headers` are the request's (any case, a Headers or
 * a plain object such as Node's `req.headers`); `body` its raw text or bytes, exactly as received. Throws
 * WebhookVerificationError when a header is missing, the timestamp is more than `toleranceS` seconds (default 300) old
 * or ahead (a replay), or no `v1,` signature in webhook-signature is the secret's.
 */
export function verifyWebhook(
  secret: string,
  headers: Headers | Record<string, string | string[] | undefined>,
  body: string | Uint8Array,
  o: { toleranceS?: number } = {},
): WebhookMessage {
  const tolerance = o.toleranceS ?? 300;
  const id = header(headers, "webhook-id");
  const tsText = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  const ts = Number(tsText);
  if (!/^\d+$/.test(tsText) || !Number.isSafeInteger(ts)) throw new WebhookVerificationError(`webhook-timestamp ${JSON.stringify(tsText)} is not a number`);
  const now = Math.floor(Date.now() / 1000);
  if (ts < now - tolerance) throw new WebhookVerificationError("the message is too old (webhook-timestamp): a replay?");
  if (ts > now + tolerance) throw new WebhookVerificationError("the message is from the future (webhook-timestamp)");
  const want = Buffer.from(signWebhook(secret, id, ts, body));
  for (const s of sigs.split(" ")) {
    const got = Buffer.from(s);
    if (s.startsWith("v1,") && got.length === want.length && timingSafeEqual(got, want)) {
      try {
        return JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
      } catch {
        throw new WebhookVerificationError("the body is not JSON");
      }
    }
  }
  throw new WebhookVerificationError("no valid signature");
}

/** Register, list, change, delete, ping and rotate webhook endpoints, and read and repeat their deliveries. */
export class Webhooks {
  constructor(private readonly h: Transport) {}

  /**
   * Registers an endpoint for `events` (types such as `desktop.started`, families such as `desktop.*`, or `*`); the
   * answer's `secret` is shown this once. `allOwners` (admins): every owner's events. 422 (field `url` or `events[i]`)
   * for a URL bureau may not reach or an unknown type.
   */
  create(url: string, events: string[], o: { description?: string; allOwners?: boolean } = {}): Promise<Webhook & { secret: string }> {
    const json: Record<string, unknown> = { url, events, description: o.description ?? "" };
    if (o.allOwners) json.all_owners = true;
    return this.h.call("createWebhook", { json });
  }

  /** Your endpoints (an admin's: everyone's, or `owner`'s). */
  async list(o: { owner?: string } = {}): Promise<Webhook[]> {
    return (await this.h.call<{ webhooks: Webhook[] }>("listWebhooks", { query: { owner: o.owner } })).webhooks ?? [];
  }

  get(webhook: WebhookRef): Promise<Webhook> {
    return this.h.call("getWebhook", { params: { wid: idOf(webhook) } });
  }

  /** Changes what is given; `enabled: true` clears why it was disabled. */
  update(webhook: WebhookRef, change: { url?: string; events?: string[]; description?: string; enabled?: boolean }): Promise<Webhook> {
    return this.h.call("updateWebhook", { params: { wid: idOf(webhook) }, json: change });
  }

  async delete(webhook: WebhookRef): Promise<void> {
    await this.h.call("deleteWebhook", { params: { wid: idOf(webhook) } });
  }

  /** Queues a `webhook.ping` message; resolves to its delivery. */
  ping(webhook: WebhookRef): Promise<WebhookDelivery> {
    return this.h.call("pingWebhook", { params: { wid: idOf(webhook) } });
  }

  /** A new secret (`secret`, shown once); for 24 h messages carry the old secret's signature too. */
  rotateSecret(webhook: WebhookRef): Promise<Webhook & { secret: string }> {
    return this.h.call("rotateWebhookSecret", { params: { wid: idOf(webhook) } });
  }

  /** The endpoint's deliveries, newest first (`before`: an RFC 3339 time, for the next page). */
  async deliveries(webhook: WebhookRef, o: { status?: "pending" | "delivered" | "failed"; limit?: number; before?: string } = {}): Promise<WebhookDelivery[]> {
    const r = await this.h.call<{ deliveries: WebhookDelivery[] }>("listWebhookDeliveries", {
      params: { wid: idOf(webhook) },
      query: { status: o.status, limit: o.limit, before: o.before },
    });
    return r.deliveries ?? [];
  }

  /** One delivery, with its payload. */
  delivery(webhook: WebhookRef, delivery: DeliveryRef): Promise<WebhookDelivery> {
    return this.h.call("getWebhookDelivery", { params: { wid: idOf(webhook), did: idOf(delivery) } });
  }

  /** Sends a delivery's message again (the same message id); resolves to the new delivery. */
  redeliver(webhook: WebhookRef, delivery: DeliveryRef): Promise<WebhookDelivery> {
    return this.h.call("redeliverWebhook", { params: { wid: idOf(webhook), did: idOf(delivery) } });
  }
}
