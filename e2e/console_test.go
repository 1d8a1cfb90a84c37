//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/coder/websocket"
)

type consoleGrant struct {
	ID       string `json:"id"`
	Token    string `json:"token"`
	URL      string `json:"url"`
	ViewOnly bool   `json:"view_only"`
}

func (s *server) openConsole(token string, d *apiv1.Desktop, viewOnly bool) consoleGrant {
	s.t.Helper()
	var g consoleGrant
	if code := s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/console", map[string]any{"view_only": viewOnly}, &g); code != 201 || g.Token == "" {
		s.t.Fatalf("open console: %d %+v", code, g)
	}
	return g
}

// browserResult is what e2e/browser/console.mjs prints.
type browserResult struct {
	State          string `json:"state"`
	NonBlank       bool   `json:"nonblank"`
	DistinctColors int    `json:"distinct_colors"`
	ViewOnlyBadge  bool   `json:"view_only_badge"`
	Typed          bool   `json:"typed"`
	ClipSeen       bool   `json:"clip_seen"`
	ClipSent       string `json:"clip_sent"`
	TerminalSeen   bool   `json:"terminal_seen"`
	TerminalTab    bool   `json:"terminal_tab"`
}

// browse opens a console URL in headless Chromium, types text into the
// desktop through the page and saves a screenshot of the page.
func (s *server) browse(g consoleGrant, typeText, shot string, clip ...string) browserResult {
	s.t.Helper()
	viewOnly := ""
	if g.ViewOnly {
		viewOnly = "1"
	}
	cmd := exec.Command("node", "console.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "CONSOLE_URL="+s.url+g.URL, "VIEW_ONLY="+viewOnly,
		"TYPE_TEXT="+typeText, "SCREENSHOT="+shot)
	if len(clip) == 2 {
		cmd.Env = append(cmd.Env, "CLIP_EXPECT="+clip[0], "CLIP_SEND="+clip[1])
	}
	if strings.HasPrefix(s.url, "https://") {
		cmd.Env = append(cmd.Env, "IGNORE_HTTPS_ERRORS=1") // a proxy's test CA
	}
	if !g.ViewOnly {
		// The Terminal tab: a shell in the desktop through bureau-agent.
		cmd.Env = append(cmd.Env, "TERMINAL_TEXT=echo $((6*7))bureau; whoami", "TERMINAL_EXPECT=42bureau")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("browser: %v\n%s", err, stderr.String())
	}
	var r browserResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		s.t.Fatalf("browser printed %q: %v", stdout.String(), err)
	}
	return r
}

