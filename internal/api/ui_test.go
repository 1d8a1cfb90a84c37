package api

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/atspi"
	"github.com/bureau/bureau/internal/agent/atspi/atspitest"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// fakeUI is a desktop whose tree is an application with a window and a
// button; it records what it is asked.
type fakeUI struct {
	mu      sync.Mutex
	queries []guest.UIQuery
	actions []guest.UIAction
}

func uiSample() []guest.UINode {
	text := "hi"
	return []guest.UINode{
		{ID: "app", Role: "application", Name: "Mousepad", States: []string{}, Actions: []string{}, Children: []string{"win"}, ChildCount: 1, App: "Mousepad"},
		{ID: "win", Role: "frame", Name: "notes.txt - Mousepad", States: []string{"showing"}, Actions: []string{}, Parent: "app",
			Children: []string{"ok", "entry"}, ChildCount: 2, App: "Mousepad", Depth: 1, Bounds: &wire.UIRect{X: 100, Y: 100, Width: 640, Height: 480}},
		{ID: "ok", Role: "push button", Name: "OK", States: []string{"enabled", "showing"}, Actions: []string{"click"}, Parent: "win",
			Children: []string{}, App: "Mousepad", Depth: 2, Bounds: &wire.UIRect{X: 640, Y: 500, Width: 80, Height: 30}},
		{ID: "entry", Role: "text", Name: "Name", States: []string{"editable", "showing"}, Actions: []string{"activate"}, Parent: "win",
			Children: []string{}, App: "Mousepad", Depth: 2, Text: &text, Value: &wire.UIValue{Current: 1, Max: 2}},
	}
}

var screen = wire.UISize{Width: 1280, Height: 800}

func (f *fakeUI) UITree(_ context.Context, _ string, q guest.UIQuery) (*guest.UIResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if q.Root == "gone" {
		return nil, fmt.Errorf("node gone is gone: %w", desktop.ErrGone)
	}
	return &guest.UIResult{Nodes: uiSample(), Screen: screen, Truncated: q.Limit == 1, Warnings: []string{"x did not answer"}}, nil
}

func (f *fakeUI) UIFind(_ context.Context, _ string, q guest.UIQuery) (*guest.UIResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	var out []guest.UINode
	for _, n := range uiSample() {
		if q.Name != "" && strings.Contains(strings.ToLower(n.Name), strings.ToLower(q.Name)) {
			out = append(out, n)
		}
	}
	return &guest.UIResult{Nodes: out, Screen: screen}, nil
}

func (f *fakeUI) UIAct(_ context.Context, _ string, a guest.UIAction) (*guest.UIResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
	switch a.Node {
	case "gone":
		return nil, fmt.Errorf("node gone is gone: its application left the desktop: %w", desktop.ErrGone)
	case "bad":
		return nil, fmt.Errorf(`"bad" is not a node id: %w`, desktop.ErrNotFound)
	case "unavailable":
		return nil, fmt.Errorf("the session has no accessibility bus: %w", desktop.ErrUnavailable)
	}
	if a.Action == "expand" {
		return nil, &desktop.ValidationError{Field: "action", Message: `this push button has no action "expand" (its actions: click)`}
	}
	n := uiSample()[2]
	n.States = append(n.States, "focused")
	return &guest.UIResult{Node: &n, Changed: true, Performed: "click", Screen: screen}, nil
}

func uiEnv(t *testing.T, ui UI) *env {
	e := newEnvDeps(t, nil, func(d *Deps) { d.UI = ui })
	e.srv.Config.Handler.(*specChecker).requests = true
	return e
}

