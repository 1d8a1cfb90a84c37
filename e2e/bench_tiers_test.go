//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// benchTiers walks the bench desktop down its idle tiers (nap after 10 s,
// sleep after 30 s, hibernate after 60 s) and wakes it from each with one
// API call, side by side: host memory held in the tier, wake → the guest
// agent answers (the call that woke it returns) and wake → a settled screen.
func benchTiers(t *testing.T, s *server, d *desktop.Desktop, addRow func(name, value string)) {
	base := "/api/v1/desktops/" + d.ID
	var got desktop.Desktop
	if code := s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 10, "sleep_after_seconds": 30, "idle_timeout_seconds": 60}, &got); code != http.StatusOK {
		t.Fatalf("set idle tiers: %d", code)
	}
	defer s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 0, "sleep_after_seconds": 0, "idle_timeout_seconds": 0}, nil)
	addRow("idle tiers: host memory running (QEMU RSS, 2 GiB guest)", fmt.Sprintf("%d MiB", s.rssKiB(d)/1024))
	for _, tier := range []desktop.State{desktop.StateNapping, desktop.StateSleeping, desktop.StateHibernated} {
		// Each wake starts a new quiet period: the desktop walks down
		// again, through the tiers above this one.
		s.waitState(adminToken, d.ID, tier, 5*time.Minute)
		held := "0 MiB (no QEMU process)"
		if tier != desktop.StateHibernated {
			held = fmt.Sprintf("%d MiB", s.rssKiB(d)/1024)
		}
		begun := time.Now()
		if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"argv": []string{"true"}}, nil); code != http.StatusOK {
			t.Fatalf("exec waking from %s: %d", tier, code)
		}
		agent := time.Since(begun)
		s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
		screen := time.Since(begun)
		addRow(fmt.Sprintf("%s: host memory / wake → guest agent answers / wake → settled screen", tier),
			fmt.Sprintf("%s / %s / %s", held, agent.Round(time.Millisecond), screen.Round(time.Millisecond)))
	}
}
