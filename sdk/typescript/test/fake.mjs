// A fake bureau for the offline tests: a server on loopback that answers
// each "METHOD /path" from routes (a function returning [status, body],
// the body sent as JSON) and keeps what it was sent in seen. Call it at a
// test file's top level or in a describe: it starts before and stops
// after the tests there.
import http from "node:http";
import { after, before } from "node:test";

export function jsonServer() {
  const s = { url: "", routes: new Map(), seen: [] };
  let server;
  before(async () => {
    server = http.createServer((req, res) => {
      const body = [];
      req.on("data", (c) => body.push(c));
      req.on("end", () => {
        s.seen.push({ method: req.method, url: req.url, body: Buffer.concat(body).toString() });
        const route = s.routes.get(`${req.method} ${new URL(req.url, "http://x").pathname}`);
        const [status, out] = route ? route() : [404, { error: { code: "not_found", message: "no route" } }];
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(out === undefined ? "" : JSON.stringify(out));
      });
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    s.url = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());
  /** Answers METHOD path with status and obj (as JSON; undefined: no body). */
  s.json = (method, path, status, obj) => s.routes.set(`${method} ${path}`, () => [status, obj]);
  return s;
}
