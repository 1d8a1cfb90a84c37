/**
 * The API's resources, made from the OpenAPI spec's schemas (the drift tests
 * compare each interface's fields, listed in FIELDS, with its schema in the
 * committed spec and in the served one; fieldcheck.ts fails the build when a
 * list is not exactly its interface's fields).
 */

/** Where a desktop is: settled (running, paused, napping, sleeping, hibernated, stopped, crashed, error, deleted) or on its way. */
export type DesktopState = "creating" | "starting" | "running" | "stopping" | "stopped" | "rebooting" | "pausing" | "paused" | "napping" | "sleeping" | "hibernating" | "hibernated" | "resuming" | "reverting" | "reimaging" | "migrating" | "deleting" | "deleted" | "error" | "crashed";

/** A Desktop as the API shows it. */
export interface Desktop {
  id: string;
  owner: string;
  name: string;
  image: string;
  vcpus: number;
  memory_mib: number;
  data_disk_gib: number;
  state: DesktopState;
  desired_state: string;
  last_error?: string;
  operation?: string;
  operation_step?: string;
  operation_started_at?: string;
  /**
   * It runs and its session is up: exec, files, the clipboard, terminals and computer use work (before, they
   * reject with NotReadyError). `waitReady()` waits for it.
   */
  ready: boolean;
  /** When it last became ready (only while ready). */
  ready_at?: string;
  /** How far a running desktop has come (only while it runs): no agent answers yet, an agent answers, its session is up. */
  up?: "booting" | "agent" | "session";
  /** What a running desktop not ready waits for: its guest's agent, its user, first-boot setup, or its session. */
  waiting_for?: "agent" | "user" | "cloud-init" | "session";
  accelerator: string;
  data_disk_path?: string;
  idle_timeout_seconds: number;
  nap_after_seconds: number;
  sleep_after_seconds: number;
  restart_on_crash: boolean;
  network: NetworkPolicy;
  keyboard_layout: string;
  ip?: string;
  /** The host it runs on ("local": the one bureau runs on). */
  host: string;
  created_at: string;
  updated_at: string;
  deleted_at?: string;
  /** Who holds its mouse and keyboard: the agent, or a person who took over (then the agent's input rejects with HumanInControlError). */
  control?: Control;
  /** A help request of it is pending. */
  needs_help?: boolean;
  /** How many approval requests of it are pending. */
  pending_approvals?: number;
}

/** A DeleteResult as the API shows it. */
export interface DeleteResult {
  desktop: Desktop;
  data_deleted: boolean;
  data_disk_kept?: string;
}

/** A Event as the API shows it. */
export interface Event {
  id: string;
  desktop_id: string;
  type: string;
  message: string;
  actor: string;
  created_at: string;
}

/** A Snapshot as the API shows it. */
export interface Snapshot {
  id: string;
  desktop_id: string;
  name: string;
  description?: string;
  scope: string;
  memory: boolean;
  parent?: string;
  size_bytes: number;
  created_at: string;
  reverted_at?: string;
}

/** A Image as the API shows it. */
export interface Image {
  name: string;
  os: string;
  version: string;
  path?: string;
  size_bytes: number;
  sha256: string;
  recipe_hash?: string;
  source: string;
  created_at: string;
}

/** A Template as the API shows it. */
export interface Template {
  key: string;
  image: string;
  vcpus: number;
  memory_mib: number;
  state: "building" | "ready" | "failed";
  error?: string;
  created_at: string;
  build_time?: string;
  spares?: number;
}

/** A Token as the API shows it. */
export interface Token {
  id: string;
  owner: string;
  name: string;
  scope: "admin" | "owner" | "desktop";
  created_at: string;
  last_used_at?: string;
  expires_at?: string;
  revoked_at?: string;
  desktop_id?: string;
  computer_only?: boolean;
  parent_id?: string;
  /** "session": a sign-in (the web console's cookie); "api": any other token. */
  kind: "session" | "api";
  /** A team token's role in its team (owner = the team); "" for others. */
  role: "" | "admin" | "member" | "viewer";
  /** The person a team token acts for; "" for others. */
  member: string;
}

/** A TokenCreated as the API shows it. */
export interface TokenCreated {
  token: string;
  info: Token;
}

/** A ConsoleToken as the API shows it. */
export interface ConsoleToken {
  id: string;
  desktop_id: string;
  owner: string;
  view_only: boolean;
  /** Made by a computer-only token: the screen only, no terminal or clipboard. */
  screen_only?: boolean;
  created_by: string;
  /** Who the link is for ("Dana"), when its maker said: shown to the others watching and in the history. */
  name?: string;
  created_at: string;
  expires_at: string;
  revoked_at?: string;
  revoke_reason?: string;
}

