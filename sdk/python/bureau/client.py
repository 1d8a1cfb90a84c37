"""The client: bureau's API as Python calls."""

from __future__ import annotations

from typing import Any, Iterator

from . import models as m
from ._transport import Transport
from .audit import Audit
from .backups import BackupTargets, Backups
from .teams import Teams
from .webhooks import Webhooks
from .desktop import Desktop
from .people import People
from .recordings import Recordings
from .sse import ServerEvent, parse
from .steps import Steps


class Client:
    """A bureau server, reached with one API token.

    ``Client()`` reads BUREAU_URL and BUREAU_TOKEN from the environment.
    """

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 300.0):
        self.http = Transport(url, token, timeout)
        self.desktops = Desktops(self)
        self.tokens = Tokens(self.http)
        self.images = Images(self.http)
        self.templates = Templates(self.http)
        self.secrets = Secrets(self.http)
        self.quotas = Quotas(self.http)
        self.hosts = Hosts(self.http)
        self.events = Events(self.http)
        self.steps = Steps(self.http)
        self.recordings = Recordings(self.http)
        self.backups = Backups(self)
        self.backup_targets = BackupTargets(self.http)
        self.people = People(self.http)
        self.webhooks = Webhooks(self.http)
        self.teams = Teams(self.http)
        self.audit = Audit(self.http)

    def info(self) -> dict:
        """What this bureau is: version, accelerator (kvm or tcg) and why."""
        return self.http.call("getInfo")

    def session(self) -> dict:
        """Who is calling: owner, name, admin, via ("token" or "sign-in"),
        token_id and expires_at."""
        return self.http.call("getSession")

    def openapi(self) -> dict:
        """The API's OpenAPI 3.1 description, as the server serves it."""
        return self.http.call("getOpenAPI")

    def desktop(self, id: str) -> Desktop:
        """A handle on desktop id (nothing is fetched until used)."""
        return Desktop(self, id)


class Desktops:
    """Create, list and find desktops."""

    def __init__(self, client: Client):
        self._c = client

    def create(self, name: str, *, image: str | None = None, vcpus: int | None = None,
               memory_mib: int | None = None, data_disk_gib: int | None = None,
               ssh_authorized_keys: list[str] | None = None, idle_timeout_seconds: int | None = None,
               nap_after_seconds: int | None = None, sleep_after_seconds: int | None = None,
               network: dict | None = None, keyboard_layout: str | None = None, cold: bool | None = None,
               from_snapshot: tuple[str, str] | None = None, host: str | None = None,
               placement_labels: dict[str, str] | None = None, wait_ready: bool = False,
               ready_timeout: float = 600) -> Desktop:
        """Creates a desktop. It boots in the background, or, with wait_ready,
        is returned once it is ready (its session up: exec, files and computer
        use work), within ready_timeout seconds (else Timeout: the desktop is
        there, still coming up; d.wait_ready() waits on).

        from_snapshot=(desktop_id, snapshot_name) clones another desktop's snapshot;
        host (admins) runs it on one of bureau's hosts (default: bureau's own);
        placement_labels lets bureau pick a host whose labels include all of these
        (not with host: Invalid). When no host fits: ServerError, status 507, code
        capacity, its message naming each host and why it was refused.
        """
        body: dict[str, Any] = {"name": name}
        for k, v in (("image", image), ("vcpus", vcpus), ("memory_mib", memory_mib), ("data_disk_gib", data_disk_gib),
                     ("ssh_authorized_keys", ssh_authorized_keys), ("idle_timeout_seconds", idle_timeout_seconds),
                     ("nap_after_seconds", nap_after_seconds), ("sleep_after_seconds", sleep_after_seconds),
                     ("network", network), ("keyboard_layout", keyboard_layout), ("cold", cold), ("host", host)):
            if v is not None:
                body[k] = v
        if from_snapshot:
            body["from"] = {"desktop": from_snapshot[0], "snapshot": from_snapshot[1]}
        if placement_labels is not None:
            body["placement"] = {"labels": dict(placement_labels)}
        d = Desktop(self._c, data=m.Desktop.from_dict(self._c.http.call("createDesktop", json_body=body)))
        return d.wait_ready(ready_timeout) if wait_ready else d

    def list(self) -> list[Desktop]:
        """Your desktops (every owner's for an admin token)."""
        out = self._c.http.call("listDesktops")
        return [Desktop(self._c, data=m.Desktop.from_dict(d)) for d in out["desktops"]]

    def get(self, id: str) -> Desktop:
        """Desktop id, fetched now (NotFound if it is not there or not yours)."""
        return Desktop(self._c, id).refresh()

    def find(self, name: str) -> Desktop | None:
        """Your desktop called name, or None."""
        for d in self.list():
            if d.name == name:
                return d
        return None

    def migrate(self, id: str, host: str) -> Desktop:
        """Moves desktop id with its disks to host (admin): live when it runs,
        cold (files copied, snapshots kept) when it is stopped or hibernated or
        has snapshots. It is "migrating" at once, its operation_step saying how
        far the copy got ("to two: memory 63%"); then on host, as it was, with
        a new ip there, or, failing, as it was where it was with last_error
        "migrate failed: …"."""
        return Desktop(self._c, data=m.Desktop.from_dict(
            self._c.http.call("migrateDesktop", {"id": id}, json_body={"host": host})))

    def cancel_migration(self, id: str) -> None:
        """Cancels desktop id's migration (admin); it stays as it was where it
        was. Conflict when it is not migrating."""
        self._c.http.call("cancelMigration", {"id": id})


