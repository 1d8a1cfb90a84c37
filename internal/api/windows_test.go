package api

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/agenttest/fakewm"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/readiness"
)

// windowEnv is an env whose desktops' windows are wm's, reached through
// the guest service and an in-process bureau-agent; every request and
// response is checked against the spec.
func windowEnv(t *testing.T, wm *fakewm.WM) (*env, *guest.Service) {
	g := guest.New(nil).WithChannel(agenttest.ClientWithWindows(t, wm))
	g.User = "root"
	e := newEnvDeps(t, nil, func(d *Deps) { d.Windows = g })
	e.srv.Config.Handler.(*specChecker).requests = true
	return e, g
}

func TestWindowsThroughTheAPI(t *testing.T) {
	wm := fakewm.New()
	e, _ := windowEnv(t, wm)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	wid := wm.Open(wire.Window{Title: "notes.txt - Mousepad", Class: "Mousepad", Instance: "mousepad", PID: 4242,
		X: 100, Y: 130, Width: 640, Height: 480, Frame: wire.Extents{Left: 1, Right: 1, Top: 28, Bottom: 1}})
	wm.Open(wire.Window{Title: "off screen", X: 2000, Y: 0, Width: 100, Height: 100})
	wm.Open(wire.Window{Title: "minimized", X: 10, Y: 10, Width: 100, Height: 100, Minimized: true})
	wm.Open(wire.Window{Title: "elsewhere", X: 10, Y: 10, Width: 100, Height: 100, Workspace: 1})

	_, list := e.call(t, specCall{token: e.alice, method: "GET", path: base + "/windows", want: 200})
	wins, _ := list["windows"].([]any)
	if len(wins) != 4 || list["screen"].(map[string]any)["width"] != 1280.0 {
		t.Fatalf("%v", list)
	}
	first := wins[0].(map[string]any)
	if first["id"] != wid || first["app"] != "Mousepad" || first["instance"] != "mousepad" || first["pid"] != 4242.0 ||
		first["display_bounds"] != nil || first["frame"].(map[string]any)["top"] != 28.0 {
		t.Errorf("%v", first)
	}
	// In a display of half the screen's size.
	_, list = e.call(t, specCall{token: e.alice, method: "GET", path: base + "/windows?display=640x400", want: 200})
	wins = list["windows"].([]any)
	b, _ := wins[0].(map[string]any)["display_bounds"].(map[string]any)
	if b["x"] != 50.0 || b["y"] != 65.0 || b["width"] != 320.0 || b["height"] != 240.0 {
		t.Errorf("display bounds %v", b)
	}
	for _, w := range wins[1:] {
		if w.(map[string]any)["display_bounds"] != nil {
			t.Errorf("bounds of a window not on screen: %v", w)
		}
	}
	for _, q := range []string{"640", "0x400", "axb", "9000x10"} {
		e.call(t, specCall{token: e.alice, method: "GET", path: base + "/windows?display=" + q, want: 422})
	}

	// Actions answer the window as it is after them.
	_, w := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"focus"}`, want: 200})
	if w["focused"] != true {
		t.Errorf("focus: %v", w)
	}
	_, w = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"move","x":0,"y":28,"width":800,"height":600}`, want: 200})
	if w["x"] != 0.0 || w["y"] != 28.0 || w["width"] != 800.0 {
		t.Errorf("move: %v", w)
	}
	_, w = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"maximize"}`, want: 200})
	if w["maximized"] != true || w["width"] != 1278.0 {
		t.Errorf("maximize: %v", w)
	}
	for _, body := range []string{`{"action":"move","x":1}`, `{"action":"resize","width":0,"height":10}`, `{"action":"jump"}`,
		`{"action":"minimize","x":1,"y":2}`, `{}`} {
		if _, r := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: body, want: 422}); errCode(r) != "invalid" {
			t.Errorf("%s: %v", body, r)
		}
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"focus","z":1}`, want: 400})
	_, w = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"close"}`, want: 200})
	if len(w) != 1 || w["closed"] != true {
		t.Errorf("close: %v", w)
	}
	_, r := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + wid, body: `{"action":"focus"}`, want: 404})
	msg, _ := r["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "window "+wid+" is not open (its app closed it?)") {
		t.Errorf("stale window: %v", r)
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/nonsense", body: `{"action":"focus"}`, want: 404})

	// A window that stays open (its app asks to save) is no error.
	wm.Deaf = true
	other := wins[1].(map[string]any)["id"].(string)
	_, w = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/windows/" + other, body: `{"action":"close"}`, want: 200})
	if w["closed"] != false || w["window"].(map[string]any)["id"] != other {
		t.Errorf("a close that did not take: %v", w)
	}
	// Another owner's desktop is not found; the session down is 503.
	e.call(t, specCall{token: e.bob, method: "GET", path: base + "/windows", want: 404})
	wm.Down = os.ErrDeadlineExceeded
	e.call(t, specCall{token: e.alice, method: "GET", path: base + "/windows", want: 500})
}

func TestLaunchAppThroughTheAPI(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the in-process agent runs commands through runuser as root")
	}
	wm := fakewm.New()
	e, g := windowEnv(t, wm)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	time.AfterFunc(500*time.Millisecond, func() { wm.Open(wire.Window{Title: "Sleeper", PID: 1}) })
	_, res := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/apps", body: `{"command":"sleep 30","wait_s":30}`, want: 200})
	win, _ := res["window"].(map[string]any)
	proc, _ := res["process"].(map[string]any)
	if win["title"] != "Sleeper" || res["timed_out"] != false || proc["running"] != true {
		t.Fatalf("%v", res)
	}
	g.Signal(context.Background(), "d", proc["id"].(string), "KILL")

	_, res = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/apps", body: `{"argv":["sleep","5"],"wait_s":1}`, want: 200})
	if res["window"] != nil || res["timed_out"] != true || res["process"] == nil {
		t.Errorf("no window: %v", res)
	}
	_, r := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/apps", body: `{"desktop_file":"no-such-app"}`, want: 422})
	if msg, _ := r["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"no-such-app"`) {
		t.Errorf("unknown app: %v", r)
	}
	for _, body := range []string{`{}`, `{"command":"x","argv":["y"]}`, `{"command":"x","wait_s":500}`} {
		e.call(t, specCall{token: e.alice, method: "POST", path: base + "/apps", body: body, want: 422})
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/apps", body: `{"cmd":"x"}`, want: 400})
}