/** A ConsoleCreated as the API shows it. */
export interface ConsoleLink {
  id: string;
  desktop_id: string;
  owner: string;
  view_only: boolean;
  /** Made by a computer-only token: the screen only, no terminal or clipboard. */
  screen_only?: boolean;
  created_by: string;
  /** Who the link is for ("Dana"), when its maker said: shown to the others watching and in the history. */
  name?: string;
  created_at: string;
  expires_at: string;
  revoked_at?: string;
  revoke_reason?: string;
  token: string;
  url: string;
}

/** A Share as the API shows it. */
export interface Share {
  id: string;
  desktop_id: string;
  owner: string;
  port: number;
  read_only: boolean;
  created_by?: string;
  created_at: string;
  expires_at: string;
  revoked_at?: string;
}

/** A ShareCreated as the API shows it. */
export interface ShareCreated {
  share: Share;
  path_url: string;
  url?: string;
}

/** A LiveURL as the API shows it. */
export interface LiveURL {
  port: number;
  url?: string;
  path_url: string;
  public: boolean;
  service?: string;
  shares: number;
}

/** A URLLogin as the API shows it. */
export interface URLLogin {
  port: number;
  url: string;
  expires_in_s: number;
}

/** A Secret as the API shows it. */
export interface Secret {
  name: string;
  scope: "owner" | "desktop";
  desktop_id?: string;
  owner: string;
  created_at: string;
  updated_at: string;
  /** An owner secret's desktops that reach it on their own ("*": all). */
  desktops?: string[];
}

/** A Quota as the API shows it. */
export interface Quota {
  owner: string;
  plan: string;
  max_desktops: number;
  max_vcpus: number;
  max_memory_mib: number;
  max_disk_gib: number;
  max_snapshots: number;
}

/** A Usage as the API shows it. */
export interface Usage {
  desktops: number;
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  snapshots: number;
}

/** A host's drain: every desktop moved off it, one at a time. */
export interface Drain {
  started_at: string;
  /** Every desktop was tried (or the drain was ended). */
  done: boolean;
  ended_at?: string;
  /** The id of the desktop being moved now. */
  moving?: string;
  moved: number;
  /** The desktops that could not be moved off (by id), and why. */
  left: Record<string, string>;
}

/** A Host as the API shows it: a libvirt host desktops run on, as bureau last checked it. */
export interface Host {
  name: string;
  uri: string;
  labels: Record<string, string>;
  state: "connecting" | "up" | "unreachable";
  hostname: string;
  libvirt_version: string;
  accelerator: "kvm" | "tcg" | "";
  cpus: number;
  memory_mib: number;
  free_memory_mib: number;
  /** The filesystem of bureau's data directory on the host (0 until measured). */
  disk_mib: number;
  free_disk_mib: number;
  /** Live desktops placed on the host. */
  desktops: number;
  /** Memory of its desktops that hold RAM now (not stopped, hibernated, crashed or in error). */
  committed_memory_mib: number;
  /** bureau is moving every desktop off the host and places none there. */
  draining: boolean;
  /** Its drain under way, or its last one since bureau started. */
  drain?: Drain;
  ssh_address?: string;
  ssh_host_key?: string;
  bridge?: string;
  subnet?: string;
  /** bureau's desktop network and firewall are in place there. */
  ready: boolean;
  ready_error?: string;
  last_error?: string;
  last_seen_at?: string;
  created_at: string;
}

/** Asks bureau to pick a desktop's host: one whose labels include all of these (at most 32). */
export interface PlacementRequest {
  labels: Record<string, string>;
}

/** A VMStats as the API shows it. */
export interface Stats {
  cpu_time_ns: number;
  vcpus: number;
  memory_max_kib: number;
  memory_current_kib: number;
  memory_rss_kib: number;
  memory_available_kib?: number;
  memory_unused_kib?: number;
  memory_usable_kib?: number;
  disks: Record<string, unknown>[];
  networks: Record<string, unknown>[];
}

/** A ExecResult as the API shows it. */
export interface ExecResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  encoding?: string;
  truncated: boolean;
  timed_out: boolean;
  duration_ms: number;
}

/** A Process as the API shows it. */
export interface Process {
  id: string;
  name?: string;
  pid: number;
  command: string[];
  running: boolean;
  exit_code?: number;
  started_at: string;
  ended_at?: string;
  log_bytes: number;
}

