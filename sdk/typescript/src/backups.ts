import { Desktop } from "./desktop.js";
import { BureauError, TimeoutError } from "./errors.js";
import type * as m from "./models.js";
import type { DesktopRef } from "./steps.js";
import type { Transport } from "./transport.js";

/** A backup: its id, or a Backup. */
export type BackupRef = string | { id: string };
/** A backup target: its name or id, or a BackupTarget. */
export type BackupTargetRef = string | { id: string };

const idOf = (x: DesktopRef | BackupRef | BackupTargetRef) => (typeof x === "string" ? x : x.id);

/**
 * Backups of desktops' data disks (the user's /home) to backup targets off the host: S3-compatible buckets or
 * directories. A backup belongs to its desktop's owner and outlives the desktop: `list` and `get` reach those of
 * deleted desktops, and `restore` makes a new desktop from one. `setSchedule` backs a desktop up by itself every so often
 * and thins its backups out.
 */
export class Backups {
  constructor(private readonly h: Transport) {}

  /**
   * Starts a backup of the desktop's data disk to `target` (its name or id; left out: the only target there is) and
   * resolves to it, "running"; `wait` follows it. The desktop stays usable. 409 when one of it is already running;
   * 422 (field `target`) when the target is unknown, unreachable, or not named among several.
   */
  create(desktop: DesktopRef, o: { target?: string } = {}): Promise<m.Backup> {
    return this.h.call("createBackup", { params: { id: idOf(desktop) }, json: o.target ? { target: o.target } : undefined });
  }

  /** The desktop's backups, newest first (a desktop token may list its own desktop's; `list` reaches a deleted desktop's). */
  async forDesktop(desktop: DesktopRef): Promise<m.Backup[]> {
    return (await this.h.call<{ backups: m.Backup[] }>("listDesktopBackups", { params: { id: idOf(desktop) } })).backups ?? [];
  }

  /** Your backups (an admin's: everyone's), newest first, those of deleted desktops included; `desktop` (an id) and `target` (a name or id) narrow them. */
  async list(o: { desktop?: DesktopRef; target?: string } = {}): Promise<m.Backup[]> {
    const query = { desktop: o.desktop === undefined ? undefined : idOf(o.desktop), target: o.target };
    return (await this.h.call<{ backups: m.Backup[] }>("listBackups", { query })).backups ?? [];
  }

  /** A backup, with its progress while it runs. */
  get(backup: BackupRef): Promise<m.Backup> {
    return this.h.call("getBackup", { params: { backup: idOf(backup) } });
  }

  /**
   * Waits until the backup ends and resolves to it, complete. Rejects with a BureauError (code `backup_failed`, its
   * error as the message) when it failed, a TimeoutError after `timeoutMs` (default 6 hours).
   */
  async wait(backup: BackupRef, o: { timeoutMs?: number; pollMs?: number; signal?: AbortSignal } = {}): Promise<m.Backup> {
    const deadline = Date.now() + (o.timeoutMs ?? 6 * 3600_000);
    for (;;) {
      o.signal?.throwIfAborted();
      const b = await this.get(backup);
      if (b.state === "complete") return b;
      if (b.state === "failed") throw new BureauError(0, "backup_failed", b.error || "the backup failed", undefined, b.state);
      if (Date.now() >= deadline) throw new TimeoutError(`backup ${b.id} is still ${b.state} (${b.bytes_read} of ${b.read_total} bytes read)`, b.state);
      await new Promise((r) => setTimeout(r, o.pollMs ?? 1000));
    }
  }

  /**
   * Makes a new desktop, yours, called `name`, from a complete backup: its data disk is the backup's, its OS disk a
   * fresh one of the backup's image. It boots in the background like a create: `waitUntil("running")`. Owner and
   * admin tokens only.
   */
  async restore(backup: BackupRef, name: string): Promise<Desktop> {
    const d = await this.h.call<m.Desktop>("restoreBackup", { params: { backup: idOf(backup) }, json: { name } });
    return new Desktop(this.h, d.id, d);
  }

  /**
   * Writes a complete backup over a stopped desktop's data disk (its /home), in place: the desktop (yours, the
   * backup's owner's; id or name, or a Desktop) keeps its OS disk and settings. What the disk holds now is kept first
   * as the snapshot `before-restore-<backup id>`, which undoes it. The desktop is `reverting` until done, then
   * stopped (`waitUntil("stopped")`; its `last_error` says why a restore failed, its disk then as it was). 409 when it
   * is not stopped or its data disk is smaller than the backup's.
   */
  async restoreOnto(backup: BackupRef, desktop: DesktopRef): Promise<Desktop> {
    const d = await this.h.call<m.Desktop>("restoreBackup", {
      params: { backup: idOf(backup) },
      json: { desktop: idOf(desktop), replace_data_disk: true },
    });
    return new Desktop(this.h, d.id, d);
  }

