import { BureauError, TimeoutError } from "./errors.js";
import { Clipboard, Console, Files, Processes, Secrets, Services, Snapshots, URLs } from "./guest.js";
import type * as m from "./models.js";
import { parseSSE, type ServerEvent } from "./sse.js";
import type { Transport } from "./transport.js";

export interface ExecOptions {
  user?: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  timeout_s?: number;
  secrets?: string[];
  max_output_bytes?: number;
  /** "qemu-ga" skips bureau-agent. */
  agent?: "qemu-ga";
  signal?: AbortSignal;
}

export interface ScreenshotOptions {
  format?: "png" | "jpeg";
  width?: number;
  height?: number;
  quality?: number;
  settle?: boolean;
  passive?: boolean;
  /** "display": the hypervisor's screen dump instead of the live framebuffer. */
  source?: "display";
  signal?: AbortSignal;
}

export interface WaitReadyOptions {
  /** How long to wait in all (default 600 000: ten minutes). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * The longest one `GET …?wait=ready` is asked to wait, in seconds (the API allows 900): under Node's fetch
 * (undici), whose headersTimeout gives up on an answer after 300 s.
 */
const READY_SLICE_S = 240;

/**
 * An action in Anthropic's shape ({action: "left_click", coordinate}) or OpenAI's ({type: "click", x, y}). A click
 * or move may name an accessibility `element` instead of a coordinate: a node (or its id) from uiTree/uiFind, or a
 * query {role, name, app, window}.
 */
export type ComputerAction = Record<string, unknown>;

export interface ComputerOptions {
  /** The screen size the model sees: screenshots are scaled to it and coordinates scaled back. */
  display?: [number, number];
  /** Add the settled screen after the actions. */
  screenshot?: boolean;
  keyboard?: string;
  /** "change": stop at the first input action that changed nothing (NoEffectError; CannotVerifyError when the screen cannot be watched). */
  expect?: "change";
  /** How long after each input action the screen is watched for a change (default 500; 0: no check). */
  verifyMs?: number;
  signal?: AbortSignal;
}

/** Window geometry, the client area in screen pixels. */
export interface WindowGeometry {
  x?: number;
  y?: number;
  width?: number;
  height?: number;
}

/** An app to launch: one of desktopFile (as the menu has it), command (a shell line) or argv. */
export interface LaunchApp {
  desktopFile?: string;
  command?: string;
  argv?: string[];
  /** How long to wait for its window (default 20, at most 120; 0 answers at once). */
  waitS?: number;
  signal?: AbortSignal;
}

/** Filters of uiTree and uiFind; role and states take a comma-separated string or a list. */
export interface UIFilters {
  /** Windows whose title contains it, or all windows of applications whose name does. */
  window?: string;
  app?: string;
  role?: string | string[];
  name?: string;
  /** States required; `!checked` for one absent. */
  states?: string | string[];
  /** Default true: only what shows. */
  visibleOnly?: boolean;
  depth?: number;
  limit?: number;
  /** A node (or its id) to start from. */
  root?: string | { id: string };
  /** The display your coordinates are in: nodes then have display_bounds in it. */
  display?: [number, number];
  timeoutMs?: number;
  signal?: AbortSignal;
}

const ref = (v: string | { id: string }) => (typeof v === "string" ? v : v.id);
const wxh = (d?: [number, number]) => (d ? `${d[0]}x${d[1]}` : undefined);

/** An action with a node (an object with an id) as its element sent as the node's id. */
function withElementId(a: ComputerAction): ComputerAction {
  const e = a.element as { id?: unknown } | undefined;
  return e && typeof e === "object" && typeof e.id === "string" ? { ...a, element: e.id } : { ...a };
}

function uiQuery(f: UIFilters) {
  const joined = (v?: string | string[]) => (Array.isArray(v) ? v.join(",") : v);
  return {
    window: f.window, app: f.app, role: joined(f.role), name: f.name, states: joined(f.states), visible_only: f.visibleOnly,
    depth: f.depth, limit: f.limit, root: f.root === undefined ? undefined : ref(f.root), display: wxh(f.display), timeout_ms: f.timeoutMs,
  };
}

const pick = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function execBody(cmd: string | string[], o: ExecOptions): Record<string, unknown> {
  const { agent: _a, signal: _s, ...rest } = o;
  return pick({ ...(Array.isArray(cmd) ? { argv: cmd } : { cmd }), ...rest });
}

/** A handle on one desktop; `data` is its record, refreshed by every call that returns it. */
export class Desktop {
  readonly files: Files;
  readonly snapshots: Snapshots;
  readonly services: Services;
  readonly processes: Processes;
  readonly secrets: Secrets;
  readonly urls: URLs;
  readonly clipboard: Clipboard;
  readonly console: Console;