// testConsole opens the console page of the running desktop in a real
// browser: the desktop is drawn, typing through the page reaches a terminal,
// a view-only session cannot type, and tokens are checked before any byte
// reaches the display.
func testConsole(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed for the browser check (make setup installs it)")
	}
	shots := filepath.Join(os.TempDir(), "bureau-e2e-console")
	os.MkdirAll(shots, 0o755)

	// The RFB handshake through the proxy reaches the real display.
	g := s.openConsole(token, d, false)
	w, h, name := rfbServerInit(t, s.url, d.ID, g.Token)
	if w < 640 || h < 480 || !strings.Contains(name, "bureau-"+d.ID) {
		t.Errorf("server init through the proxy: %dx%d %q", w, h, name)
	}

	// Typing through the browser reaches the terminal under the pointer.
	s.guest(d, "pkill -x xterm")
	s.catWindow(d, "110x34+240+160", "/tmp/console-typed")
	// The clipboard panel shows what was copied on the desktop and sends
	// text back to it.
	s.guest(d, "printf 'copied on the desktop ☃' | su agent -c 'DISPLAY=:0 xclip -selection clipboard -i >/dev/null 2>&1'")
	r := s.browse(g, "typed-through-novnc", filepath.Join(shots, "interactive.png"), "copied on the desktop ☃", "sent from the console page ✓")
	if r.State != "connected" || !r.NonBlank || r.DistinctColors < 50 || r.ViewOnlyBadge || !r.Typed {
		t.Errorf("interactive console: %+v", r)
	}
	if !r.TerminalSeen {
		t.Errorf("the console page's Terminal tab did not run a command (see %s)", filepath.Join(shots, "interactive-terminal.png"))
	}
	if !r.ClipSeen || !strings.HasPrefix(r.ClipSent, "text sent") {
		t.Errorf("console clipboard panel: saw the desktop's clipboard %t, send said %q", r.ClipSeen, r.ClipSent)
	}
	if out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 xclip -selection clipboard -o'"); out != "sent from the console page ✓" {
		t.Errorf("the desktop's clipboard after a send from the console page: %q", out)
	}
	// (guest output is trimmed: "/" keeps the line's end visible)
	var got string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !strings.HasSuffix(got, "\n/") && !strings.HasSuffix(got, "\r/") {
		got, _ = s.guest(d, "cat /tmp/console-typed; echo /")
		time.Sleep(500 * time.Millisecond)
	}
	if got != "typed-through-novnc\r/" && got != "typed-through-novnc\n/" {
		t.Errorf("typed through the console page (with Enter): %q", got)
	}

	// A view-only session sees the desktop but its keys never arrive.
	s.guest(d, "pkill -x xterm")
	s.catWindow(d, "110x34+240+160", "/tmp/console-viewonly")
	vo := s.openConsole(token, d, true)
	r = s.browse(vo, "must-not-arrive", filepath.Join(shots, "view-only.png"))
	if r.State != "connected" || !r.NonBlank || !r.ViewOnlyBadge || r.TerminalTab {
		t.Errorf("view-only console (no Terminal tab): %+v", r)
	}
	time.Sleep(2 * time.Second)
	if got, _ := s.guest(d, "cat /tmp/console-viewonly"); got != "" {
		t.Errorf("a view-only session typed %q", got)
	}
	s.guest(d, "pkill -x xterm")
	t.Logf("console screenshots in %s", shots)

	// Bad tokens are refused before the upgrade.
	for name, q := range map[string]string{"none": "", "wrong": "?token=bureau_wrong", "api token": "?token=" + token} {
		resp, err := http.Get(s.url + "/api/v1/desktops/" + d.ID + "/vnc" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("vnc with %s token: %d", name, resp.StatusCode)
		}
	}
	// Revocation: the list shrinks and the token stops working.
	if code := s.call(token, "DELETE", "/api/v1/desktops/"+d.ID+"/console/"+vo.ID, nil, nil); code != 204 {
		t.Errorf("revoke: %d", code)
	}
	var list struct {
		Sessions []consoleGrant `json:"sessions"`
	}
	s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/console", nil, &list)
	for _, l := range list.Sessions {
		if l.ID == vo.ID || l.Token != "" {
			t.Errorf("listed after revoke or with its secret: %+v", l)
		}
	}
	resp, err := http.Get(s.url + vo.URL)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("console page with a revoked token: %d", resp.StatusCode)
		}
	}
}

// rfbServerInit does the RFB handshake through the console proxy and returns
// the desktop's framebuffer size and name.
func rfbServerInit(t *testing.T, base, id, token string) (int, int, string) {
	t.Helper()
	return rfbServerInitWith(t, nil, base, id, token)
}

// rfbServerInitWith is rfbServerInit through client (nil: the default).
func rfbServerInitWith(t *testing.T, client *http.Client, base, id, token string) (int, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/desktops/"+id+"/vnc?token="+token,
		&websocket.DialOptions{Subprotocols: []string{"binary"}, HTTPClient: client})
	if err != nil {
		t.Fatalf("dial console: %v", err)
	}
	defer ws.Close(websocket.StatusNormalClosure, "")
	rd := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	read := func(n int) []byte {
		b := make([]byte, n)
		if _, err := io.ReadFull(rd, b); err != nil {
			t.Fatalf("RFB handshake: %v", err)
		}
		return b
	}
	if version := read(12); !strings.HasPrefix(string(version), "RFB 003.") {
		t.Fatalf("server version %q", version)
	}
	rd.Write([]byte("RFB 003.008\n"))
	types := read(int(read(1)[0]))
	if !bytes.Contains(types, []byte{1}) {
		t.Fatalf("security types %v", types)
	}
	rd.Write([]byte{1})
	if res := read(4); binary.BigEndian.Uint32(res) != 0 {
		t.Fatalf("security result %v", res)
	}
	rd.Write([]byte{1})
	init := read(24)
	name := read(int(binary.BigEndian.Uint32(init[20:24])))
	return int(binary.BigEndian.Uint16(init[0:2])), int(binary.BigEndian.Uint16(init[2:4])), string(name)
}
