//go:build e2e

package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// checkVerifiedActions: an action says whether the screen changed after
// it, and expect "change" turns an action that did nothing into 422
// no_effect. On the bare Xfce desktop: a left click on empty desktop
// changes nothing; a right click opens the desktop's menu (a change),
// Escape closes it (a change). Screenshots say their scale.
func checkVerifiedActions(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	t.Helper()
	s.guest(d, "pkill -x xterm; pkill -x mousepad; true")
	empty := []int{900, 500} // right of the desktop icons, below the panel
	// A first click clears any selection; the screen then settles.
	s.computer(token, d, map[string]any{"action": "left_click", "coordinate": empty, "screenshot": true})
	res := s.computer(token, d, map[string]any{"action": "left_click", "coordinate": empty})
	if r := res.Results[0]; r.ScreenChanged == nil || *r.ScreenChanged {
		t.Errorf("a click on empty desktop: screen_changed %v, want false", r.ScreenChanged)
	}
	e := s.expectError(token, "POST", "/api/v1/desktops/"+d.ID+"/computer",
		map[string]any{"action": "left_click", "coordinate": empty, "expect": "change"}, http.StatusUnprocessableEntity, "no_effect")
	t.Logf("click on empty desktop with expect change: %s", e.Error.Message)

	begun := time.Now()
	res = s.computer(token, d, map[string]any{"action": "right_click", "coordinate": empty, "expect": "change", "verify_ms": 5000})
	r := res.Results[0]
	if r.ScreenChanged == nil || !*r.ScreenChanged || r.ChangedAfterMS == nil {
		t.Errorf("a right click on the desktop (its menu): %+v", r)
	} else {
		t.Logf("right click → desktop menu: changed after %d ms (request %s)", *r.ChangedAfterMS, time.Since(begun).Round(time.Millisecond))
	}
	res = s.computer(token, d, map[string]any{"action": "key", "text": "Escape", "expect": "change", "verify_ms": 5000})
	if r := res.Results[0]; r.ScreenChanged == nil || !*r.ScreenChanged {
		t.Errorf("Escape closing the menu: %+v", r)
	}

	// Screenshots say how their pixels map to the screen.
	res = s.computer(token, d, map[string]any{"action": "screenshot", "display": map[string]int{"width": 640, "height": 400}})
	if img := res.Results[0].Image; img == nil || img.Scale != 0.5 || img.Coordinates != "display" {
		t.Errorf("a half-size screenshot: %+v", img)
	}
}
