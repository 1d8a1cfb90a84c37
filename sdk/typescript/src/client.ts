import { BackupTargets, Backups } from "./backups.js";
import { Desktop } from "./desktop.js";
import type * as m from "./models.js";
import { People } from "./people.js";
import { Recordings } from "./recordings.js";
import { parseNDJSON, parseSSE, type ServerEvent } from "./sse.js";
import { Steps } from "./steps.js";
import { Transport } from "./transport.js";
import { Teams } from "./teams.js";
import { Webhooks } from "./webhooks.js";
import { auditAll, auditExport, auditPage, type AuditEntry, type AuditFilter, type AuditPage } from "./audit.js";

export interface ClientOptions {
  /** bureau's URL (default BUREAU_URL, then http://127.0.0.1:8080). */
  url?: string;
  /** An API token (default BUREAU_TOKEN). */
  token?: string;
}

export interface CreateDesktop {
  name: string;
  image?: string;
  vcpus?: number;
  memory_mib?: number;
  data_disk_gib?: number;
  ssh_authorized_keys?: string[];
  idle_timeout_seconds?: number;
  nap_after_seconds?: number;
  sleep_after_seconds?: number;
  network?: m.NetworkPolicy;
  keyboard_layout?: string;
  cold?: boolean;
  /** Clones another desktop's snapshot. */
  from?: { desktop: string; snapshot: string };
  /** Admins: run it on one of bureau's hosts (default: bureau's own). */
  host?: string;
  /**
   * Lets bureau pick the host: one whose labels include all of these (not with `host`: 422). When no host fits:
   * 507 `capacity`, its message naming each host and why it was refused.
   */
  placement?: m.PlacementRequest;
}

export interface CreateOptions {
  /** Resolve once the desktop is ready (its session up: exec, files and computer use work), not when it is made. */
  waitReady?: boolean;
  /** With waitReady, how long to wait (default 600 000); past it, TimeoutError (the desktop is there, still coming up). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const pick = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** A bureau server, reached with one API token. */
export class Bureau {
  readonly http: Transport;
  readonly desktops: Desktops;
  readonly tokens: Tokens;
  readonly images: Images;
  readonly templates: Templates;
  readonly secrets: OwnerSecrets;
  readonly quotas: Quotas;
  readonly hosts: Hosts;
  readonly events: Events;
  /** Each desktop's step log. */
  readonly steps: Steps;
  /** Each desktop's screen recordings. */
  readonly recordings: Recordings;
  /** Backups of desktops' data disks: take, follow, list, verify, restore. */
  readonly backups: Backups;
  /** Where backups go (admin). */
  readonly backupTargets: BackupTargets;
  /** People in the loop of each desktop: who holds its input, help requests, approvals and the approval policy. */
  readonly people: People;
  readonly webhooks: Webhooks;
  readonly teams: Teams;

  constructor(o: ClientOptions = {}) {
    this.http = new Transport(o.url, o.token);
    this.desktops = new Desktops(this);
    this.tokens = new Tokens(this.http);
    this.images = new Images(this.http);
    this.templates = new Templates(this.http);
    this.secrets = new OwnerSecrets(this.http);
    this.quotas = new Quotas(this.http);
    this.hosts = new Hosts(this.http);
    this.events = new Events(this.http);
    this.steps = new Steps(this.http);
    this.recordings = new Recordings(this.http);
    this.backups = new Backups(this.http);
    this.backupTargets = new BackupTargets(this.http);
    this.people = new People(this.http);
    this.webhooks = new Webhooks(this.http);
    this.teams = new Teams(this.http);
  }

  /** What this bureau is: version, accelerator (kvm or tcg) and why. */
  info(): Promise<Record<string, string>> {
    return this.http.call("getInfo");
  }

  /** Who is calling: owner, name, admin, via ("token" or "sign-in"), token_id and expires_at. */
  session(): Promise<{ owner: string; name: string; admin: boolean; via: "token" | "sign-in"; token_id: string; expires_at?: string; csrf_token?: string }> {
    return this.http.call("getSession");
  }

  /** The API's OpenAPI 3.1 description, as the server serves it. */
  openapi(): Promise<any> {
    return this.http.call("getOpenAPI");
  }

  /** A page of the audit log (who did what, when, from where), newest first (src/audit.ts). */
  audit(f: AuditFilter & { limit?: number; cursor?: string } = {}): Promise<AuditPage> {
    return auditPage(this.http, f);
  }

