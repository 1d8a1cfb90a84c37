package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/coder/websocket"
)

// fakeVNC is an in-process RFB 3.8 server with no authentication, like
// QEMU's on its unix socket. It records what each client sends after the
// handshake and answers every update request with a 4-byte "frame".
type fakeVNC struct {
	ln net.Listener
	mu sync.Mutex
	// got holds, per connection, the client messages received after the
	// handshake; shared holds each client's shared flag.
	got    []*bytes.Buffer
	shared []byte
	conns  []net.Conn
}

// hangUp closes every connection, as QEMU does when the VM stops.
func (f *fakeVNC) hangUp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func newFakeVNC(t *testing.T) *fakeVNC {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeVNC{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeVNC) dial() (net.Conn, error) { return net.Dial("tcp", f.ln.Addr().String()) }

func (f *fakeVNC) serve(c net.Conn) {
	defer c.Close()
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	buf := make([]byte, 12)
	c.Write([]byte("RFB 003.008\n"))
	if _, err := io.ReadFull(c, buf); err != nil {
		return
	}
	c.Write([]byte{1, 1}) // one security type: None
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return
	}
	c.Write([]byte{0, 0, 0, 0}) // SecurityResult OK
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return
	}
	rec := &bytes.Buffer{}
	f.mu.Lock()
	f.got = append(f.got, rec)
	f.shared = append(f.shared, buf[0])
	f.mu.Unlock()
	init := make([]byte, 24)
	binary.BigEndian.PutUint16(init[0:], 64)
	binary.BigEndian.PutUint16(init[2:], 48)
	binary.BigEndian.PutUint32(init[20:], 0)
	c.Write(init)
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		if n > 0 {
			f.mu.Lock()
			rec.Write(tmp[:n])
			f.mu.Unlock()
			if bytes.Contains(tmp[:n], []byte{3, 0}) {
				c.Write([]byte("FRAM"))
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *fakeVNC) received(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.got) {
		return nil
	}
	return bytes.Clone(f.got[i].Bytes())
}

// rfbClient opens the console WebSocket and does the RFB 3.8 handshake.
func rfbClient(t *testing.T, e *env, id, token string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/v1/desktops/" + id + "/vnc?token=" + token
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if ws.Subprotocol() != "binary" {
		t.Errorf("subprotocol %q", ws.Subprotocol())
	}
	expect := func(n int) []byte {
		var got []byte
		for len(got) < n {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("handshake read: %v", err)
			}
			got = append(got, b...)
		}
		return got
	}
	expect(12)
	ws.Write(ctx, websocket.MessageBinary, []byte("RFB 003.008\n"))
	expect(2)
	ws.Write(ctx, websocket.MessageBinary, []byte{1})
	expect(4)
	ws.Write(ctx, websocket.MessageBinary, []byte{0}) // asks for exclusive access
	expect(24)
	return ws
}

func (e *env) console(t *testing.T, token, id string, viewOnly bool) map[string]any {
	t.Helper()
	body := `{"view_only":false}`
	if viewOnly {
		body = `{"view_only":true,"ttl_seconds":60}`
	}
	code, c := e.do(t, token, "POST", "/api/v1/desktops/"+id+"/console", body)
	if code != 201 {
		t.Fatalf("create console: %d %v", code, c)
	}
	return c
}

