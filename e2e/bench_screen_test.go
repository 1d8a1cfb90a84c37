//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// benchScreen puts the screen paths side by side on one desktop: a
// screenshot from the live framebuffer, from the hypervisor's dump through
// the API, and virsh screenshot, on a still screen and on one that changes
// 10 times a second; then how long "settled" takes after a click, waiting on
// the framebuffer's change reports against comparing screenshots.
func benchScreen(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	n := reps()
	base := "/api/v1/desktops/" + d.ID + "/screenshot"
	get := func(q string) func() { return func() { s.shot(adminToken, base+q) } }
	virsh := func() {
		if out, err := exec.Command("virsh", "-c", "qemu:///system", "screenshot", domainOf(d.ID), filepath.Join(t.TempDir(), "v.png")).CombinedOutput(); err != nil {
			t.Fatalf("virsh screenshot: %v %s", err, out)
		}
	}
	s.guest(d, "pkill -x xterm")
	time.Sleep(2 * time.Second)
	row := func(what string, f func()) {
		f() // the first call may dial the framebuffer
		r := timeN(n, f)
		addRow(fmt.Sprintf("%s p50 / %s (%d runs)", what, tail(n), n), fmt.Sprintf("%s / %s", pct(r, 50), pct(r, 99)))
	}
	// As an agent takes them: one a second (QEMU's scans have backed off,
	// and the poke fires one at once).
	for _, src := range []struct{ name, q string }{{"live framebuffer", ""}, {"hypervisor dump via API", "?source=display"}} {
		f := get(src.q)
		f()
		r := timeN(n, func() { time.Sleep(time.Second); f() })
		for i := range r {
			r[i] -= time.Second
		}
		addRow(fmt.Sprintf("screenshot PNG, %s, one a second, still screen p50 / %s (%d runs)", src.name, tail(n), n), fmt.Sprintf("%s / %s", pct(r, 50), pct(r, 99)))
	}
	for _, screen := range []string{"still", "changing 10×/s"} {
		if screen != "still" {
			s.guest(d, "su agent -c 'cd; DISPLAY=:0 setsid xterm -geometry 80x24+100+100 -e sh -c \"while :; do date +%s.%N; sleep 0.1; done\" >/dev/null 2>&1 &'")
			s.waitGuest(d, "xterm", "pgrep -x xterm", time.Minute)
			time.Sleep(2 * time.Second)
		}
		row("screenshot PNG, live framebuffer, "+screen+" screen", get(""))
		row("screenshot PNG, hypervisor dump via API, "+screen+" screen", get("?source=display"))
		row("virsh screenshot, "+screen+" screen", virsh)
		row("screenshot JPEG 320 px, live framebuffer, "+screen+" screen", get("?format=jpeg&width=320&quality=60"))
	}
	s.guest(d, "pkill -x xterm")

	// Settle after a click that opens the Applications menu (closed
	// again with Escape between rounds).
	for _, src := range []struct{ name, q string }{{"live framebuffer's change reports", ""}, {"comparing screen dumps", "&source=display"}} {
		var took []time.Duration
		unsettled := 0
		for range n {
			s.computer(adminToken, d, map[string]any{"action": "key", "text": "Escape"})
			time.Sleep(1500 * time.Millisecond)
			s.computer(adminToken, d, map[string]any{"action": "left_click", "coordinate": []int{50, 12}})
			sh := s.shot(adminToken, base+"?settle=true"+src.q)
			if sh.settled != "true" {
				unsettled++
			}
			took = append(took, time.Duration(sh.settleMS)*time.Millisecond)
		}
		s.computer(adminToken, d, map[string]any{"action": "key", "text": "Escape"})
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		addRow(fmt.Sprintf("settled screenshot after a click (menu opens), on the %s: wait p50 / %s (%d runs, 300 ms quiet asked)", src.name, tail(n), n),
			fmt.Sprintf("%s / %s (%d not settled)", pct(took, 50), pct(took, 99), unsettled))
	}
}
