"""OpenAI's computer-use tool (Responses API) on a bureau desktop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import BureauError

if TYPE_CHECKING:
    from ..desktop import Desktop
    from ..models import ComputerResult


class OpenAIComputer:
    """Turns ``computer_call`` items into bureau computer-use calls and
    returns their ``computer_call_output`` items with the settled screen.

    An item carries one ``action`` or a batch of ``actions``; bureau takes
    OpenAI's action shapes as they are (``keys`` held through pointer
    actions included) and runs a batch in order in one request.

    A computer_call_output carries a screenshot alone, so whether the screen
    changed after each action is in ``last_result`` (the ComputerResult of
    the last run: ``unchanged()`` names the actions that changed nothing).
    ``verify_ms`` sets how long bureau watches (0: no check);
    ``expect="change"`` makes run raise NoEffect at an action that changed
    nothing.
    """

    def __init__(self, desktop: "Desktop", display: tuple[int, int] = (1280, 800), environment: str = "linux", *,
                 expect: str | None = None, verify_ms: int | None = None):
        self.desktop, self.display, self.environment = desktop, display, environment
        self.expect, self.verify_ms = expect, verify_ms
        self.last_result: "ComputerResult | None" = None

    def definition(self) -> dict:
        """The tool to pass in the request's ``tools``."""
        return {"type": "computer_use_preview", "display_width": self.display[0],
                "display_height": self.display[1], "environment": self.environment}

    def run(self, call: dict) -> dict:
        """Runs a ``computer_call`` item and returns its ``computer_call_output``.

        Pending safety checks are acknowledged back as they came (show them
        to a person first if your policy asks for it). A refusal by bureau
        raises BureauError: the Responses API has no error form for this
        output, so the caller decides what to tell the model.
        """
        actions = call.get("actions")
        if actions is None:
            actions = [call["action"]] if call.get("action") else []
        if not actions:
            raise BureauError(422, "invalid", "the computer_call has no action", field="action")
        actions = [_shape(a) for a in actions]
        res = self.desktop.computer(*actions, display=self.display, screenshot=True,
                                    expect=self.expect, verify_ms=self.verify_ms)
        self.last_result = res
        img = res.screenshot
        out: dict[str, Any] = {"type": "computer_call_output", "call_id": call.get("call_id", ""),
                               "output": {"type": "computer_screenshot",
                                          "image_url": f"data:{img.media_type};base64,{img.data}"}}
        checks = call.get("pending_safety_checks")
        if checks:
            out["acknowledged_safety_checks"] = checks
        return out


    def unchanged(self) -> list[str]:
        """The actions of the last run after which the screen did not change
        (moves aside: the pointer is not part of what bureau watches)."""
        res = self.last_result
        return [r.action for r in (res.results if res else []) if r.screen_changed is False and r.action != "move"]


def _shape(a: dict) -> dict:
    """An OpenAI action as bureau takes it: the fields bureau reads, with
    ``wait``'s optional ms turned into bureau's plain wait."""
    a = dict(a)
    if a.get("type") == "scroll":
        a.setdefault("scroll_x", 0)
        a.setdefault("scroll_y", 0)
    return {k: v for k, v in a.items() if k in _FIELDS}


_FIELDS = {"type", "x", "y", "button", "path", "keys", "scroll_x", "scroll_y", "text"}