  constructor(private readonly h: Transport, readonly id: string, public data?: m.Desktop) {
    const p = { id };
    this.files = new Files(h, p);
    this.snapshots = new Snapshots(h, p, (d) => this.set(d));
    this.services = new Services(h, p);
    this.processes = new Processes(h, p);
    this.secrets = new Secrets(h, p);
    this.urls = new URLs(h, p);
    this.clipboard = new Clipboard(h, p);
    this.console = new Console(h, p);
  }

  /** The last state read (refresh() reads it again). */
  get state(): m.DesktopState | undefined {
    return this.data?.state;
  }

  private set(d: m.Desktop): this {
    this.data = d;
    return this;
  }

  private async op(op: Parameters<Transport["call"]>[0], o: { query?: Record<string, string | number | boolean | undefined>; json?: unknown } = {}): Promise<this> {
    return this.set(await this.h.call<m.Desktop>(op, { params: { id: this.id }, ...o }));
  }

  refresh(): Promise<this> {
    return this.op("getDesktop");
  }
  start(): Promise<this> {
    return this.op("startDesktop");
  }
  /** Shuts the guest down (force: pulls the plug); the data disk stays. */
  stop(o: { force?: boolean; timeout?: number } = {}): Promise<this> {
    return this.op("stopDesktop", { query: { force: o.force || undefined, timeout: o.timeout } });
  }
  reboot(): Promise<this> {
    return this.op("rebootDesktop");
  }
  /** Freezes the VM in RAM (resume takes milliseconds). */
  pause(): Promise<this> {
    return this.op("pauseDesktop");
  }
  resume(): Promise<this> {
    return this.op("resumeDesktop");
  }
  /** Saves the VM's RAM to disk and stops it; start or any use wakes it. */
  hibernate(): Promise<this> {
    return this.op("hibernateDesktop");
  }
  /** A fresh OS disk (from image, or the same one); /home is kept. */
  reimage(image?: string): Promise<this> {
    return this.op("reimageDesktop", { json: image ? { image } : {} });
  }
  resizeDataDisk(sizeGiB: number): Promise<this> {
    return this.op("resizeDataDisk", { json: { size_gib: sizeGiB } });
  }
  /** Changes settings (only those given). */
  update(s: { idle_timeout_seconds?: number; nap_after_seconds?: number; sleep_after_seconds?: number; restart_on_crash?: boolean; network?: m.NetworkPolicy; keyboard_layout?: string }): Promise<this> {
    return this.op("updateDesktop", { json: pick(s) });
  }
  /**
   * Deletes the desktop; its data disk is kept unless deleteData. Its recordings go but the kept ones, or all stay
   * with keepRecordings (`recordings.listAll()` reaches them).
   */
  async delete(o: { deleteData?: boolean; keepRecordings?: boolean } = {}): Promise<m.DeleteResult> {
    const query = { delete_data: o.deleteData || undefined, keep_recordings: o.keepRecordings || undefined };
    const r = await this.h.call<m.DeleteResult>("deleteDesktop", { params: { id: this.id }, query });
    this.data = r.desktop;
    return r;
  }

  /** Waits until the desktop is in one of states; rejects if it settles in "error" (unless asked for) or after timeoutMs. */
  async waitUntil(states: m.DesktopState | m.DesktopState[], o: { timeoutMs?: number; pollMs?: number; signal?: AbortSignal } = {}): Promise<this> {
    const want = new Set(Array.isArray(states) ? states : [states]);
    const deadline = Date.now() + (o.timeoutMs ?? 600_000);
    for (;;) {
      o.signal?.throwIfAborted();
      await this.refresh();
      const st = this.data!.state;
      if (want.has(st)) return this;
      if (st === "error") throw new BureauError(409, "invalid_state", this.data!.last_error || "the desktop failed", undefined, st);
      if (Date.now() >= deadline) throw new TimeoutError(`desktop ${this.id} is ${st}, not ${[...want].join("/")}`, st);
      await new Promise((r) => setTimeout(r, o.pollMs ?? 1000));
    }
  }