/** A Service as the API shows it. */
export interface Service {
  name: string;
  command: string[];
  cwd?: string;
  env?: Record<string, unknown>;
  secrets?: string[];
  port?: number;
  restart: string;
  user: string;
  state: string;
  reason?: string;
  pid?: number;
  restarts: number;
  exit_code?: number;
  started_at?: string;
  ended_at?: string;
  uptime_s?: number;
  log_bytes: number;
  url?: string;
  live_url?: string;
}

/** A AgentStatus as the API shows it. */
export interface AgentStatus {
  up: boolean;
  version?: string;
  sha256?: string;
  current: boolean;
  error?: string;
}

/** A FileStat as the API shows it. */
export interface FileStat {
  path: string;
  dir: boolean;
  size: number;
  entries?: FileEntry[];
  truncated?: boolean;
}

/** A FileEntry as the API shows it. */
export interface FileEntry {
  name: string;
  type: "file" | "dir" | "link" | "other";
  size: number;
  mode: string;
  mtime: number;
}

/** A Clipboard as the API shows it. */
export interface Clipboard {
  text: string;
  types: string[];
}

/** A ComputerResult as the API shows it. */
export interface ComputerResult {
  results: StepResult[];
  screenshot?: ScreenImage;
  display: Size;
  screen: Size;
  /** Why input actions carry no `screen_changed` although a check was asked for (`unavailable: …`). */
  verify?: string;
}

/** A StepResult as the API shows it. */
export interface StepResult {
  action: string;
  duration_ms: number;
  image?: ScreenImage;
  cursor?: Record<string, unknown>;
  typed_via?: "keyboard" | "keyboard+paste";
  chars?: number;
  keyboard?: "virtio" | "virtio-paced" | "ps2";
  /** Input actions, when checked: whether the screen changed within the window after the input. */
  screen_changed?: boolean;
  /** With screen_changed true: how long after the input ended the first change was seen. */
  changed_after_ms?: number;
  /** The accessibility element the action named instead of a coordinate, and what became of it. */
  element?: StepElement;
}

/** The element a computer-use action named: the node acted on, whether its states (focus among them) changed after it, or it is gone. */
export interface StepElement {
  id: string;
  role: string;
  name: string;
  changed: boolean;
  gone?: boolean;
}

/** A ScreenImage as the API shows it. */
export interface ScreenImage {
  media_type: "image/png" | "image/jpeg";
  data: string;
  width: number;
  height: number;
  settled?: boolean;
  settle_ms?: number;
  /** Image pixels per screen pixel. */
  scale?: number;
  /** The vertical scale, only when it differs from scale. */
  scale_y?: number;
  /** The coordinates actions take, as this image relates to them. */
  coordinates?: "display" | "screen" | "region";
}

/** A Size as the API shows it. */
export interface Size {
  width: number;
  height: number;
}

/** A StreamToken as the API shows it. */
export interface StreamToken {
  token: string;
  expires_at: string;
  url: string;
}

/** A recording of a desktop's screen (WebM): second t of its video is `started_at` + t. */
export interface Recording {
  id: string;
  desktop_id: string;
  /** The desktop's name (its last one once deleted). */
  desktop_name: string;
  /** Its desktop is deleted: only the `*ById` methods and `listAll` reach it. */
  desktop_deleted: boolean;
  /** The desktop's owner, who keeps the recording. */
  owner: string;
  /** It stays when the desktop is deleted, and the size budget never removes it: only its owner deletes it. */
  kept: boolean;
  state: "recording" | "done" | "failed";
  /** Who started it. */
  actor: string;
  fps: number;
  max_seconds: number;
  /** The video's width (the screen's when it began; a later size is scaled to it). */
  width: number;
  height: number;
  /** The screens that changed (the first included). */
  frames: number;
  /** The file's size (0 while recording). */
  size_bytes: number;
  /** The time of the video's first frame. */
  started_at: string;
  ended_at?: string;
  /** How long it covers (so far, while recording). */
  duration_ms: number;
  /** What ended it. */
  ended_why?: string;
  /** Why it failed. */
  error?: string;
  /** Where its video is, once finished: GET it with the same token. */
  video_url?: string;
}

/** A backup of a desktop's data disk, as it goes (`running`, with its progress) and once it ended. */
export interface Backup {
  id: string;
  desktop_id: string;
  /** The desktop's name when it was taken. */
  desktop_name: string;
  /** The desktop's owner, whose backup it is (it outlives the desktop). */
  owner: string;
  target_id: string;
  /** Only a complete backup exists in its target and can be restored. */
  state: "running" | "complete" | "failed";
  /** incremental: only what changed since `parent` was read. */
  kind: "full" | "incremental";
  /** Why a full backup is full. */
  why_full?: string;
  /** filesystem (frozen by the guest agent), crash (as after a power cut), stopped; "" until the disk is marked. */
  consistency: "filesystem" | "crash" | "stopped" | "";
  parent?: string;
  /** The data disk's size (a restore makes one this size). */
  disk_bytes: number;
  image: string;
  vcpus: number;
  memory_mib: number;
  /** Bytes of the disk read so far, of `read_total` (0 until known). */
  bytes_read: number;
  read_total: number;
  chunks: number;
  /** The chunks the target lacked, and the bytes uploaded for them (compressed, encrypted). */
  chunks_new: number;
  bytes_new: number;
  started_at: string;
  finished_at?: string;
  /** Why it failed. */
  error?: string;
}

