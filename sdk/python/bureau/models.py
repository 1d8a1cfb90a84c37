"""The API's resources as dataclasses.

Made from the OpenAPI spec's schemas (the drift check compares each class's
fields with its schema, committed and served); unknown fields of a newer
server are kept in ``extra`` rather than refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar



@dataclass
class Model:
    """Base: from_dict keeps known fields and puts the rest in extra."""

    SCHEMA: ClassVar[str] = ""
    extra: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict | None) -> Any:
        if d is None:
            return None
        known = {f.name for f in fields(cls)} - {"extra"}
        obj = cls(**{k: v for k, v in d.items() if k in known})
        obj.extra = {k: v for k, v in d.items() if k not in known}
        obj._nest()
        return obj

    def _nest(self) -> None:
        """Turns nested dicts into their models (overridden where needed)."""

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        out.update(self.extra)
        return out



@dataclass
class Desktop(Model):
    """A Desktop as the API shows it."""

    SCHEMA: ClassVar[str] = 'Desktop'
    id: str | None = None
    owner: str | None = None
    name: str | None = None
    image: str | None = None
    vcpus: int | None = None
    memory_mib: int | None = None
    data_disk_gib: int | None = None
    state: str | None = None
    desired_state: str | None = None
    last_error: str | None = None
    operation: str | None = None
    operation_step: str | None = None
    operation_started_at: str | None = None
    ready: bool | None = None
    ready_at: str | None = None
    up: str | None = None
    waiting_for: str | None = None
    accelerator: str | None = None
    data_disk_path: str | None = None
    idle_timeout_seconds: int | None = None
    nap_after_seconds: int | None = None
    sleep_after_seconds: int | None = None
    restart_on_crash: bool | None = None
    network: dict | None = None
    keyboard_layout: str | None = None
    ip: str | None = None
    host: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    deleted_at: str | None = None
    control: dict | None = None
    needs_help: bool | None = None
    pending_approvals: int | None = None

    def _nest(self) -> None:
        self.control = Control.from_dict(self.control) if isinstance(self.control, dict) else self.control


@dataclass
class DeleteResult(Model):
    """A DeleteResult as the API shows it."""

    SCHEMA: ClassVar[str] = 'DeleteResult'
    desktop: dict | None = None
    data_deleted: bool | None = None
    data_disk_kept: str | None = None

    def _nest(self) -> None:
        self.desktop = Desktop.from_dict(self.desktop) if isinstance(self.desktop, dict) else self.desktop


@dataclass
class Event(Model):
    """A Event as the API shows it."""

    SCHEMA: ClassVar[str] = 'Event'
    id: str | None = None
    desktop_id: str | None = None
    type: str | None = None
    message: str | None = None
    actor: str | None = None
    created_at: str | None = None


@dataclass
class Snapshot(Model):
    """A Snapshot as the API shows it."""

    SCHEMA: ClassVar[str] = 'Snapshot'
    id: str | None = None
    desktop_id: str | None = None
    name: str | None = None
    description: str | None = None
    scope: str | None = None
    memory: bool | None = None
    parent: str | None = None
    size_bytes: int | None = None
    created_at: str | None = None
    reverted_at: str | None = None


@dataclass
class Image(Model):
    """A Image as the API shows it."""

    SCHEMA: ClassVar[str] = 'Image'
    name: str | None = None
    os: str | None = None
    version: str | None = None
    path: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    recipe_hash: str | None = None
    source: str | None = None
    created_at: str | None = None


@dataclass
class Template(Model):
    """A Template as the API shows it."""

    SCHEMA: ClassVar[str] = 'Template'
    key: str | None = None
    image: str | None = None
    vcpus: int | None = None
    memory_mib: int | None = None
    state: str | None = None
    error: str | None = None
    created_at: str | None = None
    build_time: str | None = None
    spares: int | None = None


@dataclass
class Token(Model):
    """A Token as the API shows it."""

    SCHEMA: ClassVar[str] = 'Token'
    id: str | None = None
    owner: str | None = None
    name: str | None = None
    scope: str | None = None
    created_at: str | None = None
    last_used_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    desktop_id: str | None = None
    computer_only: bool | None = None
    parent_id: str | None = None
    kind: str | None = None
    role: str | None = None
    member: str | None = None


@dataclass
class TokenCreated(Model):
    """A TokenCreated as the API shows it."""

    SCHEMA: ClassVar[str] = 'TokenCreated'
    token: str | None = None
    info: dict | None = None

    def _nest(self) -> None:
        self.info = Token.from_dict(self.info) if isinstance(self.info, dict) else self.info


@dataclass
class ConsoleToken(Model):
    """A ConsoleToken as the API shows it."""

    SCHEMA: ClassVar[str] = 'ConsoleToken'
    id: str | None = None
    desktop_id: str | None = None
    owner: str | None = None
    view_only: bool | None = None
    screen_only: bool | None = None
    created_by: str | None = None
    name: str | None = None
    created_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    revoke_reason: str | None = None


@dataclass
class ConsoleLink(Model):
    """A ConsoleCreated as the API shows it."""

    SCHEMA: ClassVar[str] = 'ConsoleCreated'
    id: str | None = None
    desktop_id: str | None = None
    owner: str | None = None
    view_only: bool | None = None
    screen_only: bool | None = None
    created_by: str | None = None
    name: str | None = None
    created_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    revoke_reason: str | None = None
    token: str | None = None
    url: str | None = None


@dataclass
class Share(Model):
    """A Share as the API shows it."""

    SCHEMA: ClassVar[str] = 'Share'
    id: str | None = None
    desktop_id: str | None = None
    owner: str | None = None
    port: int | None = None
    read_only: bool | None = None
    created_by: str | None = None
    created_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None


@dataclass
class ShareCreated(Model):
    """A ShareCreated as the API shows it."""

    SCHEMA: ClassVar[str] = 'ShareCreated'
    share: dict | None = None
    path_url: str | None = None
    url: str | None = None

    def _nest(self) -> None:
        self.share = Share.from_dict(self.share) if isinstance(self.share, dict) else self.share


@dataclass
class LiveURL(Model):
    """A LiveURL as the API shows it."""

    SCHEMA: ClassVar[str] = 'LiveURL'
    port: int | None = None
    url: str | None = None
    path_url: str | None = None
    public: bool | None = None
    service: str | None = None
    shares: int | None = None


@dataclass
class URLLogin(Model):
    """A URLLogin as the API shows it."""

    SCHEMA: ClassVar[str] = 'URLLogin'
    port: int | None = None
    url: str | None = None
    expires_in_s: int | None = None


@dataclass
class Secret(Model):
    """A Secret as the API shows it."""

    SCHEMA: ClassVar[str] = 'Secret'
    name: str | None = None
    scope: str | None = None
    desktop_id: str | None = None
    owner: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    desktops: list | None = None


@dataclass
class Quota(Model):
    """A Quota as the API shows it."""

    SCHEMA: ClassVar[str] = 'Quota'
    owner: str | None = None
    plan: str | None = None
    max_desktops: int | None = None
    max_vcpus: int | None = None
    max_memory_mib: int | None = None
    max_disk_gib: int | None = None
    max_snapshots: int | None = None


@dataclass
class Usage(Model):
    """A Usage as the API shows it."""

    SCHEMA: ClassVar[str] = 'Usage'
    desktops: int | None = None
    vcpus: int | None = None
    memory_mib: int | None = None
    disk_mib: int | None = None
    snapshots: int | None = None


@dataclass
class Host(Model):
    """A Host as the API shows it."""

    SCHEMA: ClassVar[str] = 'Host'
    name: str | None = None
    uri: str | None = None
    labels: dict | None = None
    state: str | None = None
    hostname: str | None = None
    libvirt_version: str | None = None
    accelerator: str | None = None
    cpus: int | None = None
    memory_mib: int | None = None
    free_memory_mib: int | None = None
    disk_mib: int | None = None
    free_disk_mib: int | None = None
    desktops: int | None = None
    committed_memory_mib: int | None = None
    draining: bool | None = None
    drain: dict | None = None
    ssh_address: str | None = None
    ssh_host_key: str | None = None
    bridge: str | None = None
    subnet: str | None = None
    ready: bool | None = None
    ready_error: str | None = None
    last_error: str | None = None
    last_seen_at: str | None = None
    created_at: str | None = None

    def _nest(self) -> None:
        self.drain = Drain.from_dict(self.drain) if isinstance(self.drain, dict) else self.drain


@dataclass
class Drain(Model):
    """A host's drain: every desktop moved off it, one at a time."""

    SCHEMA: ClassVar[str] = 'Drain'
    started_at: str | None = None
    done: bool | None = None
    ended_at: str | None = None
    moving: str | None = None
    moved: int | None = None
    left: dict | None = None


