"""Anthropic's computer-use tool on a bureau desktop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BureauError

if TYPE_CHECKING:
    from ..desktop import Desktop

# Tool versions: computer_20251124 adds zoom (with enable_zoom).
TOOL_VERSIONS = ("computer_20251124", "computer_20250124")

# Actions that return what they look at; every other action is followed
# by a screenshot of the settled screen.
_LOOKS = {"screenshot", "zoom", "cursor_position"}

# A move rarely changes the screen (the pointer is not part of what bureau
# watches), so an unchanged screen after one says nothing worth a note.
_MOVES = {"mouse_move"}


class AnthropicComputer:
    """Turns Anthropic ``tool_use`` blocks for the computer tool into bureau
    computer-use calls, and their outcome into ``tool_result`` blocks.

    bureau takes Anthropic's action shapes as they are (modifiers in
    ``text`` on clicks and scrolls, ``region`` for zoom …) and scales
    coordinates between ``display`` (the size the model sees) and the real
    screen, so the adapter only shapes the request and the answer.

    bureau says whether the screen changed after each input action; when it
    did not, the result says so in a text block ("the screen did not change
    after left_click"), so the model can tell a click that missed.
    ``verify_ms`` sets how long bureau watches (0: no check);
    ``expect="change"`` makes an action that changed nothing an error result
    (``is_error``, bureau's ``no_effect`` message) instead.
    """

    def __init__(self, desktop: "Desktop", display: tuple[int, int] = (1280, 800),
                 version: str = TOOL_VERSIONS[0], name: str = "computer", *,
                 expect: str | None = None, verify_ms: int | None = None):
        if version not in TOOL_VERSIONS:
            raise ValueError(f"tool version {version!r}: one of {', '.join(TOOL_VERSIONS)}")
        self.desktop, self.display, self.version, self.name = desktop, display, version, name
        self.expect, self.verify_ms = expect, verify_ms

    def definition(self) -> dict:
        """The tool to pass in the request's ``tools``."""
        d = {"type": self.version, "name": self.name,
             "display_width_px": self.display[0], "display_height_px": self.display[1]}
        if self.version == "computer_20251124":
            d["enable_zoom"] = True
        return d

    def run(self, tool_use: dict) -> dict:
        """Runs one ``tool_use`` block (``{"type": "tool_use", "id", "name",
        "input": {"action": …}}``) and returns its ``tool_result`` block: the
        screen as an image (or the cursor position as text), or the error
        with ``is_error``."""
        tid = tool_use.get("id", "")
        action = dict(tool_use.get("input") or {})
        try:
            return {"type": "tool_result", "tool_use_id": tid, "content": self._do(action)}
        except BureauError as e:
            return {"type": "tool_result", "tool_use_id": tid, "is_error": True,
                    "content": [{"type": "text", "text": e.message}]}

    def _do(self, action: dict) -> list[dict]:
        name = action.get("action")
        if not name:
            raise BureauError(422, "invalid", "the tool input has no action", field="action")
        looks = name in _LOOKS
        res = self.desktop.computer(action, display=self.display, screenshot=not looks,
                                    expect=self.expect, verify_ms=self.verify_ms)
        step = res.results[0] if res.results else None
        content: list[dict] = []
        if name == "cursor_position" and step is not None and step.cursor:
            content.append({"type": "text", "text": f"X={step.cursor['x']},Y={step.cursor['y']}"})
            return content
        img = step.image if looks and step is not None else res.screenshot
        if img is not None:
            content.append({"type": "image", "source": {"type": "base64", "media_type": img.media_type,
                                                         "data": img.data}})
        if step is not None and step.screen_changed is False and name not in _MOVES:
            content.append({"type": "text", "text": f"the screen did not change after {name}"})
        if step is not None and step.typed_via == "keyboard+paste":
            content.append({"type": "text", "text": "some characters had no key on this layout and were pasted"})
        return content or [{"type": "text", "text": "done"}]
