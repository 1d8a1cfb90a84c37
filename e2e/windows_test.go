//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/guest"
)

// windowView is a window as GET /windows answers it.
type windowView struct {
	guest.Window
	DisplayBounds *struct{ X, Y, Width, Height int } `json:"display_bounds"`
}

// xdo runs xdotool in the desktop's session and answers its output.
func (s *server) xdo(d *apiv1.Desktop, args string) string {
	s.t.Helper()
	out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 xdotool "+args+"'")
	return out
}

// decimal is an X window id as xdotool writes it.
func decimal(t *testing.T, id string) string {
	var n uint64
	if _, err := fmt.Sscanf(id, "0x%x", &n); err != nil {
		t.Fatalf("window id %q: %v", id, err)
	}
	return fmt.Sprint(n)
}

// testWindows launches apps and arranges their windows through the API,
// checking each step with xdotool in the guest: launch by desktop file
// (its window comes back), list (geometry as xdotool sees it, no panel or
// desktop), focus, move, resize, minimize and restore, maximize and back,
// close, a stale id, bad input.
// testWindowsUI is the running check windows_ui: windows and apps, then
// the accessibility tree.
func testWindowsUI(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	t.Run("windows", func(t *testing.T) { testWindows(t, s.with(t), token, d) })
	t.Run("ui", func(t *testing.T) { testUI(t, s.with(t), token, d) })
}

func testWindows(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	s.guest(d, "pkill -x mousepad; pkill -x xterm; true")
	var launched guest.LaunchResult
	begun := time.Now()
	if code := s.call(token, "POST", base+"/apps", map[string]any{"desktop_file": "mousepad", "wait_s": 60}, &launched); code != http.StatusOK || launched.Window == nil || launched.TimedOut {
		t.Fatalf("launch mousepad: %d %+v", code, launched)
	}
	w := launched.Window
	t.Logf("launch mousepad → its window %s %q (%s): %s", w.ID, w.Title, w.App, time.Since(begun).Round(time.Millisecond))
	if !strings.EqualFold(w.App, "mousepad") {
		t.Errorf("launched window's app %q", w.App)
	}
	xid := decimal(t, w.ID)
	var term guest.LaunchResult
	if code := s.call(token, "POST", base+"/apps", map[string]any{"command": "xterm -geometry 60x10+600+400", "wait_s": 60}, &term); code != http.StatusOK || term.Window == nil {
		t.Fatalf("launch xterm: %d %+v", code, term)
	}

	var list struct {
		Windows []windowView
		Screen  struct{ Width, Height, Workspace int }
	}
	begun = time.Now()
	if code := s.call(token, "GET", base+"/windows?display=640x400", nil, &list); code != http.StatusOK {
		t.Fatalf("list windows: %d", code)
	}
	t.Logf("list %d windows: %s", len(list.Windows), time.Since(begun).Round(time.Millisecond))
	var mine *windowView
	for i, v := range list.Windows {
		if v.ID == w.ID {
			mine = &list.Windows[i]
		}
		if v.App == "Xfce4-panel" || v.App == "Xfdesktop" {
			t.Errorf("the panel or desktop is listed as a window: %+v", v)
		}
	}
	if mine == nil || mine.DisplayBounds == nil || list.Screen.Width == 0 {
		t.Fatalf("mousepad's window not listed with display bounds: %+v", list)
	}
	geo := s.xdo(d, "getwindowgeometry "+xid)
	if !strings.Contains(geo, fmt.Sprintf("Position: %d,%d", mine.X, mine.Y)) && !strings.Contains(geo, fmt.Sprintf("Geometry: %dx%d", mine.Width, mine.Height)) {
		t.Errorf("listed %+v, xdotool says %q", mine.Window, geo)
	}

	act := func(body map[string]any) *guest.Window {
		t.Helper()
		var got guest.Window
		begun := time.Now()
		if code := s.call(token, "POST", base+"/windows/"+w.ID, body, &got); code != http.StatusOK {
			t.Fatalf("%v: %d", body, code)
		}
		if took := time.Since(begun); took > 3*time.Second {
			t.Errorf("%v took %s", body["action"], took)
		}
		return &got
	}
	if got := act(map[string]any{"action": "focus"}); !got.Focused || s.xdo(d, "getactivewindow") != xid {
		t.Errorf("focus: %+v, active window %s", got, s.xdo(d, "getactivewindow"))
	}
	if got := act(map[string]any{"action": "move", "x": 200, "y": 150}); got.X != 200 || got.Y != 150 {
		t.Errorf("move to 200,150: at %d,%d; xdotool: %q", got.X, got.Y, s.xdo(d, "getwindowgeometry "+xid))
	}
	if got := act(map[string]any{"action": "resize", "width": 700, "height": 500}); got.Width != 700 || got.Height != 500 ||
		!strings.Contains(s.xdo(d, "getwindowgeometry "+xid), "700x500") {
		t.Errorf("resize to 700x500: %dx%d; xdotool: %q", got.Width, got.Height, s.xdo(d, "getwindowgeometry "+xid))
	}
	if got := act(map[string]any{"action": "minimize"}); !got.Minimized {
		t.Errorf("minimize: %+v", got)
	}
	if strings.Contains(s.xdo(d, "search --onlyvisible --class mousepad"), xid) {
		t.Error("minimized, mousepad is still visible to xdotool")
	}
	if got := act(map[string]any{"action": "focus"}); got.Minimized || !got.Focused {
		t.Errorf("focus restores a minimized window: %+v", got)
	}
	if got := act(map[string]any{"action": "maximize"}); !got.Maximized || got.Width < 700 {
		t.Errorf("maximize: %+v", got)
	}
	if got := act(map[string]any{"action": "unmaximize"}); got.Maximized {
		t.Errorf("unmaximize: %+v", got)
	}
	var closed struct{ Closed bool }
	if code := s.call(token, "POST", base+"/windows/"+w.ID, map[string]any{"action": "close"}, &closed); code != http.StatusOK || !closed.Closed {
		t.Errorf("close an unchanged mousepad: %d %+v", code, closed)
	}
	if out := s.xdo(d, "search --class mousepad"); strings.Contains(out, xid) {
		t.Errorf("closed, xdotool still finds it: %q", out)
	}
	s.expectError(token, "POST", base+"/windows/"+w.ID, map[string]any{"action": "focus"}, http.StatusNotFound, "not_found")
	s.expectError(token, "POST", base+"/windows/"+term.Window.ID, map[string]any{"action": "spin"}, http.StatusUnprocessableEntity, "invalid")
	s.expectError(token, "POST", base+"/apps", map[string]any{"desktop_file": "no-such-app"}, http.StatusUnprocessableEntity, "invalid")
	var slow guest.LaunchResult
	if code := s.call(token, "POST", base+"/apps", map[string]any{"command": "sleep 30", "wait_s": 2}, &slow); code != http.StatusOK || !slow.TimedOut || slow.Window != nil {
		t.Errorf("an app that shows no window: %d %+v", code, slow)
	}
	s.guest(d, "pkill -x xterm; pkill -x sleep; true")
}
