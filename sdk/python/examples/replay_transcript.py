#!/usr/bin/env python3
"""Replays a recorded computer-use transcript against a live desktop: each
recorded tool call (Anthropic's tool_use or OpenAI's computer_call) goes
through the SDK's adapters to bureau, and what came back is printed, as a
model would have received it. No model and no network beyond bureau.

The recorded session began with a terminal open at the top left of the
screen, so the example first opens one (an xterm, through exec) unless
--no-terminal.

    BUREAU_URL=… BUREAU_TOKEN=… python3 examples/replay_transcript.py DESKTOP_ID [transcript.json] [--save final.png]
"""

import argparse
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bureau import Client  # noqa: E402
from bureau.adapters import AnthropicComputer, OpenAIComputer  # noqa: E402


def summary(block: dict) -> str:
    parts = []
    for c in block.get("content", []):
        if c["type"] == "image":
            parts.append(f"image {c['source']['media_type']} {len(base64.b64decode(c['source']['data']))} bytes")
        else:
            parts.append(repr(c.get("text")))
    return ("ERROR " if block.get("is_error") else "") + ", ".join(parts)


def open_terminal(desktop) -> None:
    """Opens an xterm at the top left of the screen and waits until it shows."""
    desktop.exec_background(["xterm", "-geometry", "100x24+0+40"], name="replay-terminal", env={"DISPLAY": ":0"})
    deadline = time.monotonic() + 120
    while desktop.exec("DISPLAY=:0 xdotool search --onlyvisible --class xterm").exit_code != 0:
        if time.monotonic() > deadline:
            raise SystemExit("the terminal did not open within 2 minutes")
        time.sleep(1)
    time.sleep(1)  # mapped and focused


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("desktop")
    ap.add_argument("transcript", nargs="?", default=os.path.join(os.path.dirname(__file__), "transcript.json"))
    ap.add_argument("--save", default="final.png", help="where to save the last screenshot")
    ap.add_argument("--no-terminal", action="store_true", help="do not open the terminal the session began with")
    args = ap.parse_args()

    with open(args.transcript) as f:
        transcript = json.load(f)
    display = tuple(transcript.get("display", (1280, 800)))
    desktop = Client().desktop(args.desktop)
    if not args.no_terminal:
        open_terminal(desktop)
    anthropic = AnthropicComputer(desktop, display=display)
    openai = OpenAIComputer(desktop, display=display)
    last_image, failures = None, 0
    for i, step in enumerate(transcript["steps"], 1):
        begun = time.monotonic()
        if "anthropic" in step:
            call = step["anthropic"]
            result = anthropic.run(call)
            what = f"anthropic {call['input']['action']}"
            failures += bool(result.get("is_error"))
            for c in result["content"]:
                if c["type"] == "image":
                    last_image = base64.b64decode(c["source"]["data"])
            told = summary(result)
        else:
            call = step["openai"]
            out = openai.run(call)
            acts = call.get("actions") or [call.get("action")]
            what = "openai " + "+".join(a["type"] for a in acts)
            url = out["output"]["image_url"]
            last_image = base64.b64decode(url.split(",", 1)[1])
            told = f"computer_screenshot {len(last_image)} bytes"
        print(f"{i:2d}. {what:<32} {time.monotonic() - begun:6.2f} s  → {told}")
    if last_image:
        with open(args.save, "wb") as f:
            f.write(last_image)
        print(f"final screenshot saved to {args.save}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