class Tokens:
    """API tokens: make them for agents, list and revoke them."""

    def __init__(self, http: Transport):
        self._h = http

    def create(self, name: str, *, scope: str | None = None, ttl_seconds: int | None = None,
               desktop_id: str | None = None, computer_only: bool | None = None,
               owner: str | None = None) -> m.TokenCreated:
        """A new token; its secret (``.token``) is shown only here."""
        body = {k: v for k, v in (("name", name), ("scope", scope), ("ttl_seconds", ttl_seconds),
                                  ("desktop_id", desktop_id), ("computer_only", computer_only), ("owner", owner))
                if v is not None}
        return m.TokenCreated.from_dict(self._h.call("createToken", json_body=body))

    def list(self) -> list[m.Token]:
        return [m.Token.from_dict(t) for t in self._h.call("listTokens")["tokens"]]

    def revoke(self, id: str) -> None:
        self._h.call("revokeToken", {"id": id})


class Images:
    """Base images desktops boot from."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self) -> list[m.Image]:
        return [m.Image.from_dict(i) for i in self._h.call("listImages")["images"]]

    def import_(self, name: str, *, url: str | None = None, path: str | None = None, sha256: str | None = None,
                os: str | None = None, version: str | None = None) -> Iterator[dict]:
        """Imports an image (admin); yields its progress as it comes, the last
        item being the image or an error."""
        body = {k: v for k, v in (("name", name), ("url", url), ("path", path), ("sha256", sha256),
                                  ("os", os), ("version", version)) if v is not None}
        with self._h.open("importImage", json_body=body, headers={"Accept": "application/x-ndjson"}) as r:
            import json
            ctype = r.headers.get("Content-Type") or ""
            if "ndjson" not in ctype:
                yield json.loads(r.read())
                return
            for line in iter(r.readline, b""):
                if line.strip():
                    yield json.loads(line)

    def delete(self, name: str) -> None:
        self._h.call("deleteImage", {"name": name})


class Templates:
    """Warm templates: desktops booted once and saved, to create from in seconds."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self) -> list[m.Template]:
        return [m.Template.from_dict(t) for t in self._h.call("listTemplates")["templates"]]

    def build(self, *, image: str | None = None, vcpus: int | None = None, memory_mib: int | None = None) -> m.Template:
        body = {k: v for k, v in (("image", image), ("vcpus", vcpus), ("memory_mib", memory_mib)) if v is not None}
        return m.Template.from_dict(self._h.call("buildTemplate", json_body=body))


