#!/usr/bin/env node
// Replays a recorded computer-use transcript against a live desktop: each
// recorded tool call (Anthropic's tool_use or OpenAI's computer_call) goes
// through the SDK's adapters to bureau, and what came back is printed as a
// model would have received it. No model and no network beyond bureau.
//
// The recorded session began with a terminal open at the top left of the
// screen, so the example first opens one (an xterm, through exec) unless
// --no-terminal.
//
//   npm run build
//   BUREAU_URL=… BUREAU_TOKEN=… node examples/replay-transcript.mjs DESKTOP_ID [transcript.json] [--save final.png] [--no-terminal]
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { AnthropicComputer, Bureau, OpenAIComputer } from "../dist/index.js";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { save: { type: "string", default: "final.png" }, "no-terminal": { type: "boolean", default: false } },
});
if (!positionals[0]) {
  console.error("usage: replay-transcript.mjs DESKTOP_ID [transcript.json] [--save final.png] [--no-terminal]");
  process.exit(2);
}
const transcript = JSON.parse(readFileSync(positionals[1] ?? new URL("transcript.json", import.meta.url), "utf8"));
const display = transcript.display ?? [1280, 800];
const desktop = new Bureau().desktop(positionals[0]);

if (!opts["no-terminal"]) {
  // Opens an xterm at the top left of the screen and waits until it shows.
  await desktop.execBackground(["xterm", "-geometry", "100x24+0+40"], { name: "replay-terminal", env: { DISPLAY: ":0" } });
  const deadline = Date.now() + 120_000;
  while ((await desktop.exec("DISPLAY=:0 xdotool search --onlyvisible --class xterm")).exit_code !== 0) {
    if (Date.now() > deadline) throw new Error("the terminal did not open within 2 minutes");
    await new Promise((r) => setTimeout(r, 1000));
  }
  await new Promise((r) => setTimeout(r, 1000)); // mapped and focused
}

const anthropic = new AnthropicComputer(desktop, display);
const openai = new OpenAIComputer(desktop, display);
let last;
let failures = 0;
for (const [i, step] of transcript.steps.entries()) {
  const begun = performance.now();
  let what, told;
  if (step.anthropic) {
    const result = await anthropic.run(step.anthropic);
    what = `anthropic ${step.anthropic.input.action}`;
    if (result.is_error) failures++;
    told = (result.is_error ? "ERROR " : "") + result.content.map((c) => {
      if (c.type !== "image") return JSON.stringify(c.text);
      last = Buffer.from(c.source.data, "base64");
      return `image ${c.source.media_type} ${last.length} bytes`;
    }).join(", ");
  } else {
    const call = step.openai;
    const out = await openai.run(call);
    what = "openai " + (call.actions ?? [call.action]).map((a) => a.type).join("+");
    last = Buffer.from(out.output.image_url.split(",", 2)[1], "base64");
    told = `computer_screenshot ${last.length} bytes`;
  }
  console.log(`${String(i + 1).padStart(2)}. ${what.padEnd(32)} ${((performance.now() - begun) / 1000).toFixed(2).padStart(6)} s  → ${told}`);
}
if (last) {
  writeFileSync(opts.save, last);
  console.log(`final screenshot saved to ${opts.save}`);
}
process.exit(failures ? 1 : 0);
