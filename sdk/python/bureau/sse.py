"""Server-sent events, read from a byte stream as they come."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator


@dataclass
class ServerEvent:
    """One event: its name (``event:``, ``message`` when absent) and data."""

    event: str
    data: str
    id: str | None = None

    def json(self) -> Any:
        """The data parsed as JSON."""
        return json.loads(self.data) if self.data else None


def parse(stream: BinaryIO) -> Iterator[ServerEvent]:
    """Yields each event of an SSE stream; comments (keepalives) are skipped."""
    event, data, ev_id = None, [], None
    while True:
        raw = stream.readline()
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data or event:
                yield ServerEvent(event or "message", "\n".join(data), ev_id)
            event, data, ev_id = None, [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            ev_id = value
    if data:
        yield ServerEvent(event or "message", "\n".join(data), ev_id)
