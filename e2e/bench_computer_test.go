//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// benchComputer measures what an agent waits for: one action's round
// trip, typing speed by route, a scaled screenshot and an exec.
func benchComputer(t *testing.T, s *server, d *desktop.Desktop, addRow func(name, value string)) {
	n := reps()
	path := "/api/v1/desktops/" + d.ID + "/computer"
	i := 0
	move := timeN(n, func() {
		i++
		s.call(adminToken, "POST", path, map[string]any{"action": "mouse_move", "coordinate": []int{300 + i, 300}}, nil)
	})
	addRow(fmt.Sprintf("computer action round trip (mouse_move) p50 / p99 (%d runs)", n), fmt.Sprintf("%s / %s", pct(move, 50), pct(move, 99)))
	shot := timeN(n, func() {
		s.call(adminToken, "POST", path, map[string]any{"action": "screenshot", "display": map[string]int{"width": 1024, "height": 640}}, nil)
	})
	addRow("settled screenshot scaled to 1024×640 (action) p50", pct(shot, 50).String())
	ex := timeN(n, func() {
		s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"argv": []string{"true"}}, nil)
	})
	addRow("exec round trip (true) p50", pct(ex, 50).String())

	s.catWindow(d, "100x20+50+50", "/tmp/bench-typed.txt")
	ascii := strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 ~!@#$%^&*()_+{}|:\"<>? ", 7)[:500]
	begun := time.Now()
	s.call(adminToken, "POST", path, map[string]any{"action": "type", "text": ascii}, nil)
	took := time.Since(begun)
	addRow("type 500 ASCII characters (key events)", fmt.Sprintf("%s = %.0f chars/s", took.Round(time.Millisecond), 500/took.Seconds()))
	uni := strings.Repeat("日本語のテキスト、naïve café ", 5)
	begun = time.Now()
	s.call(adminToken, "POST", path, map[string]any{"action": "type", "text": uni}, nil)
	took = time.Since(begun)
	addRow(fmt.Sprintf("type %d characters of mixed Unicode (keys + paste)", len([]rune(uni))),
		fmt.Sprintf("%s = %.0f chars/s", took.Round(time.Millisecond), float64(len([]rune(uni)))/took.Seconds()))
	time.Sleep(time.Second)
	if got, _ := s.guest(d, "cat /tmp/bench-typed.txt"); got != strings.TrimSpace(ascii+uni) {
		t.Errorf("benchmark typing arrived wrong:\n got %q\nwant %q", got, ascii+uni)
	}
	s.guest(d, "pkill -x xterm")
}
