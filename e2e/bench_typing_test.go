//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestTypingRounds boots one desktop and types the benchmark's text in
// several rounds, printing chars/s for each (make bench-typing): typing
// speed follows the guest's speed, which varies from run to run, so two
// trees are compared by several rounds each, not one.
func TestTypingRounds(t *testing.T) {
	if os.Getenv("BUREAU_BENCH_TYPING") == "" {
		t.Skip("set BUREAU_BENCH_TYPING=1 (make bench-typing)")
	}
	s := newServer(t)
	run := s.benchDesktop("typing")
	path := "/api/v1/desktops/" + run.ID + "/computer"
	ascii := strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 ~!@#$%^&*()_+{}|:\"<>? ", 7)[:500]
	uni := strings.Repeat("日本語のテキスト、naïve café ", 5)
	fmt.Println("\n| round | 500 ASCII characters | 100 characters of mixed Unicode |\n|---|---|---|")
	for round := 1; round <= 4; round++ {
		s.catWindow(run, "100x20+50+50", "/tmp/bench-typed.txt")
		s.call(adminToken, "POST", path, map[string]any{"action": "left_click", "coordinate": []int{300, 150}}, nil)
		time.Sleep(time.Second)
		var rate [2]float64
		for i, text := range []string{ascii, uni} {
			begun := time.Now()
			benchCall(t, s, adminToken, "POST", path, map[string]any{"action": "type", "text": text}, nil)
			rate[i] = float64(len([]rune(text))) / time.Since(begun).Seconds()
		}
		fmt.Printf("| %d | %.0f chars/s | %.0f chars/s |\n", round, rate[0], rate[1])
		time.Sleep(time.Second)
		if got, _ := s.guest(run, "cat /tmp/bench-typed.txt"); got != strings.TrimSpace(ascii+uni) {
			t.Errorf("round %d: typing arrived wrong:\n got %q\nwant %q", round, got, ascii+uni)
		}
		s.guest(run, "pkill -x xterm")
	}
}

// benchDesktop creates a desktop of the benchmarks' size (2 vCPUs, 2 GiB),
// deleted with its data when the test ends, and waits until its session
// is drawn and the screen settled.
func (s *server) benchDesktop(name string) *apiv1.Desktop {
	s.t.Helper()
	var d apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": name, "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 4}, &d); code != http.StatusAccepted {
		s.t.Fatalf("create %s: %d", name, code)
	}
	s.t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil) })
	run := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(run, 10*time.Minute)
	s.waitGuest(run, "xfce", "pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop", 10*time.Minute)
	s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
	return run
}