  /**
   * Describes `path` (the desktop's, under /home; default /home) in the backup and, for a folder, what it holds,
   * without restoring it (the first call opens the backup). 404 when the backup holds no such path.
   */
  backupFiles(backup: BackupRef, path = "/home"): Promise<m.BackupFiles> {
    return this.h.call("listBackupFiles", { params: { backup: idOf(backup) }, query: { path } });
  }

  /** A file's bytes, or a folder as an uncompressed tar of what it holds. */
  async backupFileContent(backup: BackupRef, path: string): Promise<Uint8Array> {
    const r = await this.h.open("getBackupFileContent", { params: { backup: idOf(backup) }, query: { path } });
    return new Uint8Array(await r.arrayBuffer());
  }

  /**
   * Puts a file or folder of the backup back into a running desktop (id or name, or a Desktop) at `to` (default:
   * `path`). 409 (code `exists`) when `to` exists and `overwrite` is not set.
   */
  restoreBackupFiles(backup: BackupRef, path: string, desktop: DesktopRef, o: { to?: string; overwrite?: boolean } = {}): Promise<m.BackupFilesRestored> {
    const json: m.BackupFilesRestore = { path, desktop: idOf(desktop) };
    if (o.to) json.to = o.to;
    if (o.overwrite) json.overwrite = true;
    return this.h.call("restoreBackupFiles", { params: { backup: idOf(backup) }, json });
  }

  /** Reads back every chunk of a complete backup and checks it: `ok`, or the `missing` and `corrupt` chunks (a restore would fail). */
  verify(backup: BackupRef): Promise<m.BackupCheck> {
    return this.h.call("verifyBackup", { params: { backup: idOf(backup) } });
  }

  /**
   * Deletes a backup: its manifest from its target, then its record; the chunks no other backup uses are swept from
   * the target in the background. 409 while it runs.
   */
  async delete(backup: BackupRef): Promise<void> {
    await this.h.call("deleteBackup", { params: { backup: idOf(backup) } });
  }

  /** The desktop's backup schedule (rejects with a 404 BureauError when it has none; a desktop token may read its own desktop's). */
  schedule(desktop: DesktopRef): Promise<m.BackupSchedule> {
    return this.h.call("getBackupSchedule", { params: { id: idOf(desktop) } });
  }

  /**
   * Sets the desktop's backup schedule whole: what is left out takes its default (every 60 minutes to the only target
   * there is; keep the last 0, hourly 24, daily 7, weekly 4). The first backup is due one period from now. After each,
   * the desktop's backups in the target are thinned out: the newest always stays, and so do the newest `keep_last` and
   * the newest of each of the newest `keep_hourly` hours, `keep_daily` days and `keep_weekly` ISO weeks. Owner and admin
   * tokens only; 422 (with the field) when a value is out of range or the target unknown.
   */
  setSchedule(desktop: DesktopRef, s: m.BackupScheduleRequest = {}): Promise<m.BackupSchedule> {
    return this.h.call("setBackupSchedule", { params: { id: idOf(desktop) }, json: s });
  }

  /** Stops the desktop's scheduled backups (none is no error); the backups taken stay. */
  async unschedule(desktop: DesktopRef): Promise<void> {
    await this.h.call("deleteBackupSchedule", { params: { id: idOf(desktop) } });
  }
}

/** Where backups go (admin). A target's secret key is never shown. */
export class BackupTargets {
  constructor(private readonly h: Transport) {}

  async list(): Promise<m.BackupTarget[]> {
    return (await this.h.call<{ targets: m.BackupTarget[] }>("listBackupTargets")).targets ?? [];
  }

  /** A target by its name or id. */
  get(target: BackupTargetRef): Promise<m.BackupTarget> {
    return this.h.call("getBackupTarget", { params: { target: idOf(target) } });
  }

  /** Adds a directory on bureau's host (a local disk or a mounted share). */
  addDir(name: string, dir: string): Promise<m.BackupTarget> {
    return this.h.call("createBackupTarget", { json: { name, kind: "dir", dir } });
  }

  /**
   * Adds a bucket of an S3-compatible store (`endpoint`: host:port; `insecure`: plain HTTP). bureau reaches it first:
   * 422 with the reason when it cannot, 409 when it holds another install's backups.
   */
  addS3(name: string, s3: { endpoint: string; bucket: string; access_key: string; secret_key: string; prefix?: string; region?: string; insecure?: boolean }): Promise<m.BackupTarget> {
    return this.h.call("createBackupTarget", { json: { name, kind: "s3", s3 } });
  }

  /** Forgets a target; its backups stay in it (409 while a backup to it runs). */
  async remove(target: BackupTargetRef): Promise<void> {
    await this.h.call("deleteBackupTarget", { params: { target: idOf(target) } });
  }
}