  /**
   * Waits until the desktop is ready (it runs and its session is up: exec, files, computer use and the clipboard
   * work). The server does the waiting (`GET …?wait=ready`, at most READY_SLICE_S a call); a desktop asleep is
   * woken, one on its way to running waited for. Rejects with a 409 BureauError (code `invalid_state`) when it will
   * not get there by itself (stopped, error), with TimeoutError after timeoutMs.
   */
  async waitReady(o: WaitReadyOptions = {}): Promise<this> {
    const timeoutMs = o.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      o.signal?.throwIfAborted();
      const n = Math.max(0, Math.min(Math.floor((deadline - Date.now()) / 1000), READY_SLICE_S));
      const asked = Date.now();
      this.set(await this.h.call<m.Desktop>("getDesktop", { params: { id: this.id }, query: { wait: "ready", timeout_s: n }, signal: o.signal }));
      if (this.data!.ready) return this;
      if (Date.now() >= deadline - 500) {
        const d = this.data!;
        throw new TimeoutError(`desktop ${this.id} is not ready after ${Math.round(timeoutMs / 1000)} s (${d.waiting_for ? `waiting for ${d.waiting_for}` : d.state})`, d.state);
      }
      // An answer before its time (a server that does not wait): no busy loop.
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(1000 - (Date.now() - asked), deadline - Date.now()))));
    }
  }

  /** The desktop's history, newest first. */
  async events(limit?: number): Promise<m.Event[]> {
    return (await this.h.call<{ events: m.Event[] }>("listDesktopEvents", { params: { id: this.id }, query: { limit } })).events;
  }
  /** CPU, memory, disk and network figures of the running VM. */
  stats(): Promise<m.Stats> {
    return this.h.call("getDesktopStats", { params: { id: this.id } });
  }

  /** The screen as PNG (or JPEG) bytes. */
  async screenshot(o: ScreenshotOptions = {}): Promise<Uint8Array> {
    const r = await this.h.open("screenshot", {
      params: { id: this.id },
      signal: o.signal,
      query: { format: o.format, width: o.width, height: o.height, quality: o.quality, settle: o.settle || undefined, passive: o.passive || undefined, source: o.source },
    });
    return new Uint8Array(await r.arrayBuffer());
  }

  /**
   * Runs computer-use actions in order; display is the size the model sees, screenshot adds the settled screen.
   * Each input action's result says whether the screen changed (screen_changed) within verifyMs.
   */
  computer(actions: ComputerAction | ComputerAction[], o: ComputerOptions = {}): Promise<m.ComputerResult> {
    const list = (Array.isArray(actions) ? actions : [actions]).map(withElementId);
    const body: Record<string, unknown> = list.length === 1 ? list[0] : { actions: list };
    if (o.display) body.display = { width: o.display[0], height: o.display[1] };
    if (o.screenshot) body.screenshot = true;
    if (o.keyboard) body.keyboard = o.keyboard;
    if (o.expect) body.expect = o.expect;
    if (o.verifyMs !== undefined) body.verify_ms = o.verifyMs;
    return this.h.call("computerAction", { params: { id: this.id }, json: body, signal: o.signal });
  }

  setResolution(width: number, height: number): Promise<m.Size> {
    return this.h.call("setResolution", { params: { id: this.id }, json: { width, height } });
  }

  /** The session's windows, oldest first, and the screen; with display (the computer-use display) each shown window has display_bounds. */
  windows(o: { display?: [number, number]; signal?: AbortSignal } = {}): Promise<m.WindowList> {
    return this.h.call("listWindows", { params: { id: this.id }, query: { display: wxh(o.display) }, signal: o.signal });
  }
  /**
   * Does action to a window (its id, or the Window) and answers it as the window manager shows it then; geometry is
   * the client area in screen pixels. close answers a WindowClosed.
   */
  windowAction(wid: string | m.Window, action: "close", g?: WindowGeometry): Promise<m.WindowClosed>;
  windowAction(wid: string | m.Window, action: "focus" | "move" | "resize" | "minimize" | "maximize" | "unmaximize", g?: WindowGeometry): Promise<m.Window>;
  windowAction(wid: string | m.Window, action: string, g: WindowGeometry = {}): Promise<m.Window | m.WindowClosed> {
    return this.h.call("windowAction", { params: { id: this.id, wid: ref(wid) }, json: pick({ action, ...g }) });
  }
  /** Raises a window and gives it the focus (un-minimized). */
  focusWindow(wid: string | m.Window): Promise<m.Window> {
    return this.windowAction(wid, "focus");
  }
  moveWindow(wid: string | m.Window, x: number, y: number, size: { width?: number; height?: number } = {}): Promise<m.Window> {
    return this.windowAction(wid, "move", { x, y, ...size });
  }
  resizeWindow(wid: string | m.Window, width: number, height: number): Promise<m.Window> {
    return this.windowAction(wid, "resize", { width, height });
  }
  /** Asks a window to close, as its close button does. */
  closeWindow(wid: string | m.Window): Promise<m.WindowClosed> {
    return this.windowAction(wid, "close");
  }
  /** Starts an app and waits up to waitS (default 20) for its window. */
  launchApp(app: LaunchApp): Promise<m.LaunchAppResult> {
    const json = pick({ desktop_file: app.desktopFile, command: app.command, argv: app.argv, wait_s: app.waitS });
    return this.h.call("launchApp", { params: { id: this.id }, json, signal: app.signal });
  }

  /**
   * The accessibility tree of what shows on the screen, parents first: the applications (depth 0), their windows (1)
   * and what is inside; role, name and states keep the matches and their ancestors.
   */
  uiTree(f: UIFilters = {}): Promise<m.UINodeList> {
    return this.h.call("getUITree", { params: { id: this.id }, query: uiQuery(f), signal: f.signal });
  }
  /** The elements that match, flat (none: an empty list). */
  uiFind(f: UIFilters = {}): Promise<m.UINodeList> {
    return this.h.call("findUINodes", { params: { id: this.id }, query: uiQuery(f), signal: f.signal });
  }
  /**
   * Does action (click, focus, set_value with value, or one of the node's own actions) through the application, not
   * the mouse, and answers the node read again: changed, gone. A node no longer there rejects with GoneError.
   */
  uiAction(node: string | m.UINode, action = "click", o: { value?: string; display?: [number, number]; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<m.UIActResult> {
    return this.h.call("actOnUINode", {
      params: { id: this.id, node: ref(node) },
      query: { display: wxh(o.display) },
      json: pick({ action, value: o.value, timeout_ms: o.timeoutMs }),
      signal: o.signal,
    });
  }

  /** Runs a command (a bash line, or an argv list) and returns its result. */
  exec(cmd: string | string[], o: ExecOptions = {}): Promise<m.ExecResult> {
    return this.h.call("exec", { params: { id: this.id }, query: { agent: o.agent }, json: execBody(cmd, o), signal: o.signal });
  }

  /** Starts a command in the background; its output goes to a log (processes.log). */
  execBackground(cmd: string | string[], o: ExecOptions & { name?: string } = {}): Promise<m.Process> {
    return this.h.call("exec", { params: { id: this.id }, json: { ...execBody(cmd, o), background: true }, signal: o.signal });
  }

  /** Runs a command and yields its output as it comes: stdout/stderr events, then exit or error. */
  async *execStream(cmd: string | string[], o: ExecOptions = {}): AsyncGenerator<ServerEvent> {
    const r = await this.h.open("exec", { params: { id: this.id }, query: { stream: true }, json: execBody(cmd, o), headers: { Accept: "text/event-stream" }, signal: o.signal });
    if (r.body) yield* parseSSE(r.body);
  }

  /** Whether bureau-agent answers in the desktop and is the current build. */
  agentStatus(): Promise<m.AgentStatus> {
    return this.h.call("getAgentStatus", { params: { id: this.id } });
  }

  /** The URL of the API's proxy to a port in the desktop (send the token). */
  portURL(port: number, path = "/"): string {
    return `${this.h.url}/api/v1/desktops/${this.id}/ports/${port}/${path.replace(/^\/+/, "")}`;
  }
}
