package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/guest"
	"github.com/coder/websocket"
)

// agentGuest is the guest service over an in-process agent: the
// "desktop" is this machine, its commands run as root.
func agentGuest(t testing.TB) *guest.Service {
	g := guest.New(nil).WithChannel(agenttest.Client(t))
	g.User = "root"
	return g
}

// agentDesktop is a running desktop of alice's whose "guest" is this
// machine.
func agentDesktop(t *testing.T, e *env) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the in-process agent runs commands through runuser as root")
	}
	return runningDesktop(t, e, e.alice)
}

func TestBackgroundProcessesThroughTheAPI(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	base := "/api/v1/desktops/" + id
	begun := time.Now()
	code, p := e.do(t, e.alice, "POST", base+"/exec", `{"cmd":"echo serving; exec sleep 60","background":true,"name":"web"}`)
	if code != 202 || p["running"] != true || p["name"] != "web" || time.Since(begun) > 5*time.Second {
		t.Fatalf("start: %d %v after %s", code, p, time.Since(begun))
	}
	pid := p["id"].(string)
	if code, st := e.do(t, e.alice, "GET", base+"/agent", ""); code != 200 || st["up"] != true || st["version"] != "test" || st["current"] != false {
		t.Errorf("agent status: %d %v", code, st)
	}
	for _, path := range []string{"/processes", "/processes/" + pid, "/processes/" + pid + "/log", "/ports/80/", "/pty"} {
		if code, _ := e.do(t, "", "GET", base+path, ""); code != 401 {
			t.Errorf("GET %s without a token: %d", path, code)
		}
	}
	for _, bad := range []string{`{"cmd":"x","background":true,"stdin":"y"}`, `{"cmd":"x","background":true,"timeout_s":5}`} {
		if code, body := e.do(t, e.alice, "POST", base+"/exec", bad); code != 422 {
			t.Errorf("%s: %d %v", bad, code, body)
		}
	}
	if code, body := e.do(t, e.alice, "POST", base+"/exec?stream=true", `{"cmd":"x","background":true}`); code != 422 || errField(body) != "stream" {
		t.Errorf("streamed background: %d %v", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	code, list := e.do(t, e.alice, "GET", base+"/processes", "")
	if ps, _ := list["processes"].([]any); code != 200 || len(ps) != 1 {
		t.Fatalf("list: %d %v", code, list)
	}
	// Someone else's desktop is not found.
	if code, _ := e.do(t, e.bob, "GET", base+"/processes", ""); code != 404 {
		t.Errorf("bob lists alice's processes: %d", code)
	}
	// The log, then a follow that ends when the process is killed.
	req, _ := http.NewRequest("GET", e.srv.URL+base+"/processes/"+pid+"/log?follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("follow: %v %v", resp, err)
	}
	defer resp.Body.Close()
	first := make([]byte, 8)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "serving\n" {
		t.Fatalf("followed log %q %v", first, err)
	}
	if code, body := e.do(t, e.alice, "DELETE", base+"/processes/"+pid+"?signal=NOPE", ""); code != 422 {
		t.Errorf("bad signal: %d %v", code, body)
	}
	if code, body := e.do(t, e.alice, "DELETE", base+"/processes/"+pid, ""); code != 202 {
		t.Fatalf("kill: %d %v", code, body)
	}
	// The follow ends with the process (after what the shells say of the
	// signal).
	if rest, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("follow after the end: %q %v", rest, err)
	}
	code, got := e.do(t, e.alice, "GET", base+"/processes/"+pid, "")
	if code != 200 || got["running"] != false || got["exit_code"] != float64(143) {
		t.Errorf("after kill: %d %v", code, got)
	}
	if code, _ := e.do(t, e.alice, "GET", base+"/processes/p-000000000000", ""); code != 404 {
		t.Errorf("unknown process: %d", code)
	}
}

func TestPortProxy(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen-Host", r.Host)
		w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(body)+" from "+r.Header.Get("X-Forwarded-Prefix"))
	}))
	defer app.Close()
	port := app.Listener.Addr().(*net.TCPAddr).Port
	url := e.srv.URL + "/api/v1/desktops/" + id + "/ports/" + itoa(port) + "/api/items?q=1"
	req, _ := http.NewRequest("POST", url, strings.NewReader("payload"))
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "POST /api/items?q=1 payload from /api/v1/desktops/" + id + "/ports/" + itoa(port)
	if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("X-Seen-Auth") != "" || !strings.HasPrefix(resp.Header.Get("X-Seen-Host"), "127.0.0.1:") {
		t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
	// Nothing listening: 502 with a message.
	app.Close()
	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(body), "nothing answers on port") || !strings.Contains(string(body), `"code":"bad_gateway"`) {
		t.Fatalf("closed port: %d %s", resp.StatusCode, body)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/ports/70000/", ""); code != 422 {
		t.Errorf("port 70000: %d", code)
	}
}

func TestTerminalWebSocket(t *testing.T) {
	e := newEnv(t)
	id := agentDesktop(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/v1/desktops/" + id + "/pty?rows=30&cols=90"
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.alice}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	resize, _ := json.Marshal(map[string]any{"type": "resize", "rows": 40, "cols": 120})
	ws.Write(ctx, websocket.MessageText, resize)
	time.Sleep(200 * time.Millisecond)
	ws.Write(ctx, websocket.MessageBinary, []byte("stty size; echo $((6*7)); exit 3\n"))
	var screen strings.Builder
	for {
		kind, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (screen %q)", err, screen.String())
		}
		if kind == websocket.MessageText {
			var m ptyMessage
			json.Unmarshal(b, &m)
			if m.Type != "exit" || m.Code == nil || *m.Code != 3 {
				t.Fatalf("end message %s", b)
			}
			break
		}
		screen.Write(b)
	}
	if !strings.Contains(screen.String(), "40 120") || !strings.Contains(screen.String(), "42") {
		t.Fatalf("screen %q", screen.String())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
