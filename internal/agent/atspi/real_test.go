package atspi

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/atspi/atspitest"
	"github.com/bureau/bureau/internal/agent/wire"
)

// TestRealDesktop reads and drives a real GTK3 window over a real
// accessibility bus (Xvfb, dbus-run-session, at-spi2-core).
func TestRealDesktop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb, D-Bus and a GTK window")
	}
	s := atspitest.Start(t)
	ctx := context.Background()
	c, err := Dial(ctx, s.Bus)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := New(c)

	begun := time.Now()
	tree, err := d.Tree(ctx, wire.UIQuery{Window: atspitest.WindowTitle})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tree in %s: %d nodes, screen %+v, warnings %q", time.Since(begun).Round(time.Millisecond), len(tree.Nodes), tree.Screen, tree.Warnings)
	for _, n := range tree.Nodes {
		t.Logf("%s%s %q states=%v actions=%v bounds=%+v text=%v", strings.Repeat("  ", n.Depth), n.Role, n.Name, n.States, n.Actions, n.Bounds, deref(n.Text))
	}
	if tree.Screen != (wire.UISize{Width: atspitest.ScreenWidth, Height: atspitest.ScreenHeight}) {
		t.Errorf("screen %+v", tree.Screen)
	}
	button := wantNode(t, tree.Nodes, "push button", "Press me")
	entry := wantNode(t, tree.Nodes, "text", "Your name")
	check := wantNode(t, tree.Nodes, "check box", "Remember me")
	wantNode(t, tree.Nodes, "label", "Hello label")
	wantNode(t, tree.Nodes, "frame", atspitest.WindowTitle)
	if slices.ContainsFunc(tree.Nodes, func(n wire.UINode) bool { return n.Name == "Hidden button" }) {
		t.Error("the hidden button is in a tree of what shows")
	}
	for _, n := range []wire.UINode{button, entry, check} {
		if b := n.Bounds; b == nil || b.Width <= 0 || b.Height <= 0 || b.X < 0 || b.Y < 0 ||
			b.X+b.Width > atspitest.ScreenWidth || b.Y+b.Height > atspitest.ScreenHeight {
			t.Errorf("%s %q has bounds %+v", n.Role, n.Name, b)
		}
		if !slices.Contains(n.States, "showing") || !slices.Contains(n.States, "enabled") {
			t.Errorf("%s states %v", n.Name, n.States)
		}
	}
	if !slices.Contains(button.Actions, "click") {
		t.Errorf("button actions %v", button.Actions)
	}

	found, err := d.Find(ctx, wire.UIQuery{Role: "button", Name: "press"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Nodes) != 1 || found.Nodes[0].ID != button.ID {
		t.Fatalf("find: %+v", found.Nodes)
	}
	if hidden, _ := d.Find(ctx, wire.UIQuery{Name: "hidden button", Hidden: true}); len(hidden.Nodes) != 1 {
		t.Errorf("find with hidden: %+v", hidden.Nodes)
	}
	if none, err := d.Find(ctx, wire.UIQuery{Name: "no such thing"}); err != nil || len(none.Nodes) != 0 {
		t.Errorf("find nothing: %+v %v", none, err)
	}

	res, err := d.Act(ctx, wire.UIAction{Node: button.ID, Action: "click"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitLine("clicked", 5*time.Second); err != nil {
		t.Fatalf("the app saw no click (%+v): %v", res, err)
	}
	res, err = d.Act(ctx, wire.UIAction{Node: entry.ID, Action: "set_value", Value: "hello bureau"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Node == nil || res.Node.Text == nil || *res.Node.Text != "hello bureau" || !res.Changed {
		t.Errorf("set_value: %+v", res)
	}
	if _, err := s.WaitLine("text=hello bureau", 5*time.Second); err != nil {
		t.Error(err)
	}
	res, err = d.Act(ctx, wire.UIAction{Node: check.ID, Action: "click"})
	if err != nil || !res.Changed || !slices.Contains(res.Node.States, "checked") {
		t.Errorf("check box: %+v %v", res, err)
	}
	res, err = d.Act(ctx, wire.UIAction{Node: entry.ID, Action: "focus"})
	if err != nil || !slices.Contains(res.Node.States, "focused") {
		t.Errorf("focus: %+v %v", res, err)
	}

	// The helper's protocol: a request in, an answer out, as JSON.
	var out bytes.Buffer
	in, _ := json.Marshal(wire.Request{Op: wire.OpUIFind, UI: &wire.UIQuery{Role: "check box"}})
	if err := Serve(ctx, s.Bus, bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var resp wire.Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.UI == nil || len(resp.UI.Nodes) != 1 || resp.UI.Nodes[0].ID != check.ID {
		t.Errorf("Serve: %s %v", out.Bytes(), err)
	}

	s.StopApp()
	_, err = d.Act(ctx, wire.UIAction{Node: button.ID, Action: "click"})
	if e := (*Error)(nil); !asError(err, &e) || e.Code != wire.CodeGone {
		t.Errorf("a node of an application that ended: %v", err)
	}
}

func wantNode(t *testing.T, nodes []wire.UINode, role, name string) wire.UINode {
	t.Helper()
	for _, n := range nodes {
		if n.Role == role && n.Name == name {
			return n
		}
	}
	t.Fatalf("no %s %q in the tree", role, name)
	return wire.UINode{}
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
