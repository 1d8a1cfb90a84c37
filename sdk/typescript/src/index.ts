/**
 * bureau: persistent Linux desktops for AI agents.
 *
 *     import { Bureau } from "@bureau/sdk";
 *     const bureau = new Bureau();                 // BUREAU_URL, BUREAU_TOKEN
 *     const d = await bureau.desktops.create({ name: "work" }, { waitReady: true });   // running, its session up
 *     console.log((await d.exec("uname -a")).stdout);
 */
export { Bureau, Desktops, Events, Hosts, Images, OwnerSecrets, Quotas, Templates, Tokens, type ClientOptions, type CreateDesktop, type CreateOptions } from "./client.js";
export { Backups, BackupTargets, type BackupRef, type BackupTargetRef } from "./backups.js";
export { Desktop, type ComputerAction, type ComputerOptions, type ExecOptions, type LaunchApp, type ScreenshotOptions, type UIFilters, type WaitReadyOptions, type WindowGeometry } from "./desktop.js";
export { AlreadyDecidedError, BureauError, CannotVerifyError, DeniedError, ExpiredError, GoneError, HumanInControlError, NoEffectError, NotReadyError, TimeoutError, WebhookVerificationError } from "./errors.js";
export { Clipboard, Console, Files, Processes, Secrets, Services, Snapshots, URLs, type ServiceSpec } from "./guest.js";
export type * from "./models.js";
export { FIELDS } from "./models.js";
export { EXCLUDED, OPERATIONS, type OperationId } from "./operations.js";
export { People, type AskOptions, type RequestRef } from "./people.js";
export { Recordings, type RecordingRef } from "./recordings.js";
export { eventJSON, parseSSE, type ServerEvent } from "./sse.js";
export { Steps, type DesktopRef } from "./steps.js";
export { AnthropicComputer, OpenAIComputer, ANTHROPIC_TOOL_VERSIONS, type ComputerCall, type ComputerCallOutput, type ToolResult, type ToolUse, type VerifyOptions } from "./adapters.js";
export type { AuditEntry, AuditFilter, AuditPage } from "./audit.js";
export { Teams, type Team, type TeamMember, type TeamRole, type TeamSummary } from "./teams.js";
export { signWebhook, verifyWebhook, Webhooks, type DeliveryRef, type Webhook, type WebhookDelivery, type WebhookMessage, type WebhookRef } from "./webhooks.js";