func TestUITreeThroughTheAPI(t *testing.T) {
	f := &fakeUI{}
	e := uiEnv(t, f)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/ui"
	_, res := e.call(t, specCall{token: e.alice, method: "GET", path: base, want: 200})
	nodes, _ := res["nodes"].([]any)
	if len(nodes) != 4 || res["truncated"] != false || res["screen"].(map[string]any)["width"] != 1280.0 || res["display"] != nil {
		t.Fatalf("%v", res)
	}
	if ok := nodes[2].(map[string]any); ok["display_bounds"] != nil || ok["bounds"].(map[string]any)["x"] != 640.0 {
		t.Errorf("no display asked: %v", ok)
	}
	if q := f.queries[0]; q.Hidden || q.Depth != 0 || q.Limit != 0 {
		t.Errorf("defaults: %+v", q)
	}
	// Filters, bounds, and a display of half the screen.
	v := url.Values{"window": {"notes"}, "app": {"mouse"}, "role": {"push button"}, "name": {"OK"}, "states": {"enabled, !checked"},
		"visible_only": {"false"}, "depth": {"3"}, "limit": {"1"}, "display": {"640x400"}, "timeout_ms": {"2000"}}
	_, res = e.call(t, specCall{token: e.alice, method: "GET", path: base + "?" + v.Encode(), want: 200})
	want := guest.UIQuery{Window: "notes", App: "mouse", Role: "push button", Name: "OK", States: []string{"enabled", "!checked"},
		Hidden: true, Depth: 3, Limit: 1, TimeoutMS: 2000}
	if q := f.queries[1]; !uiQueryEqual(q, want) {
		t.Errorf("query %+v, want %+v", q, want)
	}
	if res["truncated"] != true || res["display"].(map[string]any)["width"] != 640.0 {
		t.Errorf("%v", res)
	}
	nodes = res["nodes"].([]any)
	b := nodes[2].(map[string]any)["display_bounds"].(map[string]any)
	if b["x"] != 320.0 || b["y"] != 250.0 || b["width"] != 40.0 || b["height"] != 15.0 {
		t.Errorf("display bounds %v", b)
	}
	if nodes[3].(map[string]any)["display_bounds"] != nil {
		t.Error("display bounds of a node without bounds")
	}
	for _, q := range []string{"depth=0", "depth=31", "limit=5001", "visible_only=maybe", "display=12", "timeout_ms=0", "timeout_ms=30001"} {
		e.call(t, specCall{token: e.alice, method: "GET", path: base + "?" + q, want: 422})
	}
	if _, r := e.call(t, specCall{token: e.alice, method: "GET", path: base + "?root=gone", want: 410}); errCode(r) != "gone" {
		t.Errorf("gone root: %v", r)
	}
	e.call(t, specCall{token: e.bob, method: "GET", path: base, want: 404})
}

func uiQueryEqual(a, b guest.UIQuery) bool { return reflect.DeepEqual(a, b) }

func TestUIFindThroughTheAPI(t *testing.T) {
	f := &fakeUI{}
	e := uiEnv(t, f)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/ui/find"
	_, res := e.call(t, specCall{token: e.alice, method: "GET", path: base + "?name=ok&role=button&limit=7", want: 200})
	if nodes, _ := res["nodes"].([]any); len(nodes) != 1 || nodes[0].(map[string]any)["id"] != "ok" {
		t.Errorf("%v", res)
	}
	if q := f.queries[0]; q.Matches != 7 || q.Limit != 0 || q.Role != "button" {
		t.Errorf("find's limit is of matches: %+v", q)
	}
	// Nothing found is an empty list.
	_, res = e.call(t, specCall{token: e.alice, method: "GET", path: base + "?name=nothing", want: 200})
	if nodes, ok := res["nodes"].([]any); !ok || len(nodes) != 0 {
		t.Errorf("no match: %v", res)
	}
}

