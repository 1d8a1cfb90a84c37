/**
 * Agent-loop adapters: a model's computer-tool call in, bureau calls made,
 * the tool result out, in the provider's own shapes. bureau's computer-use
 * API takes both providers' action shapes and scales coordinates between
 * the display the model sees and the real screen, so the adapters only
 * shape requests and answers.
 */
import type { Desktop } from "./desktop.js";
import { BureauError } from "./errors.js";
import type { ComputerResult } from "./models.js";

/** Anthropic computer tool versions: computer_20251124 adds zoom (enable_zoom). */
export const ANTHROPIC_TOOL_VERSIONS = ["computer_20251124", "computer_20250124"] as const;

// Actions that return what they look at; the others are followed by a screenshot.
const LOOKS = new Set(["screenshot", "zoom", "cursor_position"]);
// Moves rarely change the screen (the pointer is not part of what bureau watches): no news when they do not.
const MOVES = new Set(["mouse_move", "move"]);

/**
 * Verified actions: bureau says whether the screen changed after each input action. verifyMs is how long it
 * watches (default 500; 0: no check); expect "change" makes an action that changed nothing an error.
 */
export interface VerifyOptions {
  expect?: "change";
  verifyMs?: number;
}

export interface ToolUse {
  type?: "tool_use";
  id: string;
  name?: string;
  input: Record<string, unknown>;
}

export type ToolResultContent =
  | { type: "text"; text: string }
  | { type: "image"; source: { type: "base64"; media_type: string; data: string } };

export interface ToolResult {
  type: "tool_result";
  tool_use_id: string;
  content: ToolResultContent[];
  is_error?: boolean;
}

/**
 * Anthropic's computer-use tool on a bureau desktop. When an input action changed nothing on the screen, the
 * tool_result says so in a text block ("the screen did not change after left_click"); with expect "change" such an
 * action is an error result instead (is_error, bureau's no_effect message).
 */
export class AnthropicComputer {
  constructor(
    readonly desktop: Desktop,
    readonly display: [number, number] = [1280, 800],
    readonly version: (typeof ANTHROPIC_TOOL_VERSIONS)[number] = "computer_20251124",
    readonly name = "computer",
    readonly verify: VerifyOptions = {},
  ) {}

  /** The tool to pass in the request's tools. */
  definition(): Record<string, unknown> {
    const d: Record<string, unknown> = { type: this.version, name: this.name, display_width_px: this.display[0], display_height_px: this.display[1] };
    if (this.version === "computer_20251124") d.enable_zoom = true;
    return d;
  }

  /** Runs one tool_use block and returns its tool_result: the screen as an image (or the cursor position as text), or the error with is_error. */
  async run(toolUse: ToolUse): Promise<ToolResult> {
    try {
      return { type: "tool_result", tool_use_id: toolUse.id, content: await this.do({ ...toolUse.input }) };
    } catch (e) {
      if (!(e instanceof BureauError)) throw e;
      return { type: "tool_result", tool_use_id: toolUse.id, is_error: true, content: [{ type: "text", text: e.message }] };
    }
  }

  private async do(action: Record<string, unknown>): Promise<ToolResultContent[]> {
    const name = action.action as string | undefined;
    if (!name) throw new BureauError(422, "invalid", "the tool input has no action", "action");
    const looks = LOOKS.has(name);
    const res = await this.desktop.computer(action, { display: this.display, screenshot: !looks, ...this.verify });
    const step = res.results?.[0];
    if (name === "cursor_position" && step?.cursor) {
      const c = step.cursor as { x: number; y: number };
      return [{ type: "text", text: `X=${c.x},Y=${c.y}` }];
    }
    const img = looks ? step?.image : res.screenshot;
    const out: ToolResultContent[] = [];
    if (img) out.push({ type: "image", source: { type: "base64", media_type: img.media_type, data: img.data } });
    if (step?.screen_changed === false && !MOVES.has(name)) out.push({ type: "text", text: `the screen did not change after ${name}` });
    if (step?.typed_via === "keyboard+paste") out.push({ type: "text", text: "some characters had no key on this layout and were pasted" });
    return out.length ? out : [{ type: "text", text: "done" }];
  }
}

export interface ComputerCall {
  type?: "computer_call";
  call_id: string;
  action?: Record<string, unknown>;
  actions?: Record<string, unknown>[];
  pending_safety_checks?: unknown[];
}

export interface ComputerCallOutput {
  type: "computer_call_output";
  call_id: string;
  output: { type: "computer_screenshot"; image_url: string };
  acknowledged_safety_checks?: unknown[];
}

const OPENAI_FIELDS = new Set(["type", "x", "y", "button", "path", "keys", "scroll_x", "scroll_y", "text"]);

/**
 * OpenAI's computer-use tool (Responses API) on a bureau desktop. A computer_call_output carries a screenshot alone,
 * so whether the screen changed after each action is in lastResult (unchanged() names the actions that changed
 * nothing); with expect "change" run rejects with NoEffectError at such an action.
 */
export class OpenAIComputer {
  /** The ComputerResult of the last run. */
  lastResult?: ComputerResult;

  constructor(
    readonly desktop: Desktop,
    readonly display: [number, number] = [1280, 800],
    readonly environment = "linux",
    readonly verify: VerifyOptions = {},
  ) {}

  /** The actions of the last run after which the screen did not change (moves aside). */
  unchanged(): string[] {
    return (this.lastResult?.results ?? []).filter((r) => r.screen_changed === false && !MOVES.has(r.action)).map((r) => r.action);
  }

  /** The tool to pass in the request's tools. */
  definition(): Record<string, unknown> {
    return { type: "computer_use_preview", display_width: this.display[0], display_height: this.display[1], environment: this.environment };
  }

  /**
   * Runs a computer_call (one action or a batch) and returns its
   * computer_call_output with the settled screen; pending safety checks are
   * acknowledged back as they came. A refusal rejects with a BureauError.
   */
  async run(call: ComputerCall): Promise<ComputerCallOutput> {
    const actions = call.actions ?? (call.action ? [call.action] : []);
    if (!actions.length) throw new BureauError(422, "invalid", "the computer_call has no action", "action");
    const shaped = actions.map((a) => {
      const o = Object.fromEntries(Object.entries(a).filter(([k]) => OPENAI_FIELDS.has(k)));
      if (o.type === "scroll") {
        o.scroll_x ??= 0;
        o.scroll_y ??= 0;
      }
      return o;
    });
    const res = await this.desktop.computer(shaped, { display: this.display, screenshot: true, ...this.verify });
    this.lastResult = res;
    const img = res.screenshot!;
    const out: ComputerCallOutput = {
      type: "computer_call_output",
      call_id: call.call_id,
      output: { type: "computer_screenshot", image_url: `data:${img.media_type};base64,${img.data}` },
    };
    if (call.pending_safety_checks?.length) out.acknowledged_safety_checks = call.pending_safety_checks;
    return out;
  }
}
