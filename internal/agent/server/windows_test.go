package server

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest/fakewm"
	"github.com/bureau/bureau/internal/agent/wire"
)

// call sends req to a server whose windows are ws, as bureau does.
func call(t *testing.T, ws WindowSystem, req wire.Request) wire.Response {
	t.Helper()
	s := &Server{Windows: ws}
	a, b := net.Pipe()
	defer a.Close()
	go s.handle(context.Background(), b)
	a.SetDeadline(time.Now().Add(30 * time.Second))
	if err := wire.WriteHeader(a, req); err != nil {
		t.Fatal(err)
	}
	var resp wire.Response
	if err := wire.ReadHeader(a, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func act(id, action string) wire.Request {
	return wire.Request{Op: wire.OpWindow, ID: id, Window: &wire.WindowAct{Action: action}}
}

func at(x, y int) (*int, *int) { return &x, &y }

func editor(wm *fakewm.WM) string {
	return wm.Open(wire.Window{Title: "notes.txt - Mousepad", Class: "Mousepad", Instance: "mousepad", PID: 4242,
		X: 100, Y: 130, Width: 640, Height: 480, Frame: wire.Extents{Left: 1, Right: 1, Top: 28, Bottom: 1}})
}

func TestListWindows(t *testing.T) {
	wm := fakewm.New()
	id := editor(wm)
	wm.Open(wire.Window{Title: "Terminal", Class: "Xfce4-terminal", Focused: true})
	resp := call(t, wm, wire.Request{Op: wire.OpWindows})
	if resp.Error != "" || len(resp.Windows) != 2 || resp.Screen == nil || resp.Screen.Width != 1280 {
		t.Fatalf("%+v", resp)
	}
	if w := resp.Windows[0]; w.ID != id || w.Class != "Mousepad" || w.PID != 4242 || w.Frame.Top != 28 {
		t.Errorf("first window: %+v", w)
	}
}

// TestWindowActionsWaitUntilTheyShow: each action is asked for once and
// the answer is the window once the window manager shows it, which here
// takes 150 ms.
func TestWindowActionsWaitUntilTheyShow(t *testing.T) {
	wm := fakewm.New()
	wm.Lag = 150 * time.Millisecond
	id := editor(wm)
	x, y := at(300, 200)
	for _, c := range []struct {
		act   wire.WindowAct
		check func(w *wire.Window) bool
	}{
		{wire.WindowAct{Action: "minimize"}, func(w *wire.Window) bool { return w.Minimized }},
		{wire.WindowAct{Action: "focus"}, func(w *wire.Window) bool { return w.Focused && !w.Minimized }},
		{wire.WindowAct{Action: "maximize"}, func(w *wire.Window) bool { return w.Maximized && w.Width == 1278 && w.Height == 771 }},
		{wire.WindowAct{Action: "unmaximize"}, func(w *wire.Window) bool { return !w.Maximized && w.Width == 640 && w.X == 100 }},
		{wire.WindowAct{Action: "move", X: x, Y: y}, func(w *wire.Window) bool { return w.X == 300 && w.Y == 200 && w.Width == 640 }},
		{wire.WindowAct{Action: "resize", Width: 800, Height: 600}, func(w *wire.Window) bool { return w.X == 300 && w.Width == 800 && w.Height == 600 }},
		{wire.WindowAct{Action: "move", X: x, Y: x, Width: 500, Height: 400}, func(w *wire.Window) bool { return w.Y == 300 && w.Width == 500 }},
		{wire.WindowAct{Action: "close"}, func(w *wire.Window) bool { return w == nil }},
	} {
		begun := time.Now()
		resp := call(t, wm, wire.Request{Op: wire.OpWindow, ID: id, Window: &c.act})
		if resp.Error != "" || !c.check(resp.Window) {
			t.Errorf("%s: %+v (window %+v)", c.act.Action, resp, resp.Window)
		}
		if took := time.Since(begun); took < wm.Lag || took > 5*time.Second {
			t.Errorf("%s took %s: it did not wait for the window manager", c.act.Action, took)
		}
	}
	if n := len(wm.Asked()); n != 8 {
		t.Errorf("asked %d times: %v", n, wm.Asked())
	}
}

func TestStaleWindowIsNotFound(t *testing.T) {
	wm := fakewm.New()
	id := editor(wm)
	wm.Remove(id)
	for _, wid := range []string{id, "0x0", "nonsense", "12345"} {
		if resp := call(t, wm, act(wid, "focus")); resp.Code != wire.CodeNotFound {
			t.Errorf("%s: %+v", wid, resp)
		}
	}
	if len(wm.Asked()) != 0 {
		t.Errorf("asked for a window that is gone: %v", wm.Asked())
	}
}

func TestBadWindowActionsAreInvalid(t *testing.T) {
	wm := fakewm.New()
	id := editor(wm)
	x, y := at(1, 2)
	for _, a := range []*wire.WindowAct{nil, {Action: "explode"}, {Action: "move"}, {Action: "move", X: x},
		{Action: "resize", Width: 10}, {Action: "resize", Width: -1, Height: 5}, {Action: "focus", X: x, Y: y},
		{Action: "move", X: x, Y: y, Width: 40000, Height: 1}} {
		if resp := call(t, wm, wire.Request{Op: wire.OpWindow, ID: id, Window: a}); resp.Code != wire.CodeInvalid {
			t.Errorf("%+v: %+v", a, resp)
		}
	}
}

func TestNoSessionIsUnavailable(t *testing.T) {
	wm := fakewm.New()
	wm.Down = ErrNoSession
	if resp := call(t, wm, wire.Request{Op: wire.OpWindows}); resp.Code != wire.CodeUnavailable {
		t.Errorf("%+v", resp)
	}
	wm.Down = errors.New("BadAccess")
	if resp := call(t, wm, wire.Request{Op: wire.OpWindows}); resp.Code != wire.CodeFailed {
		t.Errorf("%+v", resp)
	}
}

func quickOps(ws WindowSystem) windowOps {
	return windowOps{ws: ws, settle: 300 * time.Millisecond, poll: 10 * time.Millisecond, still: 50 * time.Millisecond}
}

// TestActionThatDoesNotShow: a window manager that ignores a request
// leaves the window as it was; the answer says so after settle.
func TestActionThatDoesNotShow(t *testing.T) {
	wm := fakewm.New()
	wm.Deaf = true
	id := editor(wm)
	begun := time.Now()
	w, err := quickOps(wm).act(context.Background(), id, &wire.WindowAct{Action: "maximize"})
	if err != nil || w == nil || w.Maximized || time.Since(begun) < 300*time.Millisecond {
		t.Fatalf("%+v %v after %s", w, err, time.Since(begun))
	}
	w, err = quickOps(wm).act(context.Background(), id, &wire.WindowAct{Action: "close"})
	if err != nil || w == nil {
		t.Fatalf("a window that stays open: %+v %v", w, err)
	}
}

// TestMoveIsCorrected: a window manager that reads the position as its
// frame's corner puts the window off by the frame; one corrected request
// lands it where it was asked to go.
func TestMoveIsCorrected(t *testing.T) {
	wm := fakewm.New()
	wm.Offset = [2]int{1, 28}
	id := editor(wm)
	x, y := at(400, 300)
	w, err := quickOps(wm).act(context.Background(), id, &wire.WindowAct{Action: "move", X: x, Y: y})
	if err != nil || w.X != 400 || w.Y != 300 {
		t.Fatalf("%+v %v", w, err)
	}
	if n := len(wm.Asked()); n != 2 {
		t.Errorf("asked %v", wm.Asked())
	}
}

// TestMoveOfAMaximizedWindow unmaximizes it first.
func TestMoveOfAMaximizedWindow(t *testing.T) {
	wm := fakewm.New()
	id := editor(wm)
	ops := quickOps(wm)
	if w, err := ops.act(context.Background(), id, &wire.WindowAct{Action: "maximize"}); err != nil || !w.Maximized {
		t.Fatal(w, err)
	}
	x, y := at(10, 40)
	w, err := ops.act(context.Background(), id, &wire.WindowAct{Action: "move", X: x, Y: y})
	if err != nil || w.Maximized || w.X != 10 || w.Y != 40 {
		t.Fatalf("%+v %v", w, err)
	}
	if want := []string{"maximize " + id, "unmaximize " + id, "move " + id}; !slices.Equal(wm.Asked(), want) {
		t.Errorf("asked %v, want %v", wm.Asked(), want)
	}
}

// TestWindowClosedWhileWaiting: a window its app closes while bureau
// waits is not found (but a close that took is no error).
func TestWindowClosedWhileWaiting(t *testing.T) {
	wm := fakewm.New()
	wm.Deaf = true
	id := editor(wm)
	time.AfterFunc(50*time.Millisecond, func() { wm.Remove(id) })
	_, err := quickOps(wm).act(context.Background(), id, &wire.WindowAct{Action: "focus"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%v", err)
	}
}
