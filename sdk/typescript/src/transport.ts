import { errorFor } from "./errors.js";
import { OPERATIONS, type OperationId } from "./operations.js";

export type { OperationId };

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  params?: Record<string, string | number>;
  query?: Query;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Makes the calls of OPERATIONS against one bureau with one token. */
export class Transport {
  readonly url: string;
  readonly token?: string;

  constructor(url?: string, token?: string) {
    const u = url ?? process.env.BUREAU_URL ?? "http://127.0.0.1:8080";
    if (!/^https?:\/\/[^/]+/.test(u)) throw new Error(`bureau URL ${JSON.stringify(u)}: want http(s)://host[:port]`);
    this.url = u.replace(/\/+$/, "");
    this.token = token ?? process.env.BUREAU_TOKEN;
  }

  /** The path of op with its path parameters filled in. */
  path(op: OperationId, params: Record<string, string | number> = {}): string {
    let p: string = OPERATIONS[op][1];
    for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(String(v)));
    if (p.includes("{")) throw new Error(`${op}: path parameters missing in ${p}`);
    return p;
  }

  /** Sends op's request; an error status raises its BureauError. */
  async open(op: OperationId, o: RequestOptions = {}): Promise<Response> {
    const [method] = OPERATIONS[op];
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined && v !== null) q.set(k, String(v));
    const target = this.url + this.path(op, o.params) + (q.size ? `?${q}` : "");
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": "bureau-typescript" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let body: BodyInit | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["Content-Type"] = "application/json";
    } else if (body !== undefined) {
      headers["Content-Type"] = "application/octet-stream";
    }
    Object.assign(headers, o.headers);
    const init: RequestInit & { duplex?: "half" } = { method, headers, body, signal: o.signal };
    if (body instanceof ReadableStream) init.duplex = "half"; // streamed upload
    const r = await fetch(target, init);
    if (r.status >= 400) {
      const text = await r.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        /* not JSON: keep the text */
      }
      const ra = r.headers.get("Retry-After");
      throw errorFor(r.status, parsed, ra && /^\d+$/.test(ra) ? Number(ra) : undefined);
    }
    return r;
  }

  /** op's answer parsed as JSON (undefined when it has none). */
  async call<T = unknown>(op: OperationId, o: RequestOptions = {}): Promise<T> {
    const r = await this.open(op, o);
    const text = await r.text();
    if (!text) return undefined as T;
    return ((r.headers.get("Content-Type") ?? "").startsWith("application/json") ? JSON.parse(text) : text) as T;
  }
}
