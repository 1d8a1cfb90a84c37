"""HTTP to bureau with the standard library: JSON in and out, streamed
bodies both ways, errors as exceptions."""

from __future__ import annotations

import http.client
import json
import os
import ssl
from typing import Any, BinaryIO, Iterable, Mapping
from urllib.parse import quote, urlencode, urlsplit

from .errors import error_for
from .operations import OPERATIONS

CHUNK = 1 << 16


def _query(params: Mapping[str, Any] | None) -> str:
    if not params:
        return ""
    q = []
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        q.append((k, str(v)))
    return ("?" + urlencode(q)) if q else ""


class Response:
    """An open answer whose body is read as a stream (close it, or use with)."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse):
        self._conn, self.raw = conn, resp
        self.status = resp.status
        self.headers = resp.headers

    def read(self, n: int | None = None) -> bytes:
        return self.raw.read(n)

    def readline(self) -> bytes:
        return self.raw.readline()

    def iter_chunks(self, size: int = CHUNK) -> Iterable[bytes]:
        while True:
            b = self.raw.read(size)
            if not b:
                return
            yield b

    def close(self) -> None:
        self.raw.close()
        self._conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Transport:
    """Makes the calls of OPERATIONS against one bureau with one token."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 300.0,
                 ssl_context: ssl.SSLContext | None = None):
        url = url or os.environ.get("BUREAU_URL") or "http://127.0.0.1:8080"
        self.token = token if token is not None else os.environ.get("BUREAU_TOKEN")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"bureau URL {url!r}: want http(s)://host[:port]")
        self.url = url.rstrip("/")
        self._scheme, self._netloc, self._base = parts.scheme, parts.netloc, parts.path.rstrip("/")
        self.timeout = timeout
        self._ssl = ssl_context

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        t = self.timeout if timeout is None else timeout
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._netloc, timeout=t, context=self._ssl)
        return http.client.HTTPConnection(self._netloc, timeout=t)

    def path(self, op: str, **params: Any) -> str:
        """The path of operation op with its path parameters filled in."""
        _, tmpl = OPERATIONS[op]
        for k, v in params.items():
            tmpl = tmpl.replace("{" + k + "}", quote(str(v), safe=""))
        if "{" in tmpl:
            raise ValueError(f"{op}: path parameters missing in {tmpl}")
        return tmpl

    def open(self, op: str, params: Mapping[str, Any] | None = None, query: Mapping[str, Any] | None = None,
             json_body: Any = None, body: bytes | BinaryIO | Iterable[bytes] | None = None,
             headers: Mapping[str, str] | None = None, timeout: float | None = None,
             ok: tuple[int, ...] = ()) -> Response:
        """Sends the request of op and returns the open answer; an error
        status (one not in ok) raises its BureauError."""
        method, _ = OPERATIONS[op]
        target = self._base + self.path(op, **(params or {})) + _query(query)
        h = {"Accept": "application/json", "User-Agent": "bureau-python"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        chunked = False
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h["Content-Type"] = "application/json"
        elif body is not None:
            h["Content-Type"] = "application/octet-stream"
            if not isinstance(body, (bytes, bytearray)):
                size = _size_of(body)
                if size is None:
                    chunked = True
                    h["Transfer-Encoding"] = "chunked"
                    body = _chunks(body)
                else:
                    h["Content-Length"] = str(size)
        h.update(headers or {})
        conn = self._connect(timeout)
        try:
            conn.request(method, target, body=body, headers=h, encode_chunked=chunked)
            resp = conn.getresponse()
        except Exception:
            conn.close()
            raise
        r = Response(conn, resp)
        if resp.status >= 400 and resp.status not in ok:
            with r:
                raw = r.read()
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = {"error": {"code": "http_%d" % resp.status, "message": raw.decode("utf-8", "replace")[:500]}}
            retry = resp.headers.get("Retry-After")
            raise error_for(resp.status, parsed, float(retry) if retry and retry.isdigit() else None)
        return r

    def call(self, op: str, params: Mapping[str, Any] | None = None, query: Mapping[str, Any] | None = None,
             json_body: Any = None, body: Any = None, timeout: float | None = None) -> Any:
        """op's answer parsed as JSON (None when it has no body)."""
        with self.open(op, params, query, json_body, body, timeout=timeout) as r:
            raw = r.read()
        if not raw:
            return None
        if (r.headers.get("Content-Type") or "").startswith("application/json"):
            return json.loads(raw)
        return raw


def _size_of(f: Any) -> int | None:
    """The bytes left in a seekable file, or None (then it is sent chunked)."""
    try:
        pos = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(pos)
        return end - pos
    except (AttributeError, OSError, ValueError):
        return None


def _chunks(body: Any) -> Iterable[bytes]:
    if hasattr(body, "read"):
        while True:
            b = body.read(CHUNK)
            if not b:
                return
            yield b
    else:
        yield from body
