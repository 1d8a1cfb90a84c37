//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// checkIdleTiers walks a desktop down every idle tier by idle time (short
// timeouts: nap after 10 s, sleep after 30 s, hibernate after 60 s) and
// wakes it from each: by an API call, a live-URL request, and for
// hibernation a console link (which restores it paused ahead of use) and
// then the console itself. Its marker file and a background process are
// there every time, a sleeping desktop holds far less host memory than a
// napping one, and the events say why each step happened.
func checkIdleTiers(t *testing.T, s *server, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	run := func(script string) (string, time.Duration) {
		t.Helper()
		var res struct{ Stdout string }
		begun := time.Now()
		if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"argv": []string{"/bin/sh", "-c", script}}, &res); code != http.StatusOK {
			t.Fatalf("exec %q: %d", script, code)
		}
		return strings.TrimSpace(res.Stdout), time.Since(begun)
	}
	pid, _ := run("echo tiers > /tmp/tier-marker; setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!")
	intact := func(tier string) {
		t.Helper()
		if out, _ := run("cat /tmp/tier-marker; kill -0 " + pid + " && echo alive"); out != "tiers\nalive" {
			t.Errorf("after waking from %s: marker and process %q", tier, out)
		}
	}
	var sv serviceInfo
	if code := s.call(adminToken, "POST", base+"/services", map[string]any{"name": "tierweb", "cmd": "exec python3 -m http.server 8126", "port": 8126}, &sv); code != http.StatusCreated {
		t.Fatalf("create service: %d", code)
	}
	defer s.call(adminToken, "DELETE", base+"/services/tierweb", nil, nil)
	liveURL := s.url + "/preview/" + d.ID + "/8126/"
	deadline := time.Now().Add(time.Minute)
	for code, _ := fetch(t, http.DefaultClient, "GET", liveURL, "", adminToken, nil); code != http.StatusOK; code, _ = fetch(t, http.DefaultClient, "GET", liveURL, "", adminToken, nil) {
		if time.Now().After(deadline) {
			t.Fatalf("the service's URL answers %d", code)
		}
		time.Sleep(time.Second)
	}

	var got apiv1.Desktop
	if code := s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 10, "sleep_after_seconds": 30, "idle_timeout_seconds": 60}, &got); code != http.StatusOK ||
		got.NapAfterSeconds != 10 || got.SleepAfterSeconds != 30 || got.IdleTimeoutSeconds != 60 {
		t.Fatalf("set idle tiers: %d %+v", code, got)
	}
	defer s.call(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 0, "sleep_after_seconds": 0, "idle_timeout_seconds": 0}, nil)
	s.expectError(adminToken, "PATCH", base, map[string]any{"nap_after_seconds": 40}, http.StatusUnprocessableEntity, "invalid")

	// Nap: paused with its memory resident; an API call wakes it.
	s.waitState(adminToken, d.ID, desktop.StateNapping, 3*time.Minute)
	napRSS, napOwn := s.rssKiB(d), s.privateKiB(d)
	_, napWake := run("true")
	intact("a nap")

	// Sleep: memory pushed out; a request to a live URL wakes it.
	s.waitState(adminToken, d.ID, desktop.StateSleeping, 3*time.Minute)
	// Pages KSM shares with other desktops stay resident when asleep (a
	// shared page is not paged out) but cost this desktop nothing: compare
	// what it holds alone.
	sleepRSS, sleepOwn := s.rssKiB(d), s.privateKiB(d)
	if sleepOwn*2 > napOwn {
		t.Errorf("sleeping, the desktop holds %d MiB of host memory alone; napping %d MiB", sleepOwn/1024, napOwn/1024)
	}
	begun := time.Now()
	if code, _ := fetch(t, http.DefaultClient, "GET", liveURL, "", adminToken, nil); code != http.StatusOK {
		t.Errorf("the live URL of a sleeping desktop: %d", code)
	}
	sleepWake := time.Since(begun)
	intact("sleep")

	// Hibernation after the long idle time. Making a console link restores
	// it paused ahead of use (it naps), and opening the console wakes it.
	s.waitState(adminToken, d.ID, desktop.StateHibernated, 5*time.Minute)
	g := s.openConsole(adminToken, d, false)
	begun = time.Now()
	s.waitState(adminToken, d.ID, desktop.StateNapping, 2*time.Minute)
	prewake := time.Since(begun)
	begun = time.Now()
	if w, h, _ := rfbServerInit(t, s.url, d.ID, g.Token); w == 0 || h == 0 {
		t.Errorf("console of a desktop restored ahead of use: %dx%d", w, h)
	}
	consoleWake := time.Since(begun)
	if code := s.call(adminToken, "GET", base, nil, &got); code != http.StatusOK || got.State != string(desktop.StateRunning) {
		t.Errorf("after the console opened, the desktop is %s", got.State)
	}
	intact("hibernation")
	t.Logf("idle tiers: host memory (QEMU RSS / held alone) napping %d / %d MiB, sleeping %d / %d MiB; wake → exec answered from a nap %s, live URL served from sleep %s; "+
		"hibernated: console link → restored paused %s, console opened → display answered %s",
		napRSS/1024, napOwn/1024, sleepRSS/1024, sleepOwn/1024, napWake.Round(time.Millisecond), sleepWake.Round(time.Millisecond), prewake.Round(time.Millisecond), consoleWake.Round(time.Millisecond))

	var evs struct{ Events []apiv1.Event }
	s.call(adminToken, "GET", base+"/events?limit=200", nil, &evs)
	for _, tier := range []string{"napping", "sleeping", "hibernating"} {
		found := false
		for _, e := range evs.Events {
			found = found || e.Type == "idle" && strings.Contains(e.Message, "idle for") && strings.HasSuffix(e.Message, "; "+tier)
		}
		if !found {
			t.Errorf("no idle event says why the desktop went %s", tier)
		}
	}
	ahead := false
	for _, e := range evs.Events {
		ahead = ahead || e.Type == "napping" && strings.Contains(e.Message, "restored paused ahead of use (console link made)")
	}
	if !ahead {
		t.Errorf("no event says the console link restored the desktop ahead of use")
	}
}