/** Where backups go: a directory (`dir`) or a bucket of an S3-compatible store (`s3`); never its secret key. */
export interface BackupTarget {
  id: string;
  name: string;
  kind: "s3" | "dir";
  dir?: string;
  s3?: S3Location;
  created_at: string;
  created_by: string;
}

/** An s3 target's bucket and access key. */
export interface S3Location {
  /** host:port */
  endpoint: string;
  bucket: string;
  prefix?: string;
  region?: string;
  access_key: string;
  /** Plain HTTP. */
  insecure: boolean;
}

/** What verifying a backup found. */
/** A file, folder, symlink or other thing in a backup (`path` the desktop's, under /home; `mode` octal, "0644"). */
export interface BackupFile {
  name: string;
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  mode: string;
  modified: string;
  link_target?: string;
}

/** A path of a backup and, for a folder, its entries sorted by name (`truncated`: more than the 10 000 listed). */
export interface BackupFiles {
  backup_id: string;
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  mode: string;
  modified: string;
  link_target?: string;
  entries: BackupFile[];
  truncated?: boolean;
}

/** Asks to put a file or folder of a backup back into a running desktop. */
export interface BackupFilesRestore {
  path: string;
  desktop: string;
  to?: string;
  overwrite?: boolean;
}

/** What putting files of a backup back into a desktop wrote. */
export interface BackupFilesRestored {
  backup_id: string;
  desktop_id: string;
  path: string;
  to: string;
  files: number;
  bytes: number;
}

export interface BackupCheck {
  backup_id: string;
  chunks: number;
  missing: string[];
  corrupt: string[];
  /** Every chunk is there and intact. */
  ok: boolean;
  took_ms: number;
}

/**
 * A desktop backed up every `every_minutes` to a target, its backups there thinned out after each: the newest always
 * stays, and so do the newest `keep_last` and the newest of each of the newest `keep_hourly` hours, `keep_daily` days
 * and `keep_weekly` ISO weeks.
 */
export interface BackupSchedule {
  desktop_id: string;
  target_id: string;
  every_minutes: number;
  keep_last: number;
  keep_hourly: number;
  keep_daily: number;
  keep_weekly: number;
  /** When the next scheduled backup is due. */
  next_at: string;
  updated_at: string;
  /** Who set it: `<owner>/<token id>`. */
  updated_by: string;
}

/** A backup schedule to set: what is left out takes its default (every 60 minutes to the only target; keep the last 0, hourly 24, daily 7, weekly 4). */
export interface BackupScheduleRequest {
  /** The target's name or id. */
  target?: string;
  every_minutes?: number;
  keep_last?: number;
  keep_hourly?: number;
  keep_daily?: number;
  keep_weekly?: number;
}

/** One thing done in a desktop: a computer-use call (its actions), an exec, a file write or delete, a clipboard write. */
export interface Step {
  desktop_id: string;
  /** Numbers the desktop's steps from 1. */
  seq: number;
  /** When the call began. */
  at: string;
  duration_ms: number;
  /** The owner and token that made it (`alice/tok_…`). */
  actor: string;
  kind: "computer" | "exec" | "file_write" | "file_delete" | "clipboard";
  /** What was asked: computer `{actions, display, screenshot}`, exec `{cmd, argv, cwd, user, env, secrets, background, name, timeout_s}`, files `{path, …}`, clipboard `{chars}`. */
  input: Record<string, unknown>;
  /** What the call answered, without images, output clipped to 4 KiB (null when it answered nothing). */
  result: unknown;
  /** The HTTP status the call answered. */
  status: number;
  /** The error's message (absent when it succeeded). */
  error?: string;
  thumbnail_before: boolean;
  thumbnail_after: boolean;
  /** The snapshot taken just before the step: asked for with `checkpoint` (`checkpoint-<unix ms>`) or by the desktop's checkpoint policy (`auto-<unix ms>`). */
  checkpoint?: string;
  /** Why the automatic checkpoint due before this step was not taken (the call went on without it). */
  checkpoint_error?: string;
}

