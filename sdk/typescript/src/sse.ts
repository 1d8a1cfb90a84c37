/** One server-sent event: its name (`message` when absent) and data. */
export interface ServerEvent {
  event: string;
  data: string;
  id?: string;
}

/** Parses the data of an event as JSON. */
export function eventJSON<T = unknown>(e: ServerEvent): T {
  return JSON.parse(e.data) as T;
}

/** Yields each event of an SSE byte stream as it comes; comments (keepalives) are skipped. */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = "";
  let event: string | undefined;
  let data: string[] = [];
  let id: string | undefined;
  const line = function* (l: string): Generator<ServerEvent> {
    if (l === "") {
      if (data.length || event) yield { event: event ?? "message", data: data.join("\n"), id };
      event = undefined;
      data = [];
      id = undefined;
      return;
    }
    if (l.startsWith(":")) return;
    const i = l.indexOf(":");
    const name = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? "" : l.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event = value;
    else if (name === "data") data.push(value);
    else if (name === "id") id = value;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const l = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        yield* line(l);
      }
    }
    if (buf) yield* line(buf.replace(/\r$/, ""));
    yield* line("");
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Yields each line of an NDJSON body (a response's), parsed, as it comes; blank lines are skipped. */
export async function* parseNDJSON<T = Record<string, unknown>>(body: Response["body"]): AsyncGenerator<T> {
  if (!body) return;
  const text = body.pipeThrough(new TextDecoderStream());
  let buf = "";
  for await (const chunk of text as unknown as AsyncIterable<string>) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const l = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (l) yield JSON.parse(l) as T;
    }
  }
  if (buf.trim()) yield JSON.parse(buf) as T;
}