@dataclass
class Step(Model):
    """A Step of a desktop's step log as the API shows it."""

    SCHEMA: ClassVar[str] = 'Step'
    desktop_id: str | None = None
    seq: int | None = None
    at: str | None = None
    duration_ms: int | None = None
    actor: str | None = None
    kind: str | None = None
    input: dict | None = None
    result: Any = None
    status: int | None = None
    error: str | None = None
    thumbnail_before: bool | None = None
    thumbnail_after: bool | None = None
    checkpoint: str | None = None
    checkpoint_error: str | None = None


@dataclass
class CheckpointPolicy(Model):
    """A desktop's automatic checkpoint policy: a snapshot (auto-<unix ms>)
    just before the first step and every every_steps-th after the last
    checkpoint, and before every step of a kind in before; the newest keep
    automatic checkpoints stay."""

    SCHEMA: ClassVar[str] = 'CheckpointPolicy'
    every_steps: int | None = None
    before: list | None = None
    memory: bool | None = None
    keep: int | None = None


@dataclass
class Recording(Model):
    """A Recording of a desktop's screen as the API shows it."""

    SCHEMA: ClassVar[str] = 'Recording'
    id: str | None = None
    desktop_id: str | None = None
    desktop_name: str | None = None
    desktop_deleted: bool | None = None
    owner: str | None = None
    kept: bool | None = None
    state: str | None = None
    actor: str | None = None
    fps: int | None = None
    max_seconds: int | None = None
    width: int | None = None
    height: int | None = None
    frames: int | None = None
    size_bytes: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int | None = None
    ended_why: str | None = None
    error: str | None = None
    video_url: str | None = None


