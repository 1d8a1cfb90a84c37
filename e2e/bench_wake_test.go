//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestWakeRounds compares the ways back from hibernation on one desktop,
// side by side (make bench-wake). Each round uses the desktop first (its
// page cache filled as work fills it), hibernates it and wakes it:
//   - saved as is (BUREAU_SAVE_AS_IS=1), woken by resume;
//   - saved after its page cache was dropped (the default), woken by resume;
//   - the same, restored paused ahead of use by a console link, then woken
//     by opening the console.
//
// It prints the medians of each: save image size, hibernate time, and the
// time from the wake until the desktop runs (for the console, until its
// display answers), the guest agent answers and the screen is settled.
func TestWakeRounds(t *testing.T) {
	if os.Getenv("BUREAU_BENCH_WAKE") == "" {
		t.Skip("set BUREAU_BENCH_WAKE=1 (make bench-wake)")
	}
	rounds := 3
	s := newServer(t)
	run := s.benchDesktop("wake")
	d := *run
	base := "/api/v1/desktops/" + d.ID
	pollState := func(want desktop.State) {
		t.Helper()
		var got apiv1.Desktop
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if benchCall(t, s, adminToken, "GET", base, nil, &got); got.State == string(want) {
				return
			}
		}
		t.Fatalf("desktop is %s, want %s", got.State, want)
	}
	savePath := "/var/lib/libvirt/qemu/save/" + domainOf(d.ID) + ".save"

	fmt.Println("\n| way back from hibernation (median of", rounds, "rounds) | save image | hibernate | wake → running | → guest agent answers | → settled screen |\n|---|---|---|---|---|---|")
	for _, v := range []struct {
		name    string
		env     []string
		console bool
	}{
		{"saved as is, resume", []string{"BUREAU_SAVE_AS_IS=1"}, false},
		{"page cache dropped first, resume", nil, false},
		{"page cache dropped first, restored ahead by a console link, console opened", nil, true},
	} {
		if !slices.Equal(s.env, v.env) {
			s.stop()
			s.env = v.env
			s.start()
		}
		var size []int64
		var hib, running, agent, screen, ahead []time.Duration
		for range rounds {
			// Work fills the page cache: read what a session would.
			s.guest(run, "cat /usr/bin/* /usr/lib/x86_64-linux-gnu/*.so* >/dev/null 2>&1; true")
			begun := time.Now()
			benchCall(t, s, adminToken, "POST", base+"/hibernate", nil, nil)
			pollState(desktop.StateHibernated)
			hib = append(hib, time.Since(begun))
			if fi, err := os.Stat(savePath); err == nil {
				size = append(size, fi.Size())
			}
			if v.console {
				begun = time.Now()
				g := s.openConsole(adminToken, &d, false)
				pollState(desktop.StateNapping)
				ahead = append(ahead, time.Since(begun))
				begun = time.Now()
				if w, _, _ := rfbServerInit(t, s.url, d.ID, g.Token); w == 0 {
					t.Fatalf("console: no display")
				}
			} else {
				begun = time.Now()
				benchCall(t, s, adminToken, "POST", base+"/resume", nil, nil)
				pollState(desktop.StateRunning)
			}
			running = append(running, time.Since(begun))
			benchCall(t, s, adminToken, "POST", base+"/exec", map[string]any{"argv": []string{"true"}}, nil)
			agent = append(agent, time.Since(begun))
			s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
			screen = append(screen, time.Since(begun))
		}
		name := v.name
		if len(ahead) > 0 {
			name += fmt.Sprintf(" (link → restored paused: %s)", median(ahead))
		}
		slices.Sort(size)
		fmt.Printf("| %s | %d MiB | %s | %s | %s | %s |\n", name, size[len(size)/2]>>20, median(hib), median(running), median(agent), median(screen))
	}
}

// median is the middle of ds, rounded for a table.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if m < time.Second {
		return m.Round(time.Millisecond)
	}
	return m.Round(10 * time.Millisecond)
}
