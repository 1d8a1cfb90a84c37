//go:build e2e

package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// testConcurrency fires 50 mixed requests at one desktop at once: each is
// served or refused (409 busy / invalid state, 429), none fails with 5xx,
// and the desktop ends in a state its VM agrees with.
func testConcurrency(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	reqs := []struct{ method, path string }{
		{"POST", base + "/pause"}, {"POST", base + "/resume"}, {"GET", base}, {"GET", base + "/screenshot"},
		{"POST", base + "/snapshots/none/revert"}, {"GET", base + "/events"}, {"POST", base + "/hibernate"},
		{"GET", base + "/stats"}, {"GET", "/api/v1/desktops"}, {"PATCH", base},
	}
	var wg sync.WaitGroup
	codes := make(chan string, 50)
	for i := range 50 {
		r := reqs[i%len(reqs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body any
			if r.method == "PATCH" {
				body = map[string]any{"idle_timeout_seconds": 1800}
			}
			var out []byte
			code := s.call(token, r.method, r.path, body, &out)
			codes <- fmt.Sprintf("%d %s %s", code, r.method, r.path)
			if code >= 500 {
				t.Errorf("%s %s: %d %s", r.method, r.path, code, out)
			}
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		var code int
		fmt.Sscan(c, &code)
		count[code]++
	}
	t.Logf("50 concurrent requests: %v", count)
	// Settle: whatever won, bring the desktop back to running.
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var cur apiv1.Desktop
		s.call(token, "GET", base, nil, &cur)
		switch desktop.State(cur.State) {
		case desktop.StatePaused, desktop.StateHibernated:
			s.call(token, "POST", base+"/resume", nil, nil)
		case desktop.StateRunning:
			if st := s.vmState(d); st != desktop.VMRunning {
				t.Fatalf("desktop says running, VM is %s", st)
			}
			s.waitAgent(d, 5*time.Minute)
			s.waitGuest(d, "Xfce after the storm", "pgrep -u agent -x xfce4-panel", 5*time.Minute)
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatal("desktop did not settle running after the concurrent requests")
}
