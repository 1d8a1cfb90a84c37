package guest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/agenttest/fakewm"
	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// windowService is a Service whose guest is this machine through an
// in-process bureau-agent whose windows are wm's.
func windowService(t *testing.T, wm *fakewm.WM) (*Service, *client.Client) {
	t.Helper()
	c := agenttest.ClientWithWindows(t, wm)
	s := agentService(t, c, nil)
	s.appDirs = []string{t.TempDir()}
	return s, c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestWindowsThroughBureauAgent(t *testing.T) {
	wm := fakewm.New()
	s, _ := windowService(t, wm)
	ctx := testCtx(t)
	id := wm.Open(wire.Window{Title: "notes.txt - Mousepad", Class: "Mousepad", Instance: "mousepad", PID: 7,
		X: 10, Y: 40, Width: 500, Height: 300, Frame: wire.Extents{Top: 28}, Workspace: -1})
	list, err := s.Windows(ctx, "d")
	if err != nil || len(list.Windows) != 1 || list.Screen.Width != 1280 {
		t.Fatalf("%+v %v", list, err)
	}
	if w := list.Windows[0]; *w != (Window{ID: id, Title: "notes.txt - Mousepad", App: "Mousepad", Instance: "mousepad", PID: 7,
		X: 10, Y: 40, Width: 500, Height: 300, Frame: Frame{Top: 28}, Workspace: -1}) {
		t.Errorf("%+v", w)
	}
	x, y, w := 20, 60, 640
	got, err := s.WindowAction(ctx, "d", id, WindowAction{Action: "move", X: &x, Y: &y})
	if err != nil || got.X != 20 || got.Y != 60 {
		t.Errorf("move: %+v %v", got, err)
	}
	// xdotool's decimal ids work as well.
	n, _ := wire.ParseWindowID(id)
	if got, err := s.WindowAction(ctx, "d", strings.TrimPrefix(wire.FormatWindowID(n), "0x"), WindowAction{Action: "focus"}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("hex without 0x is no id: %+v %v", got, err)
	}
	if got, err := s.WindowAction(ctx, "d", "31457284", WindowAction{Action: "focus"}); err != nil || !got.Focused || got.ID != id {
		t.Errorf("decimal id: %+v %v", got, err)
	}
	var ve *desktop.ValidationError
	if _, err := s.WindowAction(ctx, "d", id, WindowAction{Action: "resize", Width: &w}); !errors.As(err, &ve) || ve.Field != "width" {
		t.Errorf("resize without height: %v", err)
	}
	zero := 0
	if _, err := s.WindowAction(ctx, "d", id, WindowAction{Action: "move", X: &x, Y: &y, Width: &zero}); !errors.As(err, &ve) || ve.Field != "width" {
		t.Errorf("width 0: %v", err)
	}
	if got, err := s.WindowAction(ctx, "d", id, WindowAction{Action: "close"}); err != nil || got != nil {
		t.Errorf("close: %+v %v", got, err)
	}
	_, err = s.WindowAction(ctx, "d", id, WindowAction{Action: "focus"})
	if !errors.Is(err, desktop.ErrNotFound) || !strings.Contains(err.Error(), "window "+id+" is not open") {
		t.Errorf("a closed window: %v", err)
	}
}

func TestWindowsWithoutBureauAgent(t *testing.T) {
	s := New(failingAgent{})
	if _, err := s.Windows(context.Background(), "d"); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("%v", err)
	}
	if _, err := s.LaunchApp(context.Background(), "d", LaunchRequest{Command: "true"}); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("%v", err)
	}
}

// openFor opens a window in wm for the background process named name
// once it runs (as its app would), after an unrelated window.
func openFor(t *testing.T, c *client.Client, wm *fakewm.WM, name, title string) {
	old := map[string]bool{}
	procs, err := c.Procs(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		old[p.ID] = true
	}
	go func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			procs, _ := c.Procs(context.Background(), "d")
			for _, p := range procs {
				if p.Name == name && p.Running && !old[p.ID] {
					wm.Open(wire.Window{Title: "Some other app", PID: 1})
					wm.Open(wire.Window{Title: title, PID: p.PID})
					return
				}
			}
		}
	}()
}

