import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { BureauError } from "./errors.js";
import type * as m from "./models.js";
import type { DesktopRef } from "./steps.js";
import type { Transport } from "./transport.js";

/** A recording: its id, or a Recording. */
export type RecordingRef = string | { id: string };

const idOf = (x: DesktopRef | RecordingRef) => (typeof x === "string" ? x : x.id);

/**
 * Each desktop's screen recordings: WebM video made from the hypervisor's side (boot, login screen, any window
 * manager), only the frames that changed encoded, each at the time it was seen (second t of the video is `started_at`
 * + t, so a step of the step log is found in it by its time).
 */
export class Recordings {
  constructor(private readonly h: Transport) {}

  /**
   * Starts recording the screen (waking the desktop if it napped or hibernated) until stopped, `max_seconds` (default
   * and most: the server's BUREAU_RECORDING_MAX_SECONDS), or the desktop stops running. `fps` (1 to 10, default 2) is
   * how often the screen is looked at. 409 when one is already under way, 503 when the host has no ffmpeg.
   */
  start(desktop: DesktopRef, o: { fps?: number; max_seconds?: number } = {}): Promise<m.Recording> {
    const body: Record<string, number> = {};
    if (o.fps !== undefined) body.fps = o.fps;
    if (o.max_seconds !== undefined) body.max_seconds = o.max_seconds;
    return this.h.call("startRecording", { params: { id: idOf(desktop) }, json: Object.keys(body).length ? body : undefined });
  }

  /**
   * Stops a recording (by default the one under way) and resolves once its file is complete; one already ended is
   * answered as it is. Rejects with a 404 BureauError when none is under way.
   */
  async stop(desktop: DesktopRef, recording?: RecordingRef): Promise<m.Recording> {
    if (recording === undefined) {
      recording = (await this.list(desktop)).filter((r) => r.state === "recording").at(-1);
      if (!recording) throw new BureauError(404, "not_found", "no recording of this desktop is under way");
    }
    return this.h.call("stopRecording", { params: { id: idOf(desktop), rid: idOf(recording) } });
  }

  /** The desktop's recordings, oldest first (the one under way included). */
  async list(desktop: DesktopRef, o: { signal?: AbortSignal } = {}): Promise<m.Recording[]> {
    const r = await this.h.call<{ recordings: m.Recording[] }>("listRecordings", { params: { id: idOf(desktop) }, signal: o.signal });
    return r.recordings ?? [];
  }

  /** A recording. */
  get(desktop: DesktopRef, recording: RecordingRef): Promise<m.Recording> {
    return this.h.call("getRecording", { params: { id: idOf(desktop), rid: idOf(recording) } });
  }

  /** A finished recording's video (WebM) in memory (download a long one). 409 while it is still recording. */
  async video(desktop: DesktopRef, recording: RecordingRef, o: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    const r = await this.open(desktop, recording, o.signal);
    return new Uint8Array(await r.arrayBuffer());
  }

  /**
   * Streams a finished recording's video (WebM) to the file `path`; resolves to its size. It is written beside `path`
   * and renamed once complete, so a download that fails leaves nothing half-written. 409 while it is still recording.
   */
  async download(desktop: DesktopRef, recording: RecordingRef, path: string, o: { signal?: AbortSignal } = {}): Promise<number> {
    return this.save(await this.open(desktop, recording, o.signal), path, o.signal);
  }

  /** Marks a recording kept (it stays when the desktop is deleted, and the size budget never removes it), or not. */
  keep(desktop: DesktopRef, recording: RecordingRef, kept = true): Promise<m.Recording> {
    return this.h.call("keepRecording", { params: { id: idOf(desktop), rid: idOf(recording) }, json: { kept } });
  }

  /** Lets a recording go with its desktop again. */
  unkeep(desktop: DesktopRef, recording: RecordingRef): Promise<m.Recording> {
    return this.keep(desktop, recording, false);
  }

  /** Every recording of the caller's (an admin's: everyone's), oldest first: kept ones of deleted desktops included. */
  async listAll(o: { signal?: AbortSignal } = {}): Promise<m.Recording[]> {
    const r = await this.h.call<{ recordings: m.Recording[] }>("listOwnedRecordings", { signal: o.signal });
    return r.recordings ?? [];
  }

  /** A recording by its id alone (its desktop may be deleted). */
  getById(recording: RecordingRef): Promise<m.Recording> {
    return this.h.call("getOwnedRecording", { params: { rid: idOf(recording) } });
  }

  /** download, by the recording's id alone (its desktop may be deleted). */
  async downloadById(recording: RecordingRef, path: string, o: { signal?: AbortSignal } = {}): Promise<number> {
    const r = await this.h.open("getOwnedRecordingVideo", { params: { rid: idOf(recording) }, headers: { Accept: "video/webm" }, signal: o.signal });
    return this.save(r, path, o.signal);
  }

  /** Deletes a recording, kept or not, by its id alone (its desktop may be deleted). */
  async deleteById(recording: RecordingRef): Promise<void> {
    await this.h.call("deleteOwnedRecording", { params: { rid: idOf(recording) } });
  }

  private async save(r: Response, path: string, signal?: AbortSignal): Promise<number> {
    const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.part`);
    let n = 0;
    try {
      await pipeline(
        Readable.fromWeb(r.body as unknown as NodeReadableStream<Uint8Array>),
        async function* (chunks: AsyncIterable<Uint8Array>) {
          for await (const c of chunks) {
            n += c.length;
            yield c;
          }
        },
        createWriteStream(tmp, { flags: "wx", mode: 0o644 }),
        { signal },
      );
      const size = r.headers.get("Content-Length");
      if (size && /^\d+$/.test(size) && Number(size) !== n) throw new Error(`the video was cut off after ${n} of its ${size} bytes`);
      await rename(tmp, path);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return n;
  }

  /** Deletes a recording (stopping it first if under way) and its video. */
  async delete(desktop: DesktopRef, recording: RecordingRef): Promise<void> {
    await this.h.call("deleteRecording", { params: { id: idOf(desktop), rid: idOf(recording) } });
  }

  private open(desktop: DesktopRef, recording: RecordingRef, signal?: AbortSignal): Promise<Response> {
    return this.h.open("getRecordingVideo", { params: { id: idOf(desktop), rid: idOf(recording) }, headers: { Accept: "video/webm" }, signal });
  }
}
