import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import type * as m from "./models.js";
import type { OperationId, RequestOptions, Transport } from "./transport.js";

type Params = { id: string };
const pick = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

class Part {
  constructor(protected readonly h: Transport, protected readonly p: Params) {}
  protected call<T>(op: OperationId, extra: Record<string, string | number> = {}, o: Omit<RequestOptions, "params"> = {}): Promise<T> {
    return this.h.call<T>(op, { params: { ...this.p, ...extra }, ...o });
  }
}

/** Files as the desktop's user (paths relative to its home, or absolute); big files are streamed. */
export class Files extends Part {
  /** A directory's listing, or a file's path and size (without its bytes). */
  async stat(path: string, o: { user?: string } = {}): Promise<m.FileStat> {
    const r = await this.h.open("getFile", { params: this.p, query: { path, user: o.user } });
    if ((r.headers.get("Content-Type") ?? "").startsWith("application/json")) return (await r.json()) as m.FileStat;
    await r.body?.cancel();
    return { path: r.headers.get("X-File-Path") ?? path, dir: false, size: Number(r.headers.get("Content-Length") ?? 0) };
  }
  /** A directory's entries. */
  async list(path = ".", o: { user?: string } = {}): Promise<m.FileEntry[]> {
    const st = await this.stat(path, o);
    if (!st.dir) throw new Error(`${path} is not a directory`);
    return st.entries ?? [];
  }
  /** A file's body as a stream (for big files). */
  async download(path: string, o: { user?: string; signal?: AbortSignal } = {}): Promise<ReadableStream<Uint8Array>> {
    const r = await this.h.open("getFile", { params: this.p, query: { path, user: o.user }, signal: o.signal });
    if ((r.headers.get("Content-Type") ?? "").startsWith("application/json")) {
      await r.body?.cancel();
      throw new Error(`${path} is a directory`);
    }
    return r.body!;
  }
  /** A file's bytes. */
  async read(path: string, o: { user?: string; agent?: "qemu-ga" } = {}): Promise<Uint8Array> {
    const r = await this.h.open("getFile", { params: this.p, query: { path, user: o.user, agent: o.agent } });
    if ((r.headers.get("Content-Type") ?? "").startsWith("application/json")) throw new Error(`${path} is a directory`);
    return new Uint8Array(await r.arrayBuffer());
  }
  async readText(path: string, o: { user?: string } = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, o));
  }
  /** Writes data to path; a ReadableStream or a local file ({ file: "path" }) is streamed. */
  write(path: string, data: string | Uint8Array | Blob | ReadableStream<Uint8Array> | { file: string }, o: { user?: string; mode?: string; parents?: boolean; agent?: "qemu-ga" } = {}): Promise<{ path: string; size: number }> {
    let body: BodyInit;
    if (typeof data === "object" && data !== null && "file" in data) body = Readable.toWeb(createReadStream(data.file)) as ReadableStream<Uint8Array>;
    else body = data as BodyInit;
    return this.h.call("putFile", {
      params: this.p,
      query: { path, user: o.user, mode: o.mode, parents: o.parents === false ? false : undefined, agent: o.agent },
      body,
    });
  }
  /** Deletes a file (a directory only with recursive). */
  async delete(path: string, o: { recursive?: boolean; user?: string } = {}): Promise<void> {
    await this.call("deleteFile", {}, { query: { path, recursive: o.recursive || undefined, user: o.user } });
  }
}

/** The desktop's clipboard, text and images. */
export class Clipboard extends Part {
  get(): Promise<m.Clipboard> {
    return this.call("getClipboard");
  }
  async getText(): Promise<string> {
    return (await this.get()).text ?? "";
  }
  /** Its content of one type (404 when it holds none). */
  async getBytes(type = "image/png"): Promise<Uint8Array> {
    const r = await this.h.open("getClipboard", { params: this.p, query: { type } });
    return new Uint8Array(await r.arrayBuffer());
  }
  async setText(text: string): Promise<void> {
    await this.call("setClipboard", {}, { json: { text } });
  }
  async setImage(data: Uint8Array, type = "image/png"): Promise<void> {
    await this.call("setClipboard", {}, { body: data as unknown as BodyInit, headers: { "Content-Type": type } });
  }
}

/** Snapshots of the desktop's disks (and RAM). */
export class Snapshots extends Part {
  constructor(h: Transport, p: Params, private readonly onDesktop: (d: m.Desktop) => unknown) {
    super(h, p);
  }
  async list(): Promise<m.Snapshot[]> {
    return (await this.call<{ snapshots: m.Snapshot[] }>("listSnapshots")).snapshots;
  }
  /** scope "all" (default), "data" (only /home) or "os"; memory keeps RAM too. */
  create(name: string, o: { scope?: "all" | "data" | "os"; memory?: boolean; description?: string } = {}): Promise<m.Snapshot> {
    return this.call("createSnapshot", {}, { json: pick({ name, ...o }) });
  }
  /** Puts the desktop back to the snapshot (under way when this returns). */
  async revert(name: string): Promise<m.Desktop> {
    const d = await this.call<m.Desktop>("revertSnapshot", { name });
    this.onDesktop(d);
    return d;
  }
  async delete(name: string): Promise<void> {
    await this.call("deleteSnapshot", { name });
  }
}