  /** Every matching audit log entry, a page at a time as the iteration goes. */
  auditAll(f: AuditFilter & { limit?: number } = {}): AsyncGenerator<AuditEntry> {
    return auditAll(this.http, f);
  }

  /** Every matching audit log entry as the server streams it (NDJSON export). */
  auditExport(f: AuditFilter = {}, signal?: AbortSignal): AsyncGenerator<AuditEntry> {
    return auditExport(this.http, f, signal);
  }

  /** A handle on desktop id (nothing is fetched until used). */
  desktop(id: string): Desktop {
    return new Desktop(this.http, id);
  }
}

/** Create, list and find desktops. */
export class Desktops {
  constructor(private readonly c: Bureau) {}

  /** Creates a desktop; it boots in the background (`waitReady()` waits until it is usable), or, with waitReady, is resolved once ready. */
  async create(req: CreateDesktop, o: CreateOptions = {}): Promise<Desktop> {
    const d = await this.c.http.call<m.Desktop>("createDesktop", { json: pick({ ...req }), signal: o.signal });
    const desktop = new Desktop(this.c.http, d.id, d);
    return o.waitReady ? desktop.waitReady({ timeoutMs: o.timeoutMs, signal: o.signal }) : desktop;
  }

  /** Your desktops (every owner's for an admin token). */
  async list(): Promise<Desktop[]> {
    const r = await this.c.http.call<{ desktops: m.Desktop[] }>("listDesktops");
    return r.desktops.map((d) => new Desktop(this.c.http, d.id, d));
  }

  /** Desktop id, fetched now (a 404 BureauError if it is not there or not yours). */
  get(id: string): Promise<Desktop> {
    return new Desktop(this.c.http, id).refresh();
  }

  /**
   * Moves desktop id with its disks to host (admin): live when it runs, cold
   * (files copied, snapshots kept) when it is stopped or hibernated or has
   * snapshots. It is "migrating" at once, its operation_step saying how far
   * the copy got ("to two: memory 63%"); then on host, as it was, with a new
   * ip there, or, failing, as it was where it was with last_error
   * "migrate failed: …".
   */
  async migrate(id: string, host: string): Promise<Desktop> {
    const d = await this.c.http.call<m.Desktop>("migrateDesktop", { params: { id }, json: { host } });
    return new Desktop(this.c.http, d.id, d);
  }

  /** Cancels desktop id's migration (admin); it stays as it was where it was (409 when it is not migrating). */
  async cancelMigration(id: string): Promise<void> {
    await this.c.http.call("cancelMigration", { params: { id } });
  }
}

/** API tokens: make them for agents, list and revoke them. */
export class Tokens {
  constructor(private readonly h: Transport) {}

  /** A new token; its secret (`.token`) is shown only here. */
  create(req: { name: string; scope?: string; ttl_seconds?: number; desktop_id?: string; computer_only?: boolean; owner?: string }): Promise<m.TokenCreated> {
    return this.h.call("createToken", { json: pick(req) });
  }
  async list(): Promise<m.Token[]> {
    return (await this.h.call<{ tokens: m.Token[] }>("listTokens")).tokens;
  }
  async revoke(id: string): Promise<void> {
    await this.h.call("revokeToken", { params: { id } });
  }
}

/** Base images desktops boot from. */
export class Images {
  constructor(private readonly h: Transport) {}

  async list(): Promise<m.Image[]> {
    return (await this.h.call<{ images: m.Image[] }>("listImages")).images;
  }

  /** Imports an image (admin); yields its progress lines, the last being the image or an error. */
  async *import(req: { name: string; url?: string; path?: string; sha256?: string; os?: string; version?: string }): AsyncGenerator<Record<string, unknown>> {
    const r = await this.h.open("importImage", { json: pick(req), headers: { Accept: "application/x-ndjson" } });
    yield* parseNDJSON(r.body);
  }

