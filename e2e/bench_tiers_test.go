//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// benchTiers walks the bench desktop down its idle tiers (nap after 10 s,
// sleep after 30 s, hibernate after 60 s) and wakes it from each with
// resume, side by side: host memory held in the tier, wake → running
// (resume returned, or the desktop shows running), → the guest agent
// answers (an exec of true returns) and → a settled screen.
func benchTiers(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	base := "/api/v1/desktops/" + d.ID
	var got apiv1.Desktop
	if code := s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 10, "sleep_after_seconds": 30, "idle_timeout_seconds": 60}, &got); code != http.StatusOK {
		t.Fatalf("set idle tiers: %d", code)
	}
	defer s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 0, "sleep_after_seconds": 0, "idle_timeout_seconds": 0}, nil)
	// Host memory: QEMU's resident set, and what of it the desktop holds
	// alone (pages KSM shares with other desktops stay resident when one
	// of them sleeps, but cost it nothing).
	mem := func() string { return fmt.Sprintf("%d / %d MiB", s.rssKiB(d)/1024, s.privateKiB(d)/1024) }
	addRow("idle tiers: host memory running (QEMU RSS / held alone, 2 GiB guest)", mem())
	for _, tier := range []desktop.State{desktop.StateNapping, desktop.StateSleeping, desktop.StateHibernated} {
		// Each wake starts a new quiet period: the desktop walks down
		// again, through the tiers above this one.
		s.waitState(adminToken, d.ID, tier, 5*time.Minute)
		held := "0 MiB (no QEMU process)"
		if tier != desktop.StateHibernated {
			held = mem()
		}
		begun := time.Now()
		benchCall(t, s, adminToken, "POST", base+"/resume", nil, nil)
		for time.Since(begun) < 3*time.Minute {
			if benchCall(t, s, adminToken, "GET", base, nil, &got); got.State == string(desktop.StateRunning) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got.State != string(desktop.StateRunning) {
			t.Fatalf("woken from %s: still %s after 3 minutes", tier, got.State)
		}
		running := time.Since(begun)
		benchCall(t, s, adminToken, "POST", base+"/exec", map[string]any{"argv": []string{"true"}}, nil)
		agent := time.Since(begun)
		s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
		screen := time.Since(begun)
		addRow(fmt.Sprintf("%s: host memory (RSS / held alone) / wake → running / → guest agent answers / → settled screen", tier),
			fmt.Sprintf("%s / %s / %s / %s", held, running.Round(time.Millisecond), agent.Round(time.Millisecond), screen.Round(time.Millisecond)))
	}
}