export interface ServiceSpec {
  cmd?: string;
  argv?: string[];
  port?: number;
  cwd?: string;
  env?: Record<string, string>;
  secrets?: string[];
  restart?: string;
  user?: string;
}

/** Services: commands bureau-agent keeps running (and restarts), with logs. */
export class Services extends Part {
  async list(): Promise<m.Service[]> {
    return (await this.call<{ services: m.Service[] }>("listServices")).services;
  }
  create(name: string, spec: ServiceSpec): Promise<m.Service> {
    return this.call("createService", {}, { json: pick({ name, ...spec }) });
  }
  replace(name: string, spec: ServiceSpec): Promise<m.Service> {
    return this.call("replaceService", { name }, { json: pick({ name, ...spec }) });
  }
  get(name: string): Promise<m.Service> {
    return this.call("getService", { name });
  }
  start(name: string): Promise<m.Service> {
    return this.call("startService", { name });
  }
  stop(name: string): Promise<m.Service> {
    return this.call("stopService", { name });
  }
  restart(name: string): Promise<m.Service> {
    return this.call("restartService", { name });
  }
  async delete(name: string): Promise<void> {
    await this.call("deleteService", { name });
  }
  /** The service's log (its last tail bytes). */
  async logs(name: string, o: { tail?: number } = {}): Promise<string> {
    const r = await this.h.open("getServiceLogs", { params: { ...this.p, name }, query: { tail: o.tail }, headers: { Accept: "text/plain" } });
    return r.text();
  }
}

/** Background processes started with execBackground. */
export class Processes extends Part {
  async list(): Promise<m.Process[]> {
    return (await this.call<{ processes: m.Process[] }>("listProcesses")).processes;
  }
  get(pid: string | number): Promise<m.Process> {
    return this.call("getProcess", { pid });
  }
  /** Sends signal (default TERM) to the process's group. */
  signal(pid: string | number, signal?: string): Promise<m.Process> {
    return this.call("signalProcess", { pid }, { query: { signal } });
  }
  async log(pid: string | number, o: { tail?: number } = {}): Promise<string> {
    const r = await this.h.open("getProcessLog", { params: { ...this.p, pid }, query: { tail: o.tail } });
    return r.text();
  }
}

/** Secrets of this desktop only (they win over your own of the same name). */
export class Secrets extends Part {
  async list(): Promise<m.Secret[]> {
    return (await this.call<{ secrets: m.Secret[] }>("listDesktopSecrets")).secrets;
  }
  set(name: string, value: string): Promise<m.Secret> {
    return this.call("putDesktopSecret", { name }, { json: { value } });
  }
  async delete(name: string): Promise<void> {
    await this.call("deleteDesktopSecret", { name });
  }
}

/** Live URLs of the desktop's ports, and share links for them. */
export class URLs extends Part {
  async list(): Promise<m.LiveURL[]> {
    return (await this.call<{ urls: m.LiveURL[] }>("listURLs")).urls;
  }
  /** Makes a port's URL open to anyone (public) or to you only. */
  setPublic(port: number, isPublic: boolean): Promise<m.LiveURL> {
    return this.call("setURL", { port }, { json: { public: isPublic } });
  }
  /** A one-time link (a minute) that signs a browser in to the port's private URL. */
  openLink(port: number): Promise<m.URLLogin> {
    return this.call("openURL", { port });
  }
  async shares(): Promise<m.Share[]> {
    return (await this.call<{ shares: m.Share[] }>("listShares")).shares;
  }
  /** A link to the port's URL for someone without an account (its URL is shown only now). */
  share(port: number, o: { ttl_s?: number; read_only?: boolean } = {}): Promise<m.ShareCreated> {
    return this.call("createShare", {}, { json: pick({ port, ...o }) });
  }
  async revokeShare(share: string): Promise<void> {
    await this.call("revokeShare", { share });
  }
}

/** Console links: the desktop in a browser, for a person. */
export class Console extends Part {
  /**
   * A console link; its url is absolute (the token is shown only now). `name` (1 to 64 characters) says who it is for
   * ("Dana"): shown to the others watching, in the history, and as who took control there.
   */
  async create(o: { view_only?: boolean; ttl_seconds?: number; name?: string } = {}): Promise<m.ConsoleLink> {
    const link = await this.call<m.ConsoleLink>("createConsole", {}, { json: pick(o) });
    if (link.url?.startsWith("/")) link.url = this.h.url + link.url;
    return link;
  }
  async list(): Promise<m.ConsoleToken[]> {
    return (await this.call<{ sessions: m.ConsoleToken[] }>("listConsoles")).sessions;
  }
  async revoke(tokenId: string): Promise<void> {
    await this.call("revokeConsole", { token_id: tokenId });
  }
}
