//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// benchComputer measures what an agent waits for: one action's round
// trip, typing speed by route, a scaled screenshot and an exec.
func benchComputer(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	n := reps()
	path := "/api/v1/desktops/" + d.ID + "/computer"
	i := 0
	move := timeN(n, func() {
		i++
		benchCall(t, s, adminToken, "POST", path, map[string]any{"action": "mouse_move", "coordinate": []int{300 + i, 300}, "verify_ms": 0}, nil) // the round trip alone: benchUI says what verifying adds
	})
	addRow(fmt.Sprintf("computer action round trip (mouse_move) p50 / %s (%d runs)", tail(n), n), fmt.Sprintf("%s / %s", pct(move, 50), pct(move, 99)))
	shot := timeN(n, func() {
		benchCall(t, s, adminToken, "POST", path, map[string]any{"action": "screenshot", "display": map[string]int{"width": 1024, "height": 640}}, nil)
	})
	addRow("settled screenshot scaled to 1024×640 (action) p50", pct(shot, 50).String())
	// What one of the step log's pictures costs: a 320-pixel JPEG of the
	// screen (taken between calls, off the path of calls in quick
	// succession; the mouse_move row above is such a burst).
	thumb := timeN(n, func() {
		benchCall(t, s, adminToken, "GET", "/api/v1/desktops/"+d.ID+"/screenshot?format=jpeg&width=320&quality=60", nil, nil)
	})
	addRow("a step's picture (320-px JPEG screenshot, taken between calls) p50", pct(thumb, 50).String())
	ex := timeN(n, func() {
		benchCall(t, s, adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"argv": []string{"true"}}, nil)
	})
	addRow("exec round trip (true) p50", pct(ex, 50).String())

	// Typing, side by side: keys acknowledged by the guest (now) and
	// paced by time without acknowledgement (as before).
	ascii := strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 ~!@#$%^&*()_+{}|:\"<>? ", 7)[:500]
	uni := strings.Repeat("日本語のテキスト、naïve café ", 5)
	for _, kb := range []string{"auto", "paced"} {
		s.catWindow(d, "100x20+50+50", "/tmp/bench-typed.txt")
		s.call(adminToken, "POST", path, map[string]any{"action": "left_click", "coordinate": []int{300, 150}}, nil)
		time.Sleep(time.Second)
		for _, text := range []string{ascii, uni} {
			var res struct {
				Results []struct{ Keyboard string }
			}
			begun := time.Now()
			benchCall(t, s, adminToken, "POST", path, map[string]any{"action": "type", "text": text, "keyboard": kb}, &res)
			took := time.Since(begun)
			what := fmt.Sprintf("type %d ASCII characters", len(text))
			if text == uni {
				what = fmt.Sprintf("type %d characters of mixed Unicode (keys + paste)", len([]rune(text)))
			}
			via := ""
			if len(res.Results) > 0 {
				via = res.Results[0].Keyboard
			}
			addRow(fmt.Sprintf("%s, %s keyboard", what, via),
				fmt.Sprintf("%s = %.0f chars/s", took.Round(time.Millisecond), float64(len([]rune(text)))/took.Seconds()))
		}
		time.Sleep(time.Second)
		if got, _ := s.guest(d, "cat /tmp/bench-typed.txt"); got != strings.TrimSpace(ascii+uni) {
			t.Errorf("benchmark typing (%s) arrived wrong:\n got %q\nwant %q", kb, got, ascii+uni)
		}
		s.guest(d, "pkill -x xterm")
	}
}