func TestUIActThroughTheAPI(t *testing.T) {
	f := &fakeUI{}
	e := uiEnv(t, f)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/ui/"
	_, res := e.call(t, specCall{token: e.alice, method: "POST", path: base + "ok?display=640x400", body: `{"action":"click"}`, want: 200})
	node, _ := res["node"].(map[string]any)
	if res["changed"] != true || res["gone"] != false || res["performed"] != "click" || node["id"] != "ok" || node["display_bounds"] == nil {
		t.Errorf("%v", res)
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "entry", body: `{"action":"set_value","value":"Ada","timeout_ms":500}`, want: 200})
	if a := f.actions[1]; a.Node != "entry" || a.Action != "set_value" || a.Value != "Ada" || a.TimeoutMS != 500 {
		t.Errorf("action %+v", a)
	}
	for node, want := range map[string]int{"gone": 410, "bad": 404, "unavailable": 503} {
		if _, r := e.call(t, specCall{token: e.alice, method: "POST", path: base + node, body: `{"action":"click"}`, want: want}); want == 410 && errCode(r) != "gone" {
			t.Errorf("%s: %v", node, r)
		}
	}
	_, r := e.call(t, specCall{token: e.alice, method: "POST", path: base + "ok", body: `{"action":"expand"}`, want: 422})
	if msg, _ := r["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "its actions: click") {
		t.Errorf("%v", r)
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "ok", body: `{"action":"click","x":1}`, want: 400})
	e.call(t, specCall{token: e.bob, method: "POST", path: base + "ok", body: `{"action":"click"}`, want: 404})
}

func TestUIWithoutItsDependency(t *testing.T) {
	e := newEnvDeps(t, nil, func(d *Deps) { d.UI = nil })
	id := runningDesktop(t, e, e.alice)
	e.call(t, specCall{token: e.alice, method: "GET", path: "/api/v1/desktops/" + id + "/ui", want: 503})
}

// TestUIHelperProcessForAPI is not a test: it is the helper
// TestUIOnARealDesktop's agent runs, this binary standing in for
// bureau-agent ui-helper.
func TestUIHelperProcessForAPI(t *testing.T) {
	if !slices.Contains(os.Args, atspi.HelperArg) {
		t.Skip("the ui test's helper process")
	}
	os.Exit(atspi.HelperMain())
}

// TestUIOnARealDesktop goes through every layer to a real GTK window:
// the API, the guest service, bureau-agent's client and server, the
// helper it runs, and AT-SPI2 over D-Bus; the spec checks each answer.
func TestUIOnARealDesktop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb, D-Bus and a GTK window")
	}
	s := atspitest.Start(t)
	srv := &server.Server{Info: wire.Info{SHA256: "x", Version: "test"}, StateDir: t.TempDir(), RunDir: t.TempDir(),
		UI: server.UIHelper{Argv: []string{os.Args[0], "-test.run=^TestUIHelperProcessForAPI$", "--", atspi.HelperArg}, SessionBus: s.Bus}}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	g := guest.New(nil).WithChannel(agenttest.ClientOf(t, agenttest.Dialer{Server: srv}))
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	g.User = me.Username
	e := uiEnv(t, g)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/ui"
	_, res := e.call(t, specCall{token: e.alice, method: "GET", path: base + "?display=512x384&window=" + url.QueryEscape(atspitest.WindowTitle), want: 200})
	var button map[string]any
	for _, n := range res["nodes"].([]any) {
		if n := n.(map[string]any); n["name"] == "Press me" {
			button = n
		}
	}
	if button == nil || button["display_bounds"] == nil {
		t.Fatalf("no button with display bounds in %v", res)
	}
	_, res = e.call(t, specCall{token: e.alice, method: "GET", path: base + "/find?role=text&name=your", want: 200})
	entry := res["nodes"].([]any)[0].(map[string]any)
	_, res = e.call(t, specCall{token: e.alice, method: "POST", path: base + "/" + entry["id"].(string), body: `{"action":"set_value","value":"typed by bureau"}`, want: 200})
	if res["changed"] != true || res["node"].(map[string]any)["text"] != "typed by bureau" {
		t.Errorf("set_value: %v", res)
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/" + button["id"].(string), body: `{"action":"click"}`, want: 200})
	if _, err := s.WaitLine("clicked", 5*time.Second); err != nil {
		t.Error(err)
	}
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/" + button["id"].(string), body: `{"action":"toggle"}`, want: 422})
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/not-an-id", body: `{"action":"click"}`, want: 404})
	s.StopApp()
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/" + button["id"].(string), body: `{"action":"click"}`, want: 410})
}
