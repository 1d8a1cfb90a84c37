"""Webhooks: endpoints bureau POSTs desktops' events to, signed per Standard
Webhooks (https://www.standardwebhooks.com). ``client.webhooks`` registers
and manages them (answers are the API's JSON objects, as dicts);
``verify`` checks a message a receiver got:

    from bureau.webhooks import verify
    message = verify(secret, request.headers, request.body)  # the JSON, or raises

See docs/webhooks.md for the event types and the payload."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any, Mapping

from ._transport import Transport
from .errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    raise WebhookVerificationError(f"missing header {name}")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The v1 signature of a message: base64 of HMAC-SHA256, keyed with the
    base64 after ``whsec_``, of ``<id>.<timestamp>.<body>``."""
    key = base64.b64decode(secret[len(SECRET_PREFIX):] if secret.startswith(SECRET_PREFIX) else secret)
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret: str, headers: Mapping[str, str], body: bytes | str, tolerance_s: int = 300) -> Any:
    """Checks a webhook message and returns its body parsed as JSON.

    headers are the request's (any case); body its raw bytes, exactly as
    received. Raises WebhookVerificationError when a header is missing, the
    timestamp is more than tolerance_s seconds old or ahead (a replay), or no
    ``v1,`` signature in webhook-signature is the secret's."""
    if isinstance(body, str):
        body = body.encode()
    msg_id = _header(headers, "webhook-id")
    ts_text = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    try:
        ts = int(ts_text)
    except ValueError:
        raise WebhookVerificationError(f"webhook-timestamp {ts_text!r} is not a number") from None
    now = int(time.time())
    if ts < now - tolerance_s:
        raise WebhookVerificationError("the message is too old (webhook-timestamp): a replay?")
    if ts > now + tolerance_s:
        raise WebhookVerificationError("the message is from the future (webhook-timestamp)")
    try:
        want = sign(secret, msg_id, ts, body)
    except (ValueError, TypeError) as e:
        raise WebhookVerificationError(f"the secret is not whsec_<base64>: {e}") from None
    for s in sigs.split(" "):
        if s.startswith("v1,") and hmac.compare_digest(s.encode(), want.encode()):
            try:
                return json.loads(body)
            except ValueError:
                raise WebhookVerificationError("the body is not JSON") from None
    raise WebhookVerificationError("no valid signature")


def _id(x: "str | Mapping[str, Any]") -> str:
    return x if isinstance(x, str) else x["id"]


class Webhooks:
    """Register, list, change, delete, ping and rotate webhook endpoints, and
    read and repeat their deliveries (webhook: an id, or the endpoint's dict)."""

    def __init__(self, http: Transport):
        self._h = http

    def create(self, url: str, events: list[str], description: str = "", all_owners: bool = False) -> dict:
        """Registers an endpoint for events (types such as desktop.started,
        families such as desktop.*, or *); the answer's ``secret`` is shown
        this once. all_owners (admins): every owner's events. Invalid (field
        url or events[i]) for a URL bureau may not reach or an unknown type."""
        body: dict[str, Any] = {"url": url, "events": events, "description": description}
        if all_owners:
            body["all_owners"] = True
        return self._h.call("createWebhook", json_body=body)

    def list(self, owner: str | None = None) -> list[dict]:
        """Your endpoints (an admin's: everyone's, or owner's)."""
        return self._h.call("listWebhooks", query={"owner": owner})["webhooks"] or []

    def get(self, webhook: "str | Mapping[str, Any]") -> dict:
        return self._h.call("getWebhook", {"wid": _id(webhook)})

    def update(self, webhook: "str | Mapping[str, Any]", *, url: str | None = None, events: list[str] | None = None,
               description: str | None = None, enabled: bool | None = None) -> dict:
        """Changes what is given; enabled=True clears why it was disabled."""
        body = {k: v for k, v in {"url": url, "events": events, "description": description, "enabled": enabled}.items()
                if v is not None}
        return self._h.call("updateWebhook", {"wid": _id(webhook)}, json_body=body)

    def delete(self, webhook: "str | Mapping[str, Any]") -> None:
        self._h.call("deleteWebhook", {"wid": _id(webhook)})

    def ping(self, webhook: "str | Mapping[str, Any]") -> dict:
        """Queues a webhook.ping message; returns its delivery."""
        return self._h.call("pingWebhook", {"wid": _id(webhook)})

    def rotate_secret(self, webhook: "str | Mapping[str, Any]") -> dict:
        """A new secret (``secret``, shown once); for 24 h messages carry the
        old secret's signature too."""
        return self._h.call("rotateWebhookSecret", {"wid": _id(webhook)})

    def deliveries(self, webhook: "str | Mapping[str, Any]", status: str | None = None, limit: int | None = None,
                   before: str | None = None) -> list[dict]:
        """The endpoint's deliveries, newest first (status: pending,
        delivered or failed; before: an RFC 3339 time, for the next page)."""
        q = {"status": status, "limit": limit, "before": before}
        return self._h.call("listWebhookDeliveries", {"wid": _id(webhook)}, query=q)["deliveries"] or []

    def delivery(self, webhook: "str | Mapping[str, Any]", delivery: "str | Mapping[str, Any]") -> dict:
        """One delivery, with its payload."""
        return self._h.call("getWebhookDelivery", {"wid": _id(webhook), "did": _id(delivery)})

    def redeliver(self, webhook: "str | Mapping[str, Any]", delivery: "str | Mapping[str, Any]") -> dict:
        """Sends a delivery's message again (same message id); returns the new delivery."""
        return self._h.call("redeliverWebhook", {"wid": _id(webhook), "did": _id(delivery)})
