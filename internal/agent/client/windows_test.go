package client

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/bureau/bureau/internal/agent/agenttest/fakewm"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

func windowPair(t *testing.T, wm *fakewm.WM) *Client {
	t.Helper()
	srv := &server.Server{Info: wire.Info{SHA256: "same", Version: "test"}, StateDir: t.TempDir(), Windows: wm}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	d := &pipeDialer{}
	d.srv.Store(srv)
	c, err := New(d, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWindowCalls(t *testing.T) {
	wm := fakewm.New()
	c := windowPair(t, wm)
	list, scr, err := c.Windows(ctx(t), "d")
	if err != nil || list == nil || len(list) != 0 || scr.Width != 1280 {
		t.Fatalf("no windows: %v %+v %v", list, scr, err)
	}
	id := wm.Open(wire.Window{Title: "Terminal", Width: 600, Height: 400})
	list, _, err = c.Windows(ctx(t), "d")
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Title != "Terminal" {
		t.Fatalf("%+v %v", list, err)
	}
	w, err := c.WindowAction(ctx(t), "d", id, WindowAct{Action: wire.WindowResize, Width: 800, Height: 500})
	if err != nil || w == nil || w.Width != 800 {
		t.Fatalf("resize: %+v %v", w, err)
	}
	w, err = c.WindowAction(ctx(t), "d", id, WindowAct{Action: wire.WindowClose})
	if err != nil || w != nil {
		t.Fatalf("close: %+v %v", w, err)
	}
	// The window is gone now: not found; a bad action is a validation
	// error; a session that is not up is unavailable.
	if _, err := c.WindowAction(ctx(t), "d", id, WindowAct{Action: wire.WindowFocus}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("stale window: %v", err)
	}
	var ve *desktop.ValidationError
	if _, err := c.WindowAction(ctx(t), "d", id, WindowAct{Action: "fly"}); !errors.As(err, &ve) {
		t.Errorf("bad action: %v", err)
	}
	wm.Down = server.ErrNoSession
	if _, _, err := c.Windows(ctx(t), "d"); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("no session: %v", err)
	}
}