// TestWindowsWaitForTheSession: before the session is up the window
// routes answer 409 not_ready.
func TestWindowsWaitForTheSession(t *testing.T) {
	g := &guestStages{waiting: guest.WaitSession}
	tr := readiness.New(context.Background(), g, nil)
	wm := fakewm.New()
	e := newEnvDeps(t, nil, func(d *Deps) {
		d.Readiness = tr
		d.Windows = guest.New(nil).WithChannel(agenttest.ClientWithWindows(t, wm))
	})
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	for _, c := range []specCall{
		{method: "GET", path: base + "/windows"},
		{method: "POST", path: base + "/windows/0x1e00004", body: `{"action":"focus"}`},
		{method: "POST", path: base + "/apps", body: `{"desktop_file":"mousepad"}`},
	} {
		c.token, c.want = e.alice, 409
		if _, r := e.call(t, c); errCode(r) != "not_ready" {
			t.Errorf("%s %s: %v", c.method, c.path, r)
		}
	}
	if n := len(wm.Asked()); n != 0 {
		t.Errorf("the window manager was asked %d times", n)
	}
}

// TestWindowsWithoutTheirDependency: a bureau made without Windows
// answers 503.
func TestWindowsWithoutTheirDependency(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	e.call(t, specCall{token: e.alice, method: "GET", path: "/api/v1/desktops/" + id + "/windows", want: 503})
}