@dataclass
class Backup(Model):
    """A backup of a desktop's data disk, as it goes (state running, its
    progress: bytes_read of read_total, chunks_new, bytes_new uploaded) and
    once it ended (complete or failed, with error)."""

    SCHEMA: ClassVar[str] = 'Backup'
    id: str | None = None
    desktop_id: str | None = None
    desktop_name: str | None = None
    owner: str | None = None
    target_id: str | None = None
    state: str | None = None
    kind: str | None = None
    why_full: str | None = None
    consistency: str | None = None
    parent: str | None = None
    disk_bytes: int | None = None
    image: str | None = None
    vcpus: int | None = None
    memory_mib: int | None = None
    bytes_read: int | None = None
    read_total: int | None = None
    chunks: int | None = None
    chunks_new: int | None = None
    bytes_new: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None


@dataclass
class BackupTarget(Model):
    """Where backups go: a directory (dir) or a bucket of an S3-compatible
    store (s3); never its secret key."""

    SCHEMA: ClassVar[str] = 'BackupTarget'
    id: str | None = None
    name: str | None = None
    kind: str | None = None
    dir: str | None = None
    s3: dict | None = None
    created_at: str | None = None
    created_by: str | None = None

    def _nest(self) -> None:
        self.s3 = S3Location.from_dict(self.s3) if isinstance(self.s3, dict) else self.s3


@dataclass
class S3Location(Model):
    """An s3 target's bucket and access key."""

    SCHEMA: ClassVar[str] = 'S3Location'
    endpoint: str | None = None
    bucket: str | None = None
    prefix: str | None = None
    region: str | None = None
    access_key: str | None = None
    insecure: bool | None = None


@dataclass
class BackupCheck(Model):
    """What verifying a backup found: ok, or the missing and corrupt chunks."""

    SCHEMA: ClassVar[str] = 'BackupCheck'
    backup_id: str | None = None
    chunks: int | None = None
    missing: list | None = None
    corrupt: list | None = None
    ok: bool | None = None
    took_ms: int | None = None


@dataclass
class BackupFile(Model):
    """A file, folder, symlink or other thing in a backup: type is file,
    dir, symlink or other; mode octal permission bits ("0644"); path the
    desktop's (under /home)."""

    SCHEMA: ClassVar[str] = 'BackupFile'
    name: str | None = None
    path: str | None = None
    type: str | None = None
    size: int | None = None
    mode: str | None = None
    modified: str | None = None
    link_target: str | None = None