// rssKiB is the host memory the desktop's QEMU process holds.
func (s *server) rssKiB(d *apiv1.Desktop) int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.hv.DomainStats(ctx, domainOf(d.ID))
	if err != nil {
		s.t.Fatalf("stats of %s: %v", d.Name, err)
	}
	return int64(st.MemoryRSSKiB)
}

// privateKiB is the host memory only the desktop's QEMU process holds
// (resident and not shared with other desktops through KSM).
func (s *server) privateKiB(d *apiv1.Desktop) int64 {
	s.t.Helper()
	kib, err := s.hv.PrivateKiB(domainOf(d.ID))
	if err != nil {
		s.t.Fatalf("memory of %s: %v", d.Name, err)
	}
	return kib
}

// checkMemoryPressure restarts bureau with a test-only low-memory mark
// above what the host has: the longest-idle desktop (first, unused since
// the restart) is put to sleep while the one in use (second) keeps
// running, with an event that says why. bureau then restarts as before
// and first is woken.
func checkMemoryPressure(t *testing.T, s *server, first, second *apiv1.Desktop) {
	s.stop()
	s.env = []string{"BUREAU_MEMORY_LOW_MIB=1000000"}
	s.start()
	defer func() {
		s.stop()
		s.env = nil
		s.start()
		s.call(adminToken, "POST", "/api/v1/desktops/"+first.ID+"/exec", map[string]any{"argv": []string{"true"}}, nil) // wakes it
	}()
	// second is used every few seconds; first, never. Pressure moves first
	// one tier per check (every 3 s here): to sleep, then to hibernation.
	deadline := time.Now().Add(3 * time.Minute)
	var got apiv1.Desktop
	for time.Now().Before(deadline) {
		if code := s.call(adminToken, "POST", "/api/v1/desktops/"+second.ID+"/exec", map[string]any{"argv": []string{"true"}}, nil); code != http.StatusOK {
			t.Fatalf("exec in the desktop in use: %d", code)
		}
		s.call(adminToken, "GET", "/api/v1/desktops/"+first.ID, nil, &got)
		if got.State == string(desktop.StateSleeping) || got.State == string(desktop.StateHibernated) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	if got.State != string(desktop.StateSleeping) && got.State != string(desktop.StateHibernated) {
		t.Fatalf("under memory pressure the longest-idle desktop is %s, want sleeping (then hibernated)", got.State)
	}
	var other apiv1.Desktop
	if s.call(adminToken, "GET", "/api/v1/desktops/"+second.ID, nil, &other); other.State != string(desktop.StateRunning) {
		t.Errorf("the desktop in use is %s under memory pressure", other.State)
	}
	pressure := func(d *apiv1.Desktop) []string {
		var evs struct{ Events []apiv1.Event }
		s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
		var out []string
		for _, e := range evs.Events {
			if e.Type == "pressure" {
				out = append(out, e.Message)
			}
		}
		return out
	}
	slept := false
	for _, m := range pressure(first) {
		slept = slept || strings.Contains(m, "host memory low") && strings.HasSuffix(m, "goes sleeping")
	}
	if !slept {
		t.Errorf("no pressure event put the idle desktop to sleep: %q", pressure(first))
	}
	if evs := pressure(second); len(evs) > 0 {
		t.Errorf("memory pressure moved the desktop in use: %q", evs)
	}
}
