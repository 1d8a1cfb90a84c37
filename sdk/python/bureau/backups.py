"""Backups of desktops' data disks (the user's /home) to backup targets off
the host: S3-compatible buckets or directories. Reached as
``client.backups`` (``models.Backup``, ``models.BackupCheck``) and, for
admins, ``client.backup_targets`` (``models.BackupTarget``).

A backup belongs to its desktop's owner and outlives the desktop: ``list``
and ``get`` reach those of deleted desktops, and ``restore`` makes a new
desktop from one. ``set_schedule`` backs a desktop up by itself every so
often and thins its backups out (``models.BackupSchedule``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from . import models as m
from ._transport import Transport
from .desktop import Desktop
from .errors import BureauError, Timeout

if TYPE_CHECKING:
    from .client import Client


def _id(x: "str | Any") -> str:
    return x if isinstance(x, str) else x.id


class Backups:
    """Take, follow, list, verify, restore, delete and schedule backups
    (desktop: its id, or a Desktop; backup: a backup's id, or the Backup)."""

    def __init__(self, client: "Client"):
        self._c = client
        self._h: Transport = client.http

    def create(self, desktop: "str | Desktop", target: str | None = None) -> m.Backup:
        """Starts a backup of the desktop's data disk to target (its name or
        id; None: the only target there is) and returns it, "running"; wait
        follows it. The desktop stays usable. Conflict when one of it is
        already running; Invalid (field target) when the target is unknown,
        unreachable, or not named among several."""
        body = {"target": target} if target else None
        return m.Backup.from_dict(self._h.call("createBackup", {"id": _id(desktop)}, json_body=body))

    def for_desktop(self, desktop: "str | Desktop") -> list[m.Backup]:
        """The desktop's backups, newest first (a desktop token may list its
        own desktop's; list reaches those of a deleted desktop)."""
        return [m.Backup.from_dict(b) for b in self._h.call("listDesktopBackups", {"id": _id(desktop)})["backups"] or []]

    def list(self, desktop: "str | Desktop | None" = None, target: str | None = None) -> list[m.Backup]:
        """Your backups (an admin's: everyone's), newest first, those of
        deleted desktops included; desktop (an id) and target (a name or id)
        narrow them."""
        q = {"desktop": _id(desktop) if desktop else None, "target": target}
        return [m.Backup.from_dict(b) for b in self._h.call("listBackups", query=q)["backups"] or []]

    def get(self, backup: "str | m.Backup") -> m.Backup:
        """A backup, with its progress while it runs."""
        return m.Backup.from_dict(self._h.call("getBackup", {"backup": _id(backup)}))

    def wait(self, backup: "str | m.Backup", timeout: float = 6 * 3600, poll: float = 1.0) -> m.Backup:
        """Waits until the backup ends and returns it, complete. Raises
        BureauError (code backup_failed, its error as the message) when it
        failed, Timeout when timeout seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            b = self.get(backup)
            if b.state == "complete":
                return b
            if b.state == "failed":
                raise BureauError(0, "backup_failed", b.error or "the backup failed", state=b.state)
            if time.monotonic() >= deadline:
                raise Timeout(f"backup {b.id} is still {b.state} after {timeout:.0f} s "
                              f"({b.bytes_read or 0} of {b.read_total or 0} bytes read)", b.state)
            time.sleep(poll)

    def restore(self, backup: "str | m.Backup", name: str) -> Desktop:
        """Makes a new desktop, yours, called name, from a complete backup: its
        data disk is the backup's, its OS disk a fresh one of the backup's
        image. It boots in the background like a create:
        ``wait_until("running")``. Owner and admin tokens only."""
        d = self._h.call("restoreBackup", {"backup": _id(backup)}, json_body={"name": name})
        return Desktop(self._c, data=m.Desktop.from_dict(d))

    def restore_onto(self, backup: "str | m.Backup", desktop: "str | Desktop") -> Desktop:
        """Writes a complete backup over a stopped desktop's data disk (its
        /home), in place: the desktop (yours, the backup's owner's; its id or
        name, or a Desktop) keeps its OS disk and settings. What the disk
        holds now is kept first as the snapshot ``before-restore-<backup
        id>``, which undoes it. The desktop is ``reverting`` until done, then
        stopped: ``wait_until("stopped")``, and its ``last_error`` says why a
        restore failed (its disk is then as it was). Conflict when it is not
        stopped or its data disk is smaller than the backup's."""
        ref = desktop if isinstance(desktop, str) else desktop.id
        d = self._h.call("restoreBackup", {"backup": _id(backup)}, json_body={"desktop": ref, "replace_data_disk": True})
        return Desktop(self._c, data=m.Desktop.from_dict(d))

    def verify(self, backup: "str | m.Backup") -> m.BackupCheck:
        """Reads back every chunk of a complete backup and checks it: ``ok``,
        or the ``missing`` and ``corrupt`` chunks (a restore would fail)."""
        return m.BackupCheck.from_dict(self._h.call("verifyBackup", {"backup": _id(backup)}))

    def delete(self, backup: "str | m.Backup") -> None:
        """Deletes a backup: its manifest from its target, then its record; the
        chunks no other backup uses are swept from the target in the
        background. Conflict while it runs."""
        self._h.call("deleteBackup", {"backup": _id(backup)})

    def backup_files(self, backup_id: "str | m.Backup", path: str = "/home") -> m.BackupFiles:
        """Describes path (the desktop's, under /home) in the backup and, for
        a folder, what it holds, without restoring it (the first call opens
        the backup: its disk is read back from its target). NotFound when the
        backup holds no such path."""
        return m.BackupFiles.from_dict(self._h.call("listBackupFiles", {"backup": _id(backup_id)}, query={"path": path}))

    def backup_file_content(self, backup_id: "str | m.Backup", path: str) -> bytes:
        """A file's bytes, or a folder as an uncompressed tar of what it
        holds (in memory)."""
        with self._h.open("getBackupFileContent", {"backup": _id(backup_id)}, {"path": path}) as r:
            return r.read()

    def restore_backup_files(self, backup_id: "str | m.Backup", path: str, desktop: "str | Desktop",
                             to: str | None = None, overwrite: bool = False) -> m.BackupFilesRestored:
        """Puts a file or folder of the backup back into a running desktop
        (its id or name, or a Desktop) at to (default: path). Conflict (code
        exists) when to exists and overwrite is False."""
        body: dict[str, Any] = {"path": path, "desktop": desktop if isinstance(desktop, str) else desktop.id}
        if to:
            body["to"] = to
        if overwrite:
            body["overwrite"] = True
        return m.BackupFilesRestored.from_dict(
            self._h.call("restoreBackupFiles", {"backup": _id(backup_id)}, json_body=body))

    def schedule(self, desktop: "str | Desktop") -> m.BackupSchedule:
        """The desktop's backup schedule (NotFound when it has none; a desktop
        token may read its own desktop's)."""
        return m.BackupSchedule.from_dict(self._h.call("getBackupSchedule", {"id": _id(desktop)}))

    def set_schedule(self, desktop: "str | Desktop", *, target: str | None = None, every_minutes: int | None = None,
                     keep_last: int | None = None, keep_hourly: int | None = None, keep_daily: int | None = None,
                     keep_weekly: int | None = None) -> m.BackupSchedule:
        """Sets the desktop's backup schedule whole: what is None takes its
        default (every 60 minutes to the only target there is; keep the last
        0, hourly 24, daily 7, weekly 4). The first backup is due one period
        from now. After each, the desktop's backups in the target are thinned
        out: the newest always stays, and so do the newest keep_last and the
        newest of each of the newest keep_hourly hours, keep_daily days and
        keep_weekly ISO weeks. Owner and admin tokens only; Invalid (with the
        field) when a value is out of range or the target unknown."""
        body = {k: v for k, v in (("target", target), ("every_minutes", every_minutes), ("keep_last", keep_last),
                                  ("keep_hourly", keep_hourly), ("keep_daily", keep_daily), ("keep_weekly", keep_weekly))
                if v is not None}
        return m.BackupSchedule.from_dict(self._h.call("setBackupSchedule", {"id": _id(desktop)}, json_body=body))

    def unschedule(self, desktop: "str | Desktop") -> None:
        """Stops the desktop's scheduled backups (none is no error); the
        backups taken stay."""
        self._h.call("deleteBackupSchedule", {"id": _id(desktop)})


