package atspi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

func names(nodes []wire.UINode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Role+":"+n.Name)
	}
	return out
}

func byName(t *testing.T, nodes []wire.UINode, name string) wire.UINode {
	t.Helper()
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q in %v", name, names(nodes))
	return wire.UINode{}
}

func TestTreeShowsWhatIsOnTheScreen(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"application:uiapp", "frame:bureau ui test", "filler:", "push button:Press me", "text:Your name",
		"check box:Remember me", "label:Hello label", "slider:Volume"}
	if got := names(res.Nodes); !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want %v (parents first, the hidden button and the daemon without a showing window left out)", got, want)
	}
	if res.Truncated || res.Screen != (wire.UISize{Width: 1280, Height: 800}) {
		t.Errorf("truncated %v, screen %+v", res.Truncated, res.Screen)
	}
	app, win, button := res.Nodes[0], res.Nodes[1], byName(t, res.Nodes, "Press me")
	if app.Depth != 0 || app.Parent != "" || app.App != "uiapp" || app.ID != encodeID(s.app) {
		t.Errorf("application node %+v", app)
	}
	if win.Parent != app.ID || win.Depth != 1 || !slices.Equal(app.Children, []string{win.ID}) || app.ChildCount != 1 {
		t.Errorf("window %+v under %+v", win, app)
	}
	if button.Depth != 3 || button.App != "uiapp" || !slices.Equal(button.Actions, []string{"click"}) ||
		*button.Bounds != (wire.UIRect{X: 40, Y: 30, Width: 320, Height: 30}) ||
		!slices.Equal(button.States, []string{"enabled", "focusable", "sensitive", "showing", "visible"}) {
		t.Errorf("button %+v", button)
	}
	if box := res.Nodes[2]; box.ChildCount != 6 || len(box.Children) != 6 || box.Children[5] != encodeID(s.hide) {
		t.Errorf("the filler lists its children, shown or not: %+v", box)
	}
	entry := byName(t, res.Nodes, "Your name")
	if entry.Text == nil || *entry.Text != "hello" {
		t.Errorf("entry text %v", entry.Text)
	}
	if label := byName(t, res.Nodes, "Hello label"); label.Text != nil {
		t.Errorf("a label's text is its name: %q", *label.Text)
	}
	if v := byName(t, res.Nodes, "Volume").Value; v == nil || *v != (wire.UIValue{Current: 3, Max: 10}) {
		t.Errorf("slider value %+v", v)
	}
}

func TestTreeHiddenWalksEverything(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{Hidden: true})
	if err != nil {
		t.Fatal(err)
	}
	got := names(res.Nodes)
	if !slices.Contains(got, "push button:Hidden button") || !slices.Contains(got, "window:status") || len(got) != 11 {
		t.Errorf("nodes %v", got)
	}
	if i, j := slices.Index(got, "slider:Volume"), slices.Index(got, "application:daemon"); i > j {
		t.Errorf("not in tree order: %v", got)
	}
}

func TestTreeLimitKeepsTheShallowestNodes(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Nodes); !res.Truncated || !slices.Equal(got, []string{"application:uiapp", "frame:bureau ui test", "filler:", "push button:Press me"}) {
		t.Errorf("truncated %v, nodes %v", res.Truncated, got)
	}
	// Exactly as many as there are is not truncated.
	res, _ = s.desktop().Tree(context.Background(), wire.UIQuery{Limit: 8})
	if res.Truncated || len(res.Nodes) != 8 {
		t.Errorf("limit 8 of 8: truncated %v, %d nodes", res.Truncated, len(res.Nodes))
	}
}

func TestTreeDepth(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Nodes); res.Truncated || !slices.Equal(got, []string{"application:uiapp", "frame:bureau ui test"}) {
		t.Errorf("truncated %v, nodes %v", res.Truncated, got)
	}
	if win := res.Nodes[1]; !slices.Equal(win.Children, []string{encodeID(s.box)}) {
		t.Errorf("a node at the depth limit still names its children: %+v", win)
	}
}

