package atspi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/agent/wire"
)

func act(t *testing.T, s *sample, o obj, action, value string) (*wire.UIResult, error) {
	t.Helper()
	return s.desktop().Act(context.Background(), wire.UIAction{Node: encodeID(o), Action: action, Value: value})
}

func wantCode(t *testing.T, err error, code, part string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Msg, part) {
		t.Errorf("error %v, want %s with %q", err, code, part)
	}
}

func TestClickDoesTheDefaultAction(t *testing.T) {
	s := newSample()
	res, err := act(t, s, s.check, "click", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Performed != "click" || !res.Changed || !slices.Contains(res.Node.States, "checked") || res.Gone {
		t.Errorf("result %+v", res)
	}
	if res.Node.Parent != encodeID(s.box) || res.Node.Depth != 3 || res.Node.App != "uiapp" {
		t.Errorf("node placed %+v", res.Node)
	}
	// The button's click changes nothing the node shows.
	res, err = act(t, s, s.button, "press", "")
	if err != nil || res.Performed != "click" || res.Changed {
		t.Errorf("press → the default action: %+v %v", res, err)
	}
	// An entry's default action is "activate".
	if res, err = act(t, s, s.entry, "click", ""); err != nil || res.Performed != "activate" {
		t.Errorf("click an entry: %+v %v", res, err)
	}
	if !slices.Equal(s.f.did, []string{"Remember me " + s.check.path + " click", "Press me " + s.button.path + " click",
		"Your name " + s.entry.path + " activate"}) {
		t.Errorf("actions done %q", s.f.did)
	}
}

func TestActionsTheNodeLacks(t *testing.T) {
	s := newSample()
	_, err := act(t, s, s.label, "click", "")
	wantCode(t, err, wire.CodeInvalid, "click it by coordinates instead (POST …/computer), at its middle (200, 138)")
	_, err = act(t, s, s.button, "expand", "")
	wantCode(t, err, wire.CodeInvalid, `no action "expand" (its actions: click)`)
	_, err = act(t, s, s.label, "focus", "")
	wantCode(t, err, wire.CodeInvalid, "cannot take the focus")
	_, err = act(t, s, s.button, "set_value", "x")
	wantCode(t, err, wire.CodeInvalid, "no value to set")
	_, err = act(t, s, s.button, "click", "x")
	wantCode(t, err, wire.CodeInvalid, "value goes with set_value only")
	_, err = act(t, s, s.button, "", "")
	wantCode(t, err, wire.CodeInvalid, "give an action")
	s.f.objs[s.button].states = []string{"showing", "visible"}
	_, err = act(t, s, s.button, "click", "")
	wantCode(t, err, wire.CodeInvalid, "is disabled")
	if len(s.f.did) != 0 {
		t.Errorf("actions done %q", s.f.did)
	}
}

func TestNamedActionIsCaseBlind(t *testing.T) {
	s := newSample()
	if res, err := act(t, s, s.check, "Click", ""); err != nil || res.Performed != "click" {
		t.Errorf("%+v %v", res, err)
	}
}

func TestSetValue(t *testing.T) {
	s := newSample()
	res, err := act(t, s, s.entry, "set_value", "Ada")
	if err != nil {
		t.Fatal(err)
	}
	if res.Performed != "set_text_contents" || !res.Changed || *res.Node.Text != "Ada" {
		t.Errorf("entry: %+v", res)
	}
	res, err = act(t, s, s.slider, "set_value", " 7.5 ")
	if err != nil || res.Performed != "set_current_value" || !res.Changed || res.Node.Value.Current != 7.5 {
		t.Errorf("slider: %+v %v", res, err)
	}
	_, err = act(t, s, s.slider, "set_value", "loud")
	wantCode(t, err, wire.CodeInvalid, "takes a number from 0 to 10")
	_, err = act(t, s, s.slider, "set_value", "11")
	wantCode(t, err, wire.CodeInvalid, "takes a number from 0 to 10")
}

func TestFocus(t *testing.T) {
	s := newSample()
	res, err := act(t, s, s.entry, "focus", "")
	if err != nil || !res.Changed || !slices.Contains(res.Node.States, "focused") {
		t.Errorf("%+v %v", res, err)
	}
	s.f.objs[s.button].refuse = true
	_, err = act(t, s, s.button, "focus", "")
	wantCode(t, err, wire.CodeFailed, "refused")
}

func TestGoneNodes(t *testing.T) {
	s := newSample()
	_, err := s.desktop().Act(context.Background(), wire.UIAction{Node: "not an id", Action: "click"})
	wantCode(t, err, wire.CodeNotFound, "not a node id")
	s.f.remove(s.label)
	_, err = act(t, s, s.label, "click", "")
	wantCode(t, err, wire.CodeGone, "no longer has it")
	s.f.quit(s.daemon.bus)
	_, err = act(t, s, s.daemonWin, "click", "")
	wantCode(t, err, wire.CodeGone, "left the desktop")
	s.f.objs[s.check].states = append(s.f.objs[s.check].states, "defunct")
	_, err = act(t, s, s.check, "click", "")
	wantCode(t, err, wire.CodeGone, "gone")
}

// An application asked while it shuts down does not answer, then leaves
// the bus: its node is gone, not an internal error.
func TestANodeOfAnAppShuttingDown(t *testing.T) {
	s := newSample()
	s.f.slow[s.daemon.bus], s.f.leaving[s.daemon.bus] = true, true
	_, err := act(t, s, s.daemonWin, "click", "")
	wantCode(t, err, wire.CodeGone, "left the desktop")
}

func TestAnActionThatEndsTheNode(t *testing.T) {
	s := newSample()
	s.f.objs[s.button].onAction = func(f *fakeBus, _ *fakeObj, _ string) { delete(f.objs, s.button) }
	res, err := act(t, s, s.button, "click", "")
	if err != nil || !res.Gone || !res.Changed || res.Node == nil || res.Node.Name != "Press me" {
		t.Errorf("%+v %v", res, err)
	}
}

func TestIDs(t *testing.T) {
	o := obj{":1.42", "/org/a11y/atspi/accessible/17"}
	id := encodeID(o)
	if strings.ContainsAny(id, "/+=|") {
		t.Errorf("id %q is not URL-safe", id)
	}
	if got, err := decodeID(id); err != nil || got != o {
		t.Errorf("round trip: %+v %v", got, err)
	}
	if got, err := decodeID(encodeID(obj{"org.a11y.atspi.Registry", rootPath})); err != nil || got.bus != registryName {
		t.Errorf("well-known name: %+v %v", got, err)
	}
	for _, bad := range []string{"", "***", encodeID(obj{"", "/x"}), encodeID(obj{":1.2", "relative"}),
		encodeID(obj{":1.2", "/a//b"}), encodeID(obj{"nodots", "/x"}), encodeID(obj{"a.1b", "/x"}),
		"OjEuMnwveA=="} {
		if _, err := decodeID(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestDecodeStates(t *testing.T) {
	// enabled (8), focused (12), showing (25) in the first word; checkable
	// (41 = 32+9) in the second.
	got := decodeStates([]uint32{1<<8 | 1<<12 | 1<<25 | 1, 1 << 9})
	if want := []string{"enabled", "focused", "showing", "checkable"}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if got := decodeStates([]uint32{0, 1 << 20}); len(got) != 0 {
		t.Errorf("past the known states: %v", got)
	}
	if stateIndex("has-tooltip") != 13 || stateIndex("READ_ONLY") != 43 || stateIndex("invalid") != -1 {
		t.Error("stateIndex")
	}
}

func asError(err error, e **Error) bool { return errors.As(err, e) }