/**
 * A desktop's automatic checkpoint policy: a snapshot (`auto-<unix ms>`) just before the first step and every
 * `every_steps`-th after the last checkpoint, and before every step of a kind in `before`; the newest `keep` stay.
 */
export interface CheckpointPolicy {
  every_steps: number;
  before: Array<"computer" | "exec" | "file_write" | "file_delete" | "clipboard">;
  /** Snapshot the RAM as well as the disks. */
  memory: boolean;
  /** How many automatic checkpoints are kept (1 to 50). */
  keep: number;
}

/** The step log for replay: `steps` (format bureau), `tools` and `messages` (anthropic) or `tools` and `input` (openai). */
export interface StepExport {
  format: "bureau" | "anthropic" | "openai";
  desktop_id: string;
  /** Export again with this `after` for the next steps (Steps.export follows it). */
  next_after?: number;
  steps?: Step[];
  tools?: Record<string, unknown>[];
  messages?: Record<string, unknown>[];
  input?: Record<string, unknown>[];
}

/** What reverting to before a step did: the snapshot it went back to, and the last step that snapshot holds (the steps after it are undone). */
export interface StepRevert {
  desktop: Desktop;
  snapshot: Snapshot;
  holds_through_step: number;
  /** Set when the step's own checkpoint is gone: which snapshot was used instead. */
  note?: string;
}

/** A rectangle in pixels: screen pixels (bounds), or those of the display asked for (display_bounds). */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A window of the desktop's session; geometry (the client area) in screen pixels. */
export interface Window {
  /** The X window id, `0x1e00004`. */
  id: string;
  title: string;
  /** WM_CLASS's class (`Mousepad`). */
  app: string;
  /** WM_CLASS's instance (`mousepad`). */
  instance: string;
  /** The process that owns it (0 when the app does not say). */
  pid: number;
  x: number;
  y: number;
  width: number;
  height: number;
  focused: boolean;
  minimized: boolean;
  maximized: boolean;
  /** From 0; -1 when it is on every workspace. */
  workspace: number;
  /** The window manager's frame around the client area, each side's width. */
  frame: { left: number; right: number; top: number; bottom: number };
  /** With a display asked for: the part of the client area on the screen in its coordinates (clicks there land in it). */
  display_bounds?: Rect;
}

/** The session's windows, oldest first, and its screen. */
export interface WindowList {
  windows: Window[];
  screen: { width: number; height: number; workspace: number };
}

/** What a close did: closed, or the window still open (its app may be asking to save). */
export interface WindowClosed {
  closed: boolean;
  window?: Window;
}

/** An app launched: its process and its window (null when none opened in time, or the process failed first: its exit_code). */
export interface LaunchAppResult {
  process: Process;
  window: Window | null;
  timed_out: boolean;
}

/** An element of the accessibility tree. Its id lasts while its application keeps it (then GoneError). */
export interface UINode {
  id: string;
  /** AT-SPI2's role name: `application`, `frame`, `push button`, `text`, `check box`, `menu item`, `link`… */
  role: string;
  name: string;
  description?: string;
  /** The states set: `focused`, `focusable`, `showing`, `enabled`, `sensitive`, `checked`, `selected`, `expanded`, `editable`… */
  states: string[];
  /** A range's value (slider, spin button, scroll bar, progress bar). */
  value?: { current: number; min: number; max: number };
  /** A text element's content (never a password's), at most 2000 characters. */
  text?: string;
  text_truncated?: boolean;
  /** Its own actions (`click`, `press`, `activate`, `jump`, `expand or contract`…). */
  actions: string[];
  /** Where it is on the screen, in screen pixels. */
  bounds?: Rect;
  /** With a display asked for: the part of bounds on the screen in its coordinates. */
  display_bounds?: Rect;
  parent?: string;
  /** Its children's ids, answered or not. */
  children: string[];
  child_count: number;
  app: string;
  /** 0 for an application, 1 for its windows, and so on. */
  depth: number;
}

/** Nodes of the tree (parents first) or of a search (flat); truncated when a limit or the time left some out. */
export interface UINodeList {
  nodes: UINode[];
  truncated: boolean;
  screen: Size;
  display?: Size;
  /** What the walk left out and why (an application that did not answer in time). */
  warnings?: string[];
}

/** An action on an element: the element read again (as it was when gone), whether it changed, and what was done. */
export interface UIActResult {
  node: UINode;
  changed: boolean;
  gone: boolean;
  performed: string;
  screen: Size;
  display?: Size;
}

/**
 * Who holds a desktop's mouse and keyboard: the agent (the default) or one person who took over. While a person holds
 * it, the agent's input calls reject with HumanInControlError; its reads keep working.
 */