class BackupTargets:
    """Where backups go (admin). A target's secret key is never shown."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self) -> list[m.BackupTarget]:
        return [m.BackupTarget.from_dict(t) for t in self._h.call("listBackupTargets")["targets"] or []]

    def get(self, target: "str | m.BackupTarget") -> m.BackupTarget:
        """A target by its name or id."""
        return m.BackupTarget.from_dict(self._h.call("getBackupTarget", {"target": _id(target)}))

    def add_dir(self, name: str, dir: str) -> m.BackupTarget:
        """Adds a directory on bureau's host (a local disk or a mounted share)."""
        return self._add({"name": name, "kind": "dir", "dir": dir})

    def add_s3(self, name: str, endpoint: str, bucket: str, access_key: str, secret_key: str, *,
               prefix: str | None = None, region: str | None = None, insecure: bool | None = None) -> m.BackupTarget:
        """Adds a bucket of an S3-compatible store (endpoint: host:port;
        insecure: plain HTTP). bureau reaches it first: Invalid with the reason
        when it cannot, Conflict when it holds another install's backups."""
        s3: dict[str, Any] = {"endpoint": endpoint, "bucket": bucket, "access_key": access_key, "secret_key": secret_key}
        for k, v in (("prefix", prefix), ("region", region), ("insecure", insecure)):
            if v is not None:
                s3[k] = v
        return self._add({"name": name, "kind": "s3", "s3": s3})

    def _add(self, body: dict) -> m.BackupTarget:
        return m.BackupTarget.from_dict(self._h.call("createBackupTarget", json_body=body))

    def remove(self, target: "str | m.BackupTarget") -> None:
        """Forgets a target; its backups stay in it. Conflict while a backup to it runs."""
        self._h.call("deleteBackupTarget", {"target": _id(target)})