func TestTreeFiltersKeepAncestors(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{Role: "button"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Nodes); !slices.Equal(got, []string{"application:uiapp", "frame:bureau ui test", "filler:", "push button:Press me"}) {
		t.Errorf("role=button: %v", got)
	}
	res, _ = s.desktop().Tree(context.Background(), wire.UIQuery{Name: "REMEMBER", States: []string{"!checked"}})
	if got := names(res.Nodes); len(got) != 4 || got[3] != "check box:Remember me" {
		t.Errorf("name and states: %v", got)
	}
}

func TestWindowAndAppFilters(t *testing.T) {
	s := newSample()
	s.f.add(s.app, &fakeObj{role: "dialog", name: "Preferences", states: states(), ifaces: []string{ifComponent}})
	d := s.desktop()
	res, _ := d.Tree(context.Background(), wire.UIQuery{Window: "prefer"})
	if got := names(res.Nodes); !slices.Equal(got, []string{"application:uiapp", "dialog:Preferences"}) {
		t.Errorf("window=prefer: %v", got)
	}
	res, _ = d.Tree(context.Background(), wire.UIQuery{Window: "UIAPP", Depth: 1})
	if got := names(res.Nodes); !slices.Equal(got, []string{"application:uiapp", "frame:bureau ui test", "dialog:Preferences"}) {
		t.Errorf("window=<the app's name>: %v", got)
	}
	res, _ = d.Tree(context.Background(), wire.UIQuery{Window: "no such window"})
	if len(res.Nodes) != 0 {
		t.Errorf("no window matches: %v", names(res.Nodes))
	}
	res, _ = d.Tree(context.Background(), wire.UIQuery{App: "daemon", Hidden: true})
	if got := names(res.Nodes); !slices.Equal(got, []string{"application:daemon", "window:status"}) {
		t.Errorf("app=daemon: %v", got)
	}
}