class Secrets:
    """Your secrets, which every desktop of yours may name (values never come back)."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self, owner: str | None = None) -> list[m.Secret]:
        return [m.Secret.from_dict(s) for s in self._h.call("listOwnerSecrets", query={"owner": owner})["secrets"]]

    def set(self, name: str, value: str, owner: str | None = None) -> m.Secret:
        return m.Secret.from_dict(self._h.call("putOwnerSecret", {"name": name}, {"owner": owner},
                                               json_body={"value": value}))

    def delete(self, name: str, owner: str | None = None) -> None:
        self._h.call("deleteOwnerSecret", {"name": name}, {"owner": owner})


class Quotas:
    """What owners may use."""

    def __init__(self, http: Transport):
        self._h = http

    def mine(self) -> tuple[m.Quota, m.Usage]:
        r = self._h.call("getMyQuota")
        return m.Quota.from_dict(r["quota"]), m.Usage.from_dict(r["usage"])

    def get(self, owner: str) -> tuple[m.Quota, m.Usage]:
        r = self._h.call("getQuota", {"owner": owner})
        return m.Quota.from_dict(r["quota"]), m.Usage.from_dict(r["usage"])

    def set(self, owner: str, plan: str, **limits: int) -> m.Quota:
        """Sets an owner's plan, or "custom" with max_* limits (admin)."""
        return m.Quota.from_dict(self._h.call("setQuota", {"owner": owner}, json_body={"plan": plan, **limits}))


class Hosts:
    """The libvirt hosts desktops run on (admin)."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self) -> list[m.Host]:
        """Every host, the local one (the host bureau runs on) first."""
        return [m.Host.from_dict(h) for h in self._h.call("listHosts")["hosts"]]

    def get(self, name: str) -> m.Host:
        return m.Host.from_dict(self._h.call("getHost", {"name": name}))

    def add(self, name: str, uri: str, labels: dict[str, str] | None = None, *, ssh_address: str | None = None,
            ssh_host_key: str | None = None, bridge: str | None = None, subnet: str | None = None) -> m.Host:
        """Adds a host by its libvirt URI (qemu+ssh://user@host/system); it is
        added only once its libvirtd answered (Invalid with code
        host_unreachable otherwise) and bureau made it ready for desktops over
        SSH (ssh_address, ssh_host_key pinned; code host_not_ready otherwise,
        naming the field to fix). ssh_public_key() is bureau's key for the
        host's authorized_keys."""
        body: dict[str, Any] = {"name": name, "uri": uri}
        for k, v in (("labels", labels), ("ssh_address", ssh_address), ("ssh_host_key", ssh_host_key),
                     ("bridge", bridge), ("subnet", subnet)):
            if v is not None:
                body[k] = v
        return m.Host.from_dict(self._h.call("addHost", json_body=body))

    def ssh_public_key(self) -> str:
        """The key bureau signs in to remote hosts with: one authorized_keys line."""
        return self._h.call("listHosts")["ssh_public_key"]

    def remove(self, name: str) -> None:
        """Forgets a host (the local one stays: Conflict, code in_use)."""
        self._h.call("removeHost", {"name": name})

    def drain(self, name: str) -> m.Host:
        """Marks a host draining (nothing new is placed there) and moves every
        desktop off it in the background, each to the host placement chooses;
        the host's drain says how far it got and which desktops stayed, and why."""
        return m.Host.from_dict(self._h.call("drainHost", {"name": name}))

    def undrain(self, name: str) -> m.Host:
        """Ends a host's drain: placement uses it again (a move under way finishes)."""
        return m.Host.from_dict(self._h.call("undrainHost", {"name": name}))


class Events:
    """What happened to your desktops: the log and the live stream."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self, limit: int | None = None) -> list[m.Event]:
        return [m.Event.from_dict(e) for e in self._h.call("getAuditLog", query={"limit": limit})["events"]]

    def stream(self, timeout: float | None = None) -> Iterator[ServerEvent]:
        """Yields live changes as they happen: ``event`` events (an entry of a
        desktop's history) and ``desktop`` events (its record after a change
        of state). Stop iterating (or close the generator) to hang up."""
        with self._h.open("streamEvents", headers={"Accept": "text/event-stream"}, timeout=timeout) as r:
            yield from parse(r)

    def stream_token(self) -> m.StreamToken:
        """A one-minute token that opens the stream once (for a browser's EventSource)."""
        return m.StreamToken.from_dict(self._h.call("createStreamToken"))
