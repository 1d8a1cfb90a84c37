/**
 * Ties FIELDS (models.ts) to the exported interfaces at compile time: `npm run build` fails, naming
 * the difference, when an interface has a field its FIELDS list lacks, a list names a field its
 * interface lacks, or FIELDS and the table below disagree on the interfaces there are. (The tests
 * compare FIELDS with the spec, and check that every exported interface of models.ts is in it.)
 */
import type * as M from "./models.js";
import type { FIELDS } from "./models.js";

/** Each FIELDS entry's interface, by its name there. */
interface Models {
  Desktop: M.Desktop;
  DeleteResult: M.DeleteResult;
  Event: M.Event;
  Snapshot: M.Snapshot;
  Image: M.Image;
  Template: M.Template;
  Token: M.Token;
  TokenCreated: M.TokenCreated;
  ConsoleToken: M.ConsoleToken;
  ConsoleLink: M.ConsoleLink;
  Share: M.Share;
  ShareCreated: M.ShareCreated;
  LiveURL: M.LiveURL;
  URLLogin: M.URLLogin;
  Secret: M.Secret;
  Quota: M.Quota;
  Usage: M.Usage;
  Host: M.Host;
  Drain: M.Drain;
  PlacementRequest: M.PlacementRequest;
  Stats: M.Stats;
  ExecResult: M.ExecResult;
  Process: M.Process;
  Service: M.Service;
  AgentStatus: M.AgentStatus;
  FileStat: M.FileStat;
  FileEntry: M.FileEntry;
  Clipboard: M.Clipboard;
  ComputerResult: M.ComputerResult;
  StepResult: M.StepResult;
  ScreenImage: M.ScreenImage;
  Size: M.Size;
  StreamToken: M.StreamToken;
  NetworkPolicy: M.NetworkPolicy;
  Recording: M.Recording;
  Step: M.Step;
  CheckpointPolicy: M.CheckpointPolicy;
  StepExport: M.StepExport;
  Backup: M.Backup;
  BackupTarget: M.BackupTarget;
  S3Location: M.S3Location;
  BackupCheck: M.BackupCheck;
  BackupFile: M.BackupFile;
  BackupFiles: M.BackupFiles;
  BackupFilesRestore: M.BackupFilesRestore;
  BackupFilesRestored: M.BackupFilesRestored;
  BackupSchedule: M.BackupSchedule;
  BackupScheduleRequest: M.BackupScheduleRequest;
  Rect: M.Rect;
  Window: M.Window;
  WindowList: M.WindowList;
  WindowClosed: M.WindowClosed;
  LaunchAppResult: M.LaunchAppResult;
  UINode: M.UINode;
  UINodeList: M.UINodeList;
  UIActResult: M.UIActResult;
  Control: M.Control;
  ControlView: M.ControlView;
  Viewer: M.Viewer;
  RequestAction: M.RequestAction;
  Request: M.Request;
  ApprovalPolicy: M.ApprovalPolicy;
}

type Fields = typeof FIELDS;
type Listed = keyof Models & keyof Fields;

/**
 * How interface T (named Name) and its field list K differ, one message each: never when K's names
 * and T's keys are the same set (each assignable to the other).
 */
type Drift<Name extends string, T, K extends readonly string[]> =
  | `${Name} has field "${Exclude<keyof T, K[number]> & string}", which FIELDS.${Name} lacks`
  | `FIELDS.${Name} lists "${Exclude<K[number], keyof T>}", which ${Name} lacks`;

type Mismatches =
  | { [N in Listed]: Drift<N, Models[N], Fields[N]["fields"]> }[Listed]
  | `FIELDS has no entry for ${Exclude<keyof Models, keyof Fields>}`
  | `FIELDS.${Exclude<keyof Fields, keyof Models>} is not in the Models table of fieldcheck.ts`;

/** Compiles only when T is "no drift"; otherwise the error shows the mismatches. */
type Assert<T extends "no drift"> = T;

export type FieldsMatchInterfaces = Assert<[Mismatches] extends [never] ? "no drift" : Mismatches>;