export interface Control {
  holder: "agent" | "person";
  /** The person's name as shown ("Dana"). */
  person?: string;
  /** Who holds it: a token (`alice/tok_…`) or a console link (`console/ct_…`). */
  by?: string;
  /** When the holder took it. */
  since: string;
  /** When control goes back to the agent by itself: `idle_timeout_s` after the person's last input. */
  until?: string;
  idle_timeout_s?: number;
}

/** A desktop's Control, and who is watching it in the console (`people.control()`, `takeControl`, `releaseControl`). */
export interface ControlView extends Control {
  viewers: Viewer[];
}

/** Someone watching a desktop in the console. */
export interface Viewer {
  /** The console link's id. */
  session: string;
  name: string;
  view_only: boolean;
  since: string;
  /** This session's keyboard and mouse reach the desktop. */
  holds_input: boolean;
}

/** What an approval request would let happen. */
export interface RequestAction {
  kind: "exec" | "file_delete" | "key" | "click" | "url" | "explicit";
  /** It in one line ("exec: rm -rf /home/agent/build"). */
  summary: string;
  /** The policy rule that matched ("exec[0]: rm -rf"; absent for the agent's own requests). */
  rule?: string;
  /** The call's input as the caller gave it. */
  detail?: unknown;
}

/**
 * A help request (kind "help": a question, maybe choices; `answer` once answered) or an approval request (kind
 * "approval": `action`; `reason` once decided). `status` is "pending", then "answered", "approved", "denied" or
 * "expired"; `gated`: a call of the agent waits for it.
 */
export interface Request {
  id: string;
  desktop_id: string;
  owner: string;
  kind: "help" | "approval";
  status: "pending" | "answered" | "approved" | "denied" | "expired";
  /** What a help request asks (for an approval, what is to be approved, in words). */
  question: string;
  choices?: string[];
  action?: RequestAction;
  /** A picture of the screen came with it (`people.requestScreenshot`). */
  screenshot: boolean;
  /** The token that asked (`alice/tok_…`). */
  asked_by: string;
  asked_at: string;
  expires_at: string;
  gated: boolean;
  /** Who answered or decided (absent when it timed out). */
  decided_by?: string;
  decided_at?: string;
  /** A help request's answer: the text, or the choice made. */
  answer?: string;
  /** `answer` is one of `choices`. */
  choice?: boolean;
  /** Why an approval was approved or denied (a person's words, or "no decision within 5m0s"). */
  reason?: string;
}

/** A key press that needs approval: `key` ("Return", "ctrl+s"), while the active window's title matches `window_title` (RE2). */
export interface KeyRule {
  key: string;
  window_title?: string;
}

/** Clicks inside a rectangle of the screen that need approval (while the active window's title matches `window_title`). */
export interface ClickRegion {
  name?: string;
  x: number;
  y: number;
  width: number;
  height: number;
  window_title?: string;
}

/** Which of the agent's calls on a desktop wait for a person's approval (`{}`: none). */
export interface ApprovalPolicy {
  /** RE2 patterns matched against an exec call's command line (arguments joined with spaces). */
  exec?: string[];
  /** Every file delete. */
  file_delete?: boolean;
  keys?: KeyRule[];
  clicks?: ClickRegion[];
  /** RE2 patterns matched against URLs in apps/launch arguments and exec command lines. */
  urls?: string[];
  /** How long a gated call waits for a decision before it is denied (default 300, 5 to 3600). */
  timeout_s?: number;
}

/** What a desktop may reach outside: IPv4 addresses, CIDRs or host names */
export interface NetworkPolicy {
  allow_out?: string[];
  deny_out?: string[];
  /** Drop the desktop's DNS to its gateway (for allow-lists: no DNS tunnelling). */
  deny_dns?: boolean;
}

