"""A fake bureau for offline tests: an http.server in a thread that answers
from a table and records what it was sent."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeBureau:
    def __init__(self):
        self.routes = {}  # (method, path) -> fn(handler, body) -> (status, headers, body bytes)
        self.seen = []  # (method, path with query, headers, body)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _body(self):
                if self.headers.get("Transfer-Encoding") == "chunked":
                    out = b""
                    while True:
                        n = int(self.rfile.readline().strip(), 16)
                        if n == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(n)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _serve(self):
                body = self._body()
                fake.seen.append((self.command, self.path, dict(self.headers), body))
                route = fake.routes.get((self.command, self.path.split("?")[0]))
                if route is None:
                    status, headers, out = 404, {"Content-Type": "application/json"}, json.dumps(
                        {"error": {"code": "not_found", "message": "no route " + self.path}}).encode()
                else:
                    status, headers, out = route(self, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def json(self, method, path, status, obj, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.routes[(method, path)] = lambda _r, _b: (status, h, json.dumps(obj).encode())

    def close(self):
        self.server.shutdown()
        self.server.server_close()