@dataclass
class BackupFiles(Model):
    """A path of a backup and, for a folder, its entries sorted by name
    (truncated: more than the 10 000 listed)."""

    SCHEMA: ClassVar[str] = 'BackupFiles'
    backup_id: str | None = None
    path: str | None = None
    type: str | None = None
    size: int | None = None
    mode: str | None = None
    modified: str | None = None
    link_target: str | None = None
    entries: list | None = None
    truncated: bool | None = None

    def _nest(self) -> None:
        self.entries = [BackupFile.from_dict(e) for e in self.entries or []]


@dataclass
class BackupFilesRestored(Model):
    """What putting files of a backup back into a desktop wrote."""

    SCHEMA: ClassVar[str] = 'BackupFilesRestored'
    backup_id: str | None = None
    desktop_id: str | None = None
    path: str | None = None
    to: str | None = None
    files: int | None = None
    bytes: int | None = None


@dataclass
class BackupSchedule(Model):
    """A desktop backed up every every_minutes to a target, its backups
    there thinned out after each: the newest always stays, and so do the
    newest keep_last and the newest of each of the newest keep_hourly hours,
    keep_daily days and keep_weekly ISO weeks. next_at: the next one due."""

    SCHEMA: ClassVar[str] = 'BackupSchedule'
    desktop_id: str | None = None
    target_id: str | None = None
    every_minutes: int | None = None
    keep_last: int | None = None
    keep_hourly: int | None = None
    keep_daily: int | None = None
    keep_weekly: int | None = None
    next_at: str | None = None
    updated_at: str | None = None
    updated_by: str | None = None


@dataclass
class Stats(Model):
    """A VMStats as the API shows it."""

    SCHEMA: ClassVar[str] = 'VMStats'
    cpu_time_ns: int | None = None
    vcpus: int | None = None
    memory_max_kib: int | None = None
    memory_current_kib: int | None = None
    memory_rss_kib: int | None = None
    memory_available_kib: int | None = None
    memory_unused_kib: int | None = None
    memory_usable_kib: int | None = None
    disks: list | None = None
    networks: list | None = None


@dataclass
class ExecResult(Model):
    """A ExecResult as the API shows it."""

    SCHEMA: ClassVar[str] = 'ExecResult'
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    encoding: str | None = None
    truncated: bool | None = None
    timed_out: bool | None = None
    duration_ms: int | None = None

    def output(self) -> str:
        """stdout and stderr as text (base64 chunks decoded)."""
        return self.text("stdout") + self.text("stderr")

    def text(self, stream: str = "stdout") -> str:
        """One stream as text; a base64-encoded answer is decoded."""
        v = getattr(self, stream) or ""
        if self.encoding == "base64":
            import base64
            return base64.b64decode(v).decode("utf-8", "replace")
        return v


@dataclass
class Process(Model):
    """A Process as the API shows it."""

    SCHEMA: ClassVar[str] = 'Process'
    id: str | None = None
    name: str | None = None
    pid: int | None = None
    command: list | None = None
    running: bool | None = None
    exit_code: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    log_bytes: int | None = None


@dataclass
class Service(Model):
    """A Service as the API shows it."""

    SCHEMA: ClassVar[str] = 'Service'
    name: str | None = None
    command: list | None = None
    cwd: str | None = None
    env: dict | None = None
    secrets: list | None = None
    port: int | None = None
    restart: str | None = None
    user: str | None = None
    state: str | None = None
    reason: str | None = None
    pid: int | None = None
    restarts: int | None = None
    exit_code: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    uptime_s: int | None = None
    log_bytes: int | None = None
    url: str | None = None
    live_url: str | None = None


@dataclass
class AgentStatus(Model):
    """A AgentStatus as the API shows it."""

    SCHEMA: ClassVar[str] = 'AgentStatus'
    up: bool | None = None
    version: str | None = None
    sha256: str | None = None
    current: bool | None = None
    error: str | None = None


@dataclass
class FileStat(Model):
    """A FileStat as the API shows it."""

    SCHEMA: ClassVar[str] = 'FileStat'
    path: str | None = None
    dir: bool | None = None
    size: int | None = None
    entries: list | None = None
    truncated: bool | None = None

    def _nest(self) -> None:
        if self.entries:
            self.entries = [FileEntry.from_dict(e) for e in self.entries]


