//go:build e2e

package e2e

// liveApp is the small web app the live-URL check writes into a desktop
// (Python's standard library only): / is a page whose script echoes a
// message over a WebSocket at ./ws; /echo-headers shows what the app was
// sent; POST counts the bytes it received. It serves a digest of its
// secret, never the secret.
const liveApp = `import base64, hashlib, http.server, os, struct
digest = hashlib.sha256(os.environ["APP_KEY"].encode()).hexdigest()[:16]
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>live app</title></head>
<body><h1>live app DIGEST</h1><p id="ws">connecting</p><script>
const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + location.pathname.replace(/[^/]*$/, '') + 'ws');
ws.onopen = () => ws.send('ping-from-browser');
ws.onmessage = (e) => { document.getElementById('ws').textContent = 'echo: ' + e.data; };
ws.onerror = () => { document.getElementById('ws').textContent = 'websocket error'; };
</script></body></html>""".replace("DIGEST", digest)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, body, ctype="text/plain"):
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/ws":
            return self.websocket()
        if self.path == "/echo-headers":
            h = self.headers
            return self.answer("host=%s proto=%s fwd-host=%s prefix=%s auth=%s cookie=%s\n" % (h.get("Host"), h.get("X-Forwarded-Proto"),
                h.get("X-Forwarded-Host"), h.get("X-Forwarded-Prefix"), h.get("Authorization"), h.get("Cookie")))
        self.answer(PAGE, "text/html; charset=utf-8")
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        got = 0
        while got < n:
            got += len(self.rfile.read(min(1 << 20, n - got)))
        self.answer("received %d bytes\n" % got)
    def websocket(self):
        accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 15, h[1] & 127
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if h[1] & 128 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.wfile.write(b"\x88\x00"); self.wfile.flush()
                return
            if op in (1, 2, 9):
                op = 10 if op == 9 else op
                size = bytes([len(data)]) if len(data) < 126 else b"\x7e" + struct.pack(">H", len(data))
                self.wfile.write(bytes([128 | op]) + size + data); self.wfile.flush()

http.server.ThreadingHTTPServer(("127.0.0.1", 8125), H).serve_forever()
`