/** Each interface's schema and fields, for the drift tests (fieldcheck.ts ties each list to its interface). */
export const FIELDS = {
  Desktop: { schema: "Desktop", fields: ["id", "owner", "name", "image", "vcpus", "memory_mib", "data_disk_gib", "state", "desired_state", "last_error", "operation", "operation_step", "operation_started_at", "ready", "ready_at", "up", "waiting_for", "accelerator", "data_disk_path", "idle_timeout_seconds", "nap_after_seconds", "sleep_after_seconds", "restart_on_crash", "network", "keyboard_layout", "ip", "host", "created_at", "updated_at", "deleted_at", "control", "needs_help", "pending_approvals"] },
  DeleteResult: { schema: "DeleteResult", fields: ["desktop", "data_deleted", "data_disk_kept"] },
  Event: { schema: "Event", fields: ["id", "desktop_id", "type", "message", "actor", "created_at"] },
  Snapshot: { schema: "Snapshot", fields: ["id", "desktop_id", "name", "description", "scope", "memory", "parent", "size_bytes", "created_at", "reverted_at"] },
  Image: { schema: "Image", fields: ["name", "os", "version", "path", "size_bytes", "sha256", "recipe_hash", "source", "created_at"] },
  Template: { schema: "Template", fields: ["key", "image", "vcpus", "memory_mib", "state", "error", "created_at", "build_time", "spares"] },
  Token: { schema: "Token", fields: ["id", "owner", "name", "scope", "created_at", "last_used_at", "expires_at", "revoked_at", "desktop_id", "computer_only", "parent_id", "kind", "role", "member"] },
  TokenCreated: { schema: "TokenCreated", fields: ["token", "info"] },
  ConsoleToken: { schema: "ConsoleToken", fields: ["id", "desktop_id", "owner", "view_only", "screen_only", "created_by", "name", "created_at", "expires_at", "revoked_at", "revoke_reason"] },
  ConsoleLink: { schema: "ConsoleCreated", fields: ["id", "desktop_id", "owner", "view_only", "screen_only", "created_by", "name", "created_at", "expires_at", "revoked_at", "revoke_reason", "token", "url"] },
  Share: { schema: "Share", fields: ["id", "desktop_id", "owner", "port", "read_only", "created_by", "created_at", "expires_at", "revoked_at"] },
  ShareCreated: { schema: "ShareCreated", fields: ["share", "path_url", "url"] },
  LiveURL: { schema: "LiveURL", fields: ["port", "url", "path_url", "public", "service", "shares"] },
  URLLogin: { schema: "URLLogin", fields: ["port", "url", "expires_in_s"] },
  Secret: { schema: "Secret", fields: ["name", "scope", "desktop_id", "owner", "created_at", "updated_at", "desktops"] },
  Quota: { schema: "Quota", fields: ["owner", "plan", "max_desktops", "max_vcpus", "max_memory_mib", "max_disk_gib", "max_snapshots"] },
  Usage: { schema: "Usage", fields: ["desktops", "vcpus", "memory_mib", "disk_mib", "snapshots"] },
  Host: { schema: "Host", fields: ["name", "uri", "labels", "state", "hostname", "libvirt_version", "accelerator", "cpus", "memory_mib", "free_memory_mib", "disk_mib", "free_disk_mib", "desktops", "committed_memory_mib", "draining", "drain", "ssh_address", "ssh_host_key", "bridge", "subnet", "ready", "ready_error", "last_error", "last_seen_at", "created_at"] },
  Drain: { schema: "Drain", fields: ["started_at", "done", "ended_at", "moving", "moved", "left"] },
  PlacementRequest: { schema: "PlacementRequest", fields: ["labels"] },
  Stats: { schema: "VMStats", fields: ["cpu_time_ns", "vcpus", "memory_max_kib", "memory_current_kib", "memory_rss_kib", "memory_available_kib", "memory_unused_kib", "memory_usable_kib", "disks", "networks"] },
  ExecResult: { schema: "ExecResult", fields: ["exit_code", "stdout", "stderr", "encoding", "truncated", "timed_out", "duration_ms"] },
  Process: { schema: "Process", fields: ["id", "name", "pid", "command", "running", "exit_code", "started_at", "ended_at", "log_bytes"] },
  Service: { schema: "Service", fields: ["name", "command", "cwd", "env", "secrets", "port", "restart", "user", "state", "reason", "pid", "restarts", "exit_code", "started_at", "ended_at", "uptime_s", "log_bytes", "url", "live_url"] },
  AgentStatus: { schema: "AgentStatus", fields: ["up", "version", "sha256", "current", "error"] },
  FileStat: { schema: "FileStat", fields: ["path", "dir", "size", "entries", "truncated"] },
  FileEntry: { schema: "FileEntry", fields: ["name", "type", "size", "mode", "mtime"] },
  Clipboard: { schema: "Clipboard", fields: ["text", "types"] },
  ComputerResult: { schema: "ComputerResult", fields: ["results", "screenshot", "display", "screen", "verify"] },
  StepResult: { schema: "StepResult", fields: ["action", "duration_ms", "image", "cursor", "typed_via", "chars", "keyboard", "screen_changed", "changed_after_ms", "element"] },
  ScreenImage: { schema: "ScreenImage", fields: ["media_type", "data", "width", "height", "settled", "settle_ms", "scale", "scale_y", "coordinates"] },
  Size: { schema: "Size", fields: ["width", "height"] },
  StreamToken: { schema: "StreamToken", fields: ["token", "expires_at", "url"] },
  NetworkPolicy: { schema: "NetworkPolicy", fields: ["allow_out", "deny_out", "deny_dns"] },
  Recording: { schema: "Recording", fields: ["id", "desktop_id", "desktop_name", "desktop_deleted", "owner", "kept", "state", "actor", "fps", "max_seconds", "width", "height", "frames", "size_bytes", "started_at", "ended_at", "duration_ms", "ended_why", "error", "video_url"] },
  Step: { schema: "Step", fields: ["desktop_id", "seq", "at", "duration_ms", "actor", "kind", "input", "result", "status", "error", "thumbnail_before", "thumbnail_after", "checkpoint", "checkpoint_error"] },
  CheckpointPolicy: { schema: "CheckpointPolicy", fields: ["every_steps", "before", "memory", "keep"] },
  StepExport: { schema: "StepExport", fields: ["format", "desktop_id", "next_after", "steps", "tools", "messages", "input"] },
  Backup: { schema: "Backup", fields: ["id", "desktop_id", "desktop_name", "owner", "target_id", "state", "kind", "why_full", "consistency", "parent", "disk_bytes", "image", "vcpus", "memory_mib", "bytes_read", "read_total", "chunks", "chunks_new", "bytes_new", "started_at", "finished_at", "error"] },
  BackupTarget: { schema: "BackupTarget", fields: ["id", "name", "kind", "dir", "s3", "created_at", "created_by"] },
  S3Location: { schema: "S3Location", fields: ["endpoint", "bucket", "prefix", "region", "access_key", "insecure"] },
  BackupCheck: { schema: "BackupCheck", fields: ["backup_id", "chunks", "missing", "corrupt", "ok", "took_ms"] },
  BackupFile: { schema: "BackupFile", fields: ["name", "path", "type", "size", "mode", "modified", "link_target"] },
  BackupFiles: { schema: "BackupFiles", fields: ["backup_id", "path", "type", "size", "mode", "modified", "link_target", "entries", "truncated"] },
  BackupFilesRestore: { schema: "BackupFilesRestore", fields: ["path", "desktop", "to", "overwrite"] },
  BackupFilesRestored: { schema: "BackupFilesRestored", fields: ["backup_id", "desktop_id", "path", "to", "files", "bytes"] },
  BackupSchedule: { schema: "BackupSchedule", fields: ["desktop_id", "target_id", "every_minutes", "keep_last", "keep_hourly", "keep_daily", "keep_weekly", "next_at", "updated_at", "updated_by"] },
  BackupScheduleRequest: { schema: "BackupScheduleRequest", fields: ["target", "every_minutes", "keep_last", "keep_hourly", "keep_daily", "keep_weekly"] },
  Rect: { schema: "UIRect", fields: ["x", "y", "width", "height"] },
  Window: { schema: "Window", fields: ["id", "title", "app", "instance", "pid", "x", "y", "width", "height", "focused", "minimized", "maximized", "workspace", "frame", "display_bounds"] },
  WindowList: { schema: "WindowList", fields: ["windows", "screen"] },
  WindowClosed: { schema: "WindowClosed", fields: ["closed", "window"] },
  LaunchAppResult: { schema: "LaunchAppResult", fields: ["process", "window", "timed_out"] },
  UINode: { schema: "UINode", fields: ["id", "role", "name", "description", "states", "value", "text", "text_truncated", "actions", "bounds", "display_bounds", "parent", "children", "child_count", "app", "depth"] },
  UINodeList: { schema: "UINodeList", fields: ["nodes", "truncated", "screen", "display", "warnings"] },
  UIActResult: { schema: "UIActResult", fields: ["node", "changed", "gone", "performed", "screen", "display"] },
  Control: { schema: "Control", fields: ["holder", "person", "by", "since", "until", "idle_timeout_s"] },
  ControlView: { schema: "ControlView", fields: ["holder", "person", "by", "since", "until", "idle_timeout_s", "viewers"] },
  Viewer: { schema: "Viewer", fields: ["session", "name", "view_only", "since", "holds_input"] },
  RequestAction: { schema: "RequestAction", fields: ["kind", "summary", "rule", "detail"] },
  Request: { schema: "Request", fields: ["id", "desktop_id", "owner", "kind", "status", "question", "choices", "action", "screenshot", "asked_by", "asked_at", "expires_at", "gated", "decided_by", "decided_at", "answer", "choice", "reason"] },
  ApprovalPolicy: { schema: "ApprovalPolicy", fields: ["exec", "file_delete", "keys", "clicks", "urls", "timeout_s"] },
} as const satisfies Record<string, { schema: string; fields: readonly string[] }>;