func runningDesktop(t *testing.T, e *env, owner string) string {
	t.Helper()
	code, d := e.do(t, owner, "POST", "/api/v1/desktops", `{"name":"c"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, d)
	}
	id := d["id"].(string)
	e.desktops.setState(id, desktop.StateRunning)
	return id
}

var (
	keyA   = []byte{4, 1, 0, 0, 0, 0, 0, 'a'}
	update = []byte{3, 0, 0, 0, 0, 0, 0, 64, 0, 48}
)

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 200 {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestConsoleProxiesInputAndEnforcesViewOnly(t *testing.T) {
	e := newEnv(t)
	vnc := newFakeVNC(t)
	e.desktops.vnc = vnc.dial
	id := runningDesktop(t, e, e.alice)
	full := e.console(t, e.alice, id, false)
	view := e.console(t, e.alice, id, true)
	if u := full["url"].(string); !strings.HasPrefix(u, "/console/"+id+"?token=") || full["token"] == "" {
		t.Errorf("url %q", u)
	}
	if view["view_only"] != true {
		t.Errorf("view-only flag lost: %v", view)
	}
	ctx := context.Background()

	a := rfbClient(t, e, id, full["token"].(string))
	b := rfbClient(t, e, id, view["token"].(string)) // several viewers at once
	a.Write(ctx, websocket.MessageBinary, append(bytes.Clone(update), keyA...))
	b.Write(ctx, websocket.MessageBinary, append(bytes.Clone(update), keyA...))
	for _, ws := range []*websocket.Conn{a, b} {
		if _, frame, err := ws.Read(ctx); err != nil || string(frame) != "FRAM" {
			t.Errorf("update: %q %v", frame, err)
		}
	}
	waitFor(t, "both viewers' messages", func() bool { return len(vnc.received(0)) >= 18 && len(vnc.received(1)) >= 10 })
	if got := vnc.received(0); !bytes.Equal(got, append(bytes.Clone(update), keyA...)) {
		t.Errorf("interactive viewer's messages arrived as %x", got)
	}
	time.Sleep(50 * time.Millisecond)
	if got := vnc.received(1); !bytes.Equal(got, update) {
		t.Errorf("view-only viewer's key reached the desktop: %x", got)
	}
	for dir, min := range map[string]int64{"to_desktop": 2*10 + 8, "to_browser": 2 * (12 + 2 + 4 + 24 + 4)} {
		if v, ok := e.consoleBytes.Load(dir); !ok || v.(*atomic.Int64).Load() < min {
			t.Errorf("console bytes %s not counted (want ≥ %d)", dir, min)
		}
	}
	if vnc.shared[0] != 1 || vnc.shared[1] != 1 {
		t.Errorf("exclusive access passed through: %v", vnc.shared)
	}

	// Garbage from one viewer disconnects it and nobody else.
	a.Write(ctx, websocket.MessageBinary, []byte{0x42, 0x42})
	if _, _, err := a.Read(ctx); websocket.CloseStatus(err) != websocket.StatusProtocolError {
		t.Errorf("garbage: %v", err)
	}
	b.Write(ctx, websocket.MessageBinary, update)
	if _, frame, err := b.Read(ctx); err != nil || string(frame) != "FRAM" {
		t.Errorf("other viewer after garbage: %q %v", frame, err)
	}

	// Revoking the token ends its session with a clear code.
	code, _ := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id+"/console/"+view["id"].(string), "")
	if code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	if _, _, err := b.Read(ctx); websocket.CloseStatus(err) != console.CodeRevoked {
		t.Errorf("after revoke: %v", err)
	}
}

func TestConsoleRefusesBeforeReachingTheDisplay(t *testing.T) {
	e := newEnv(t)
	dials := 0
	var mu sync.Mutex
	vnc := newFakeVNC(t)
	e.desktops.vnc = func() (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return vnc.dial()
	}
	mine := runningDesktop(t, e, e.alice)
	other := runningDesktop(t, e, e.alice)
	tok := e.console(t, e.alice, mine, false)
	secret := tok["token"].(string)

	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		// A WebSocket handshake, as a browser's: refusals come after it.
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, path := range map[string]string{
		"no token":          "/api/v1/desktops/" + mine + "/vnc",
		"wrong token":       "/api/v1/desktops/" + mine + "/vnc?token=bureau_wrong",
		"other desktop":     "/api/v1/desktops/" + other + "/vnc?token=" + secret,
		"api token":         "/api/v1/desktops/" + mine + "/vnc?token=" + e.alice,
		"page, wrong token": "/console/" + mine + "?token=bureau_wrong",
	} {
		if code, body := get(path); code != 401 || !strings.Contains(body, "console token") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if code, body := e.do(t, e.bob, "POST", "/api/v1/desktops/"+mine+"/console", `{}`); code != 404 {
		t.Errorf("bob opens alice's console: %d %v", code, body)
	}
	for _, bad := range []string{`{"ttl_seconds":7200}`, `{"ttl_seconds":-1}`, `{"view":true}`} {
		if code, _ := e.do(t, e.alice, "POST", "/api/v1/desktops/"+mine+"/console", bad); code != 422 && code != 400 {
			t.Errorf("%s: %d", bad, code)
		}
	}

	e.desktops.setState(mine, desktop.StateStopped)
	code, body := get("/api/v1/desktops/" + mine + "/vnc?token=" + secret)
	if code != 409 || !strings.Contains(body, "stopped") {
		t.Errorf("stopped desktop: %d %s", code, body)
	}
	if dials != 0 {
		t.Errorf("%d connections reached the display", dials)
	}

	// The page and the session endpoint open with the token.
	e.desktops.setState(mine, desktop.StateHibernated)
	if code, body := get("/console/" + mine + "?token=" + secret); code != 200 || !strings.Contains(body, "<") {
		t.Errorf("console page: %d", code)
	}
	code, sess := e.do(t, "", "GET", "/api/v1/desktops/"+mine+"/console/session?token="+secret, "")
	if code != 200 || sess["state"] != "hibernated" || sess["view_only"] != false {
		t.Errorf("session: %d %v", code, sess)
	}
	// Wake on connect: a hibernated desktop is resumed, then piped.
	ws := rfbClient(t, e, mine, secret)
	ws.Close(websocket.StatusNormalClosure, "")
	if d, _ := e.desktops.Get(context.Background(), mine); d.State != desktop.StateRunning {
		t.Errorf("desktop %s after connecting", d.State)
	}
	code, list := e.do(t, e.alice, "GET", "/api/v1/desktops/"+mine+"/console", "")
	if s, _ := list["sessions"].([]any); code != 200 || len(s) != 1 || strings.Contains(mustJSON(list), secret) {
		t.Errorf("list: %d %v", code, list)
	}
}

func TestConsoleSessionEndsWhenTheDisplayCloses(t *testing.T) {
	e := newEnv(t)
	vnc := newFakeVNC(t)
	e.desktops.vnc = vnc.dial
	id := runningDesktop(t, e, e.alice)
	ws := rfbClient(t, e, id, e.console(t, e.alice, id, false)["token"].(string))
	vnc.hangUp()
	_, _, err := ws.Read(context.Background())
	if websocket.CloseStatus(err) != console.CodeDesktopGone {
		t.Errorf("display closed: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWebSocketRoutesRefusePlainRequests: a request that is not a
// WebSocket upgrade gets 426 before anything happens: a hibernated
// desktop stays asleep, and neither its display nor a shell is reached.
func TestWebSocketRoutesRefusePlainRequests(t *testing.T) {
	e := newEnv(t)
	dialed := false
	e.desktops.vnc = func() (net.Conn, error) { dialed = true; return nil, errors.New("not reached") }
	id := runningDesktop(t, e, e.alice)
	con := e.console(t, e.alice, id, false)["token"].(string)
	e.desktops.setState(id, desktop.StateHibernated)
	for _, c := range []struct{ path, token string }{
		{"/api/v1/desktops/" + id + "/vnc?token=" + con, ""},
		{"/api/v1/desktops/" + id + "/console/pty?token=" + con, ""},
		{"/api/v1/desktops/" + id + "/pty", e.alice},
	} {
		req, _ := http.NewRequest("GET", e.srv.URL+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" {
			t.Errorf("GET %s without an upgrade: %d %v", c.path, resp.StatusCode, resp.Header)
		}
	}
	if _, d := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id, ""); d["state"] != "hibernated" || dialed {
		t.Errorf("after plain requests the desktop is %v (display dialed: %v)", d["state"], dialed)
	}
	// Without a token it is still 401 first.
	if resp, err := http.Get(e.srv.URL + "/api/v1/desktops/" + id + "/vnc"); err != nil || resp.StatusCode != 401 {
		t.Errorf("vnc without a token: %v %v", resp.StatusCode, err)
	}
}

// TestConsoleLinkAndPageRestoreAheadOfUse: making a console link and
// opening its page each ask for the desktop to be restored ahead of use,
// naming why; a caller who may not see the desktop causes nothing.
func TestConsoleLinkAndPageRestoreAheadOfUse(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	c := e.console(t, e.alice, id, false)
	if code, _ := e.do(t, "", "GET", "/api/v1/desktops/"+id+"/console/session?token="+c["token"].(string), ""); code != 200 {
		t.Fatalf("console session: %d", code)
	}
	e.do(t, e.bob, "POST", "/api/v1/desktops/"+id+"/console", `{}`)
	e.desktops.mu.Lock()
	defer e.desktops.mu.Unlock()
	want := []string{id + ": console link made", id + ": console page opened"}
	if !slices.Equal(e.desktops.prewoken, want) {
		t.Errorf("restores ahead of use %q, want %q", e.desktops.prewoken, want)
	}
}