@dataclass
class FileEntry(Model):
    """A FileEntry as the API shows it."""

    SCHEMA: ClassVar[str] = 'FileEntry'
    name: str | None = None
    type: str | None = None
    size: int | None = None
    mode: str | None = None
    mtime: float | None = None


@dataclass
class Clipboard(Model):
    """A Clipboard as the API shows it."""

    SCHEMA: ClassVar[str] = 'Clipboard'
    text: str | None = None
    types: list | None = None


@dataclass
class ComputerResult(Model):
    """A ComputerResult as the API shows it."""

    SCHEMA: ClassVar[str] = 'ComputerResult'
    results: list | None = None
    screenshot: dict | None = None
    display: dict | None = None
    screen: dict | None = None
    verify: str | None = None

    def _nest(self) -> None:
        if isinstance(self.screenshot, dict):
            self.screenshot = ScreenImage.from_dict(self.screenshot)
        self.results = [StepResult.from_dict(r) for r in self.results or []]


@dataclass
class StepResult(Model):
    """A StepResult as the API shows it."""

    SCHEMA: ClassVar[str] = 'StepResult'
    action: str | None = None
    duration_ms: int | None = None
    image: dict | None = None
    cursor: dict | None = None
    typed_via: str | None = None
    chars: int | None = None
    keyboard: str | None = None
    screen_changed: bool | None = None
    changed_after_ms: int | None = None
    element: dict | None = None

    def _nest(self) -> None:
        if isinstance(self.image, dict):
            self.image = ScreenImage.from_dict(self.image)


@dataclass
class ScreenImage(Model):
    """A ScreenImage as the API shows it."""

    SCHEMA: ClassVar[str] = 'ScreenImage'
    media_type: str | None = None
    data: str | None = None
    width: int | None = None
    height: int | None = None
    settled: bool | None = None
    settle_ms: int | None = None
    scale: float | None = None
    scale_y: float | None = None
    coordinates: str | None = None

    def bytes(self) -> bytes:
        """The image's bytes (PNG or JPEG, as media_type says)."""
        import base64
        return base64.b64decode(self.data or "")


@dataclass
class Size(Model):
    """A Size as the API shows it."""

    SCHEMA: ClassVar[str] = 'Size'
    width: int | None = None
    height: int | None = None


@dataclass
class Window(Model):
    """A window of the desktop's session; geometry (x, y, width, height:
    the client area; frame: the window manager's frame around it) in screen
    pixels, display_bounds (asked with display) in the display's."""

    SCHEMA: ClassVar[str] = 'Window'
    id: str | None = None
    title: str | None = None
    app: str | None = None
    instance: str | None = None
    pid: int | None = None
    x: int | None = None
    y: int | None = None
    width: int | None = None
    height: int | None = None
    focused: bool | None = None
    minimized: bool | None = None
    maximized: bool | None = None
    workspace: int | None = None
    frame: dict | None = None
    display_bounds: dict | None = None


@dataclass
class WindowList(Model):
    """The session's windows, oldest first, and its screen (width, height,
    the workspace shown)."""

    SCHEMA: ClassVar[str] = 'WindowList'
    windows: list | None = None
    screen: dict | None = None

    def _nest(self) -> None:
        self.windows = [Window.from_dict(w) for w in self.windows or []]


@dataclass
class WindowClosed(Model):
    """What a close did: closed, or the window still open (its app may be
    asking to save)."""

    SCHEMA: ClassVar[str] = 'WindowClosed'
    closed: bool | None = None
    window: dict | None = None

    def _nest(self) -> None:
        self.window = Window.from_dict(self.window) if isinstance(self.window, dict) else self.window


@dataclass
class LaunchAppResult(Model):
    """An app launched: its process and its window (None when none opened in
    time, timed_out, or the process failed first: process.exit_code)."""

    SCHEMA: ClassVar[str] = 'LaunchAppResult'
    process: dict | None = None
    window: dict | None = None
    timed_out: bool | None = None

    def _nest(self) -> None:
        self.process = Process.from_dict(self.process) if isinstance(self.process, dict) else self.process
        self.window = Window.from_dict(self.window) if isinstance(self.window, dict) else self.window