func TestLaunchAppFromItsDesktopFile(t *testing.T) {
	wm := fakewm.New()
	s, c := windowService(t, wm)
	ctx := testCtx(t)
	wm.Open(wire.Window{Title: "already open"})
	entry := "[Desktop Entry]\nType=Application\nName=Example Editor\nExec=sleep 30 %F\n"
	os.WriteFile(filepath.Join(s.appDirs[0], "org.example.editor.desktop"), []byte(entry), 0o644)
	for _, name := range []string{"editor", "org.example.editor", "Example Editor", "EDITOR"} {
		openFor(t, c, wm, "app: org.example.editor", "Editor: "+name)
		res, err := s.LaunchApp(ctx, "d", LaunchRequest{DesktopFile: name})
		if err != nil || res.TimedOut || res.Window == nil {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
		if res.Window.Title != "Editor: "+name || res.Window.PID != res.Process.PID || !slices.Equal(res.Process.Command, []string{"sleep", "30"}) {
			t.Errorf("%s: window %+v of process %+v", name, res.Window, res.Process)
		}
		s.Signal(ctx, "d", res.Process.ID, "KILL")
	}
	var ve *desktop.ValidationError
	_, err := s.LaunchApp(ctx, "d", LaunchRequest{DesktopFile: "no-such-app"})
	if !errors.As(err, &ve) || ve.Field != "desktop_file" || !strings.Contains(err.Error(), `"no-such-app"`) {
		t.Errorf("unknown app: %v", err)
	}
	os.WriteFile(filepath.Join(s.appDirs[0], "site.desktop"), []byte("[Desktop Entry]\nType=Link\nURL=x\n"), 0o644)
	if _, err := s.LaunchApp(ctx, "d", LaunchRequest{DesktopFile: "site"}); !errors.As(err, &ve) || !strings.Contains(err.Error(), "not an application") {
		t.Errorf("a link: %v", err)
	}
}

func TestLaunchAppCommand(t *testing.T) {
	wm := fakewm.New()
	s, c := windowService(t, wm)
	ctx := testCtx(t)
	openFor(t, c, wm, "app: sleep", "Sleeper")
	res, err := s.LaunchApp(ctx, "d", LaunchRequest{Argv: []string{"sleep", "30"}})
	if err != nil || res.Window == nil || res.Window.Title != "Sleeper" {
		t.Fatalf("%+v %v", res, err)
	}
	s.Signal(ctx, "d", res.Process.ID, "KILL")

	// No window in time: the process, timed out.
	one := 1
	begun := time.Now()
	res, err = s.LaunchApp(ctx, "d", LaunchRequest{Command: "sleep 30", WaitS: &one})
	if err != nil || res.Window != nil || !res.TimedOut || res.Process == nil || time.Since(begun) > 10*time.Second {
		t.Fatalf("%+v %v after %s", res, err, time.Since(begun))
	}
	s.Signal(ctx, "d", res.Process.ID, "KILL")

	// A command that fails opens no window: no need to wait it out.
	begun = time.Now()
	res, err = s.LaunchApp(ctx, "d", LaunchRequest{Command: "echo no such program >&2; exit 127"})
	if err != nil || res.Window != nil || res.TimedOut || res.Process.ExitCode == nil || *res.Process.ExitCode != 127 || time.Since(begun) > 10*time.Second {
		t.Fatalf("%+v %v after %s", res, err, time.Since(begun))
	}

	// wait_s 0: at once.
	zero := 0
	res, err = s.LaunchApp(ctx, "d", LaunchRequest{Argv: []string{"true"}, WaitS: &zero})
	if err != nil || res.Window != nil || res.TimedOut || res.Process == nil {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestLaunchRequestValidation(t *testing.T) {
	big, neg := 121, -1
	for _, r := range []LaunchRequest{{}, {DesktopFile: "a", Command: "b"}, {Command: "b", Argv: []string{"c"}},
		{DesktopFile: "../x"}, {Argv: []string{""}}, {Command: "x", WaitS: &big}, {Command: "x", WaitS: &neg}} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v passed", r)
		}
	}
}