func TestTreeFromRoot(t *testing.T) {
	s := newSample()
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{Root: encodeID(s.box), Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 6 {
		t.Fatalf("nodes %v", names(res.Nodes))
	}
	box := res.Nodes[0]
	if box.Depth != 2 || box.Parent != encodeID(s.win) || box.App != "uiapp" || res.Nodes[1].Depth != 3 {
		t.Errorf("root placed at depth %d under %s of %q", box.Depth, box.Parent, box.App)
	}
	_, err = s.desktop().Tree(context.Background(), wire.UIQuery{Root: encodeID(obj{":1.5", "/nope"})})
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != wire.CodeGone {
		t.Errorf("a root that is gone: %v", err)
	}
	_, err = s.desktop().Tree(context.Background(), wire.UIQuery{Root: "!!"})
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != wire.CodeNotFound {
		t.Errorf("a malformed root: %v", err)
	}
}

func TestFind(t *testing.T) {
	s := newSample()
	d := s.desktop()
	res, err := d.Find(context.Background(), wire.UIQuery{Role: "push_button", Name: "press"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Nodes); !slices.Equal(got, []string{"push button:Press me"}) {
		t.Errorf("find: %v", got)
	}
	res, _ = d.Find(context.Background(), wire.UIQuery{Role: "button,check box", Hidden: true})
	if got := names(res.Nodes); !slices.Equal(got, []string{"push button:Press me", "check box:Remember me", "push button:Hidden button"}) {
		t.Errorf("two roles, hidden too: %v", got)
	}
	res, _ = d.Find(context.Background(), wire.UIQuery{Name: "nothing like it"})
	if res.Nodes == nil || len(res.Nodes) != 0 || res.Truncated {
		t.Errorf("no match: %#v", res)
	}
	res, _ = d.Find(context.Background(), wire.UIQuery{States: []string{"focusable"}, Matches: 2})
	if len(res.Nodes) != 2 || !res.Truncated {
		t.Errorf("more matches than asked: %d, truncated %v", len(res.Nodes), res.Truncated)
	}
}

func TestASlowApplicationIsLeftOut(t *testing.T) {
	s := newSample()
	other := s.f.app(":1.9", "other")
	s.f.add(other, &fakeObj{role: "frame", name: "other window", states: states(), ifaces: []string{ifComponent}})
	s.f.slow[other.bus] = true
	d := s.desktop()
	d.callWithin = 50 * time.Millisecond
	begun := time.Now()
	res, err := d.Tree(context.Background(), wire.UIQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 8 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "did not answer") {
		t.Errorf("nodes %v, warnings %q", names(res.Nodes), res.Warnings)
	}
	if took := time.Since(begun); took > time.Second {
		t.Errorf("took %s", took)
	}
}

func TestTimeoutAnswersWhatItHas(t *testing.T) {
	s := newSample()
	s.f.slow[s.app.bus] = true
	d := s.desktop()
	res, err := d.Tree(context.Background(), wire.UIQuery{TimeoutMS: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated {
		t.Errorf("a walk cut by its timeout says truncated: %+v", res)
	}
}

func TestQueryChecks(t *testing.T) {
	for _, q := range []wire.UIQuery{{Depth: 31}, {Limit: 5001}, {Limit: -1}, {States: []string{"shiny"}},
		{Root: encodeID(obj{":1.5", rootPath}), Window: "x"}, {TimeoutMS: 60_000}} {
		_, err := parseQuery(q, false)
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != wire.CodeInvalid {
			t.Errorf("%+v: %v", q, err)
		}
	}
	q, err := parseQuery(wire.UIQuery{}, true)
	if err != nil || q.Depth != wire.UIMaxDepth || q.Limit != wire.UIMaxLimit || q.Matches != 100 {
		t.Errorf("find defaults: %+v %v", q, err)
	}
}

func TestRoleMatches(t *testing.T) {
	for _, c := range []struct {
		role, want string
		ok         bool
	}{{"push button", "button", true}, {"push button", "push_button", true}, {"toggle button", "BUTTON", true},
		{"push button", "push", false}, {"text", "text", true}, {"password text", "text", true}, {"label", "table", false}} {
		if got := roleMatches(c.role, normRole(c.want)); got != c.ok {
			t.Errorf("%q ~ %q: %v", c.role, c.want, got)
		}
	}
}

func TestManyChildrenWhatShowsIsFound(t *testing.T) {
	s := newSample()
	grid := s.f.add(s.box, &fakeObj{role: "panel", states: states(), ifaces: []string{ifComponent}})
	// GTK lists a grid's children last added first: the 250 hidden ones
	// come before the 5 that show.
	for i := range 255 {
		st := []string{"enabled"}
		if i >= 250 {
			st = states()
		}
		s.f.add(grid, &fakeObj{role: "push button", name: fmt.Sprintf("b%d", i), states: st, ifaces: []string{ifAction}, actions: []string{"click"}})
	}
	res, err := s.desktop().Tree(context.Background(), wire.UIQuery{})
	if err != nil {
		t.Fatal(err)
	}
	g := byName(t, res.Nodes, "b250")
	var panel wire.UINode
	for _, n := range res.Nodes {
		if n.ID == g.Parent {
			panel = n
		}
	}
	if panel.ChildCount != 255 || len(panel.Children) != 5 || panel.Children[0] != g.ID {
		t.Errorf("the grid lists %d of %d children: %v", len(panel.Children), panel.ChildCount, panel.Children)
	}
	res, _ = s.desktop().Tree(context.Background(), wire.UIQuery{Hidden: true})
	for _, n := range res.Nodes {
		if n.ChildCount == 255 && len(n.Children) != wire.UIMaxChildren {
			t.Errorf("walking everything, the grid lists %d children", len(n.Children))
		}
	}
}