  async delete(name: string): Promise<void> {
    await this.h.call("deleteImage", { params: { name } });
  }
}

/** Warm templates: desktops booted once and saved, to create from in seconds. */
export class Templates {
  constructor(private readonly h: Transport) {}
  async list(): Promise<m.Template[]> {
    return (await this.h.call<{ templates: m.Template[] }>("listTemplates")).templates;
  }
  build(req: { image?: string; vcpus?: number; memory_mib?: number } = {}): Promise<m.Template> {
    return this.h.call("buildTemplate", { json: pick(req) });
  }
}

/** Your secrets, which every desktop of yours may name (values never come back). */
export class OwnerSecrets {
  constructor(private readonly h: Transport) {}
  async list(owner?: string): Promise<m.Secret[]> {
    return (await this.h.call<{ secrets: m.Secret[] }>("listOwnerSecrets", { query: { owner } })).secrets;
  }
  set(name: string, value: string, owner?: string): Promise<m.Secret> {
    return this.h.call("putOwnerSecret", { params: { name }, query: { owner }, json: { value } });
  }
  async delete(name: string, owner?: string): Promise<void> {
    await this.h.call("deleteOwnerSecret", { params: { name }, query: { owner } });
  }
}

/** What owners may use. */
export class Quotas {
  constructor(private readonly h: Transport) {}
  mine(): Promise<{ quota: m.Quota; usage: m.Usage }> {
    return this.h.call("getMyQuota");
  }
  get(owner: string): Promise<{ quota: m.Quota; usage: m.Usage }> {
    return this.h.call("getQuota", { params: { owner } });
  }
  /** Sets an owner's plan, or "custom" with max_* limits (admin). */
  set(owner: string, plan: string, limits: Partial<Omit<m.Quota, "owner" | "plan">> = {}): Promise<m.Quota> {
    return this.h.call("setQuota", { params: { owner }, json: { plan, ...limits } });
  }
}

/** The libvirt hosts desktops run on (admin). */
export class Hosts {
  constructor(private readonly h: Transport) {}
  /** Every host, the local one (the host bureau runs on) first. */
  async list(): Promise<m.Host[]> {
    return (await this.h.call<{ hosts: m.Host[] }>("listHosts")).hosts;
  }
  get(name: string): Promise<m.Host> {
    return this.h.call("getHost", { params: { name } });
  }
  /**
   * Adds a host by its libvirt URI (qemu+ssh://user@host/system); it is added only once its libvirtd answered
   * (422 `host_unreachable` otherwise) and bureau made it ready for desktops over SSH (`ssh_address`,
   * `ssh_host_key` pinned; 422 `host_not_ready` otherwise, naming the field to fix).
   */
  add(name: string, uri: string, labels?: Record<string, string>,
      opts: { ssh_address?: string; ssh_host_key?: string; bridge?: string; subnet?: string } = {}): Promise<m.Host> {
    return this.h.call("addHost", { json: pick({ name, uri, labels, ...opts }) });
  }
  /** The key bureau signs in to remote hosts with: one authorized_keys line. */
  async sshPublicKey(): Promise<string> {
    return (await this.h.call<{ ssh_public_key: string }>("listHosts")).ssh_public_key;
  }
  /** Forgets a host (the local one stays: 409 `in_use`). */
  async remove(name: string): Promise<void> {
    await this.h.call("removeHost", { params: { name } });
  }
  /**
   * Marks a host draining (nothing new is placed there) and moves every desktop off it in the background,
   * each to the host placement chooses; the host's `drain` says how far it got and which desktops stayed, and why.
   */
  drain(name: string): Promise<m.Host> {
    return this.h.call("drainHost", { params: { name } });
  }
  /** Ends a host's drain: placement uses it again (a move under way finishes). */
  undrain(name: string): Promise<m.Host> {
    return this.h.call("undrainHost", { params: { name } });
  }
}

/** What happened to your desktops: the log and the live stream. */
export class Events {
  constructor(private readonly h: Transport) {}
  async list(limit?: number): Promise<m.Event[]> {
    return (await this.h.call<{ events: m.Event[] }>("getAuditLog", { query: { limit } })).events;
  }
  /** Live changes: `event` events (history entries) and `desktop` events (a record after a change). Abort the signal or break to hang up. */
  async *stream(signal?: AbortSignal): AsyncGenerator<ServerEvent> {
    const r = await this.h.open("streamEvents", { headers: { Accept: "text/event-stream" }, signal });
    if (r.body) yield* parseSSE(r.body);
  }
  /** A one-minute token that opens the stream once (for a browser's EventSource). */
  streamToken(): Promise<m.StreamToken> {
    return this.h.call("createStreamToken");
  }
}