@dataclass
class UINode(Model):
    """An element of the accessibility tree: role, name, states, actions,
    bounds (screen pixels; display_bounds in the display asked for). Its id
    lasts while its application keeps it (then Gone)."""

    SCHEMA: ClassVar[str] = 'UINode'
    id: str | None = None
    role: str | None = None
    name: str | None = None
    description: str | None = None
    states: list | None = None
    value: dict | None = None
    text: str | None = None
    text_truncated: bool | None = None
    actions: list | None = None
    bounds: dict | None = None
    display_bounds: dict | None = None
    parent: str | None = None
    children: list | None = None
    child_count: int | None = None
    app: str | None = None
    depth: int | None = None


@dataclass
class UINodeList(Model):
    """Nodes of the tree (parents first) or of a search (flat);
    truncated when a limit or the time left some out."""

    SCHEMA: ClassVar[str] = 'UINodeList'
    nodes: list | None = None
    truncated: bool | None = None
    screen: dict | None = None
    display: dict | None = None
    warnings: list | None = None

    def _nest(self) -> None:
        self.nodes = [UINode.from_dict(n) for n in self.nodes or []]


@dataclass
class UIActResult(Model):
    """An action on an element: the element read again (as it was when
    gone), whether it changed, and the action performed."""

    SCHEMA: ClassVar[str] = 'UIActResult'
    node: dict | None = None
    changed: bool | None = None
    gone: bool | None = None
    performed: str | None = None
    screen: dict | None = None
    display: dict | None = None

    def _nest(self) -> None:
        self.node = UINode.from_dict(self.node) if isinstance(self.node, dict) else self.node


@dataclass
class Control(Model):
    """Who holds a desktop's mouse and keyboard: ``holder`` "agent" (the
    default) or "person" (``person``, who took it ``since``; ``by``: their
    token or console link; ``until``: when it goes back to the agent by
    itself, ``idle_timeout_s`` after their last input)."""

    SCHEMA: ClassVar[str] = 'Control'
    holder: str | None = None
    person: str | None = None
    by: str | None = None
    since: str | None = None
    until: str | None = None
    idle_timeout_s: int | None = None


@dataclass
class ControlView(Control):
    """A Control and who is watching the desktop in the console
    (``viewers``: {session, name, view_only, since, holds_input})."""

    SCHEMA: ClassVar[str] = 'ControlView'
    viewers: list | None = None


@dataclass
class Request(Model):
    """A help request (kind "help": question, choices; answer once
    answered) or an approval request (kind "approval": action {kind,
    summary, rule, detail}; reason once decided). status is "pending", then
    "answered", "approved", "denied" or "expired"; gated: a call of the
    agent waits for it."""

    SCHEMA: ClassVar[str] = 'Request'
    id: str | None = None
    desktop_id: str | None = None
    owner: str | None = None
    kind: str | None = None
    status: str | None = None
    question: str | None = None
    choices: list | None = None
    action: dict | None = None
    screenshot: bool | None = None
    asked_by: str | None = None
    asked_at: str | None = None
    expires_at: str | None = None
    gated: bool | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    answer: str | None = None
    choice: bool | None = None
    reason: str | None = None

    @property
    def pending(self) -> bool:
        """Nobody has answered or decided it yet, and it has not expired."""
        return self.status == "pending"

    @property
    def approved(self) -> bool:
        """An approval a person approved: go ahead."""
        return self.status == "approved"


@dataclass
class ApprovalPolicy(Model):
    """Which of the agent's calls on a desktop wait for a person's
    approval: exec command lines and URLs matching ``exec``/``urls`` (RE2),
    every file delete (``file_delete``), ``keys`` ([{key, window_title}]),
    clicks in ``clicks`` regions ([{name, x, y, width, height,
    window_title}]); ``timeout_s``: how long a gated call waits before it
    is denied."""

    SCHEMA: ClassVar[str] = 'ApprovalPolicy'
    exec: list | None = None
    file_delete: bool | None = None
    keys: list | None = None
    clicks: list | None = None
    urls: list | None = None
    timeout_s: int | None = None


@dataclass
class StreamToken(Model):
    """A StreamToken as the API shows it."""

    SCHEMA: ClassVar[str] = 'StreamToken'
    token: str | None = None
    expires_at: str | None = None
    url: str | None = None
