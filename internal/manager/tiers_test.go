package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// tiered creates a running desktop that naps after 1 min, sleeps after 5
// and hibernates after 30.
func tiered(t *testing.T, h *harness) *desktop.Desktop {
	t.Helper()
	d := h.settle(t, h.create(t, "tiers").ID)
	d, err := h.m.SetIdleTiers(context.Background(), d.ID, IdleTiers{NapAfter: new(60), SleepAfter: new(300)}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (h *harness) called(method string) int {
	n := 0
	for _, c := range h.hv.callList() {
		if strings.HasPrefix(c, method+" ") {
			n++
		}
	}
	return n
}

// TestQuietDesktopWalksDownTheTiers: quiet long enough, a desktop naps
// (guest trimmed, then paused), sleeps (memory pushed out) and hibernates,
// each step with an event saying why; its VM follows.
func TestQuietDesktopWalksDownTheTiers(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := tiered(t, h)
	now := time.Now()
	h.m.idle.check(ctx, now)
	h.m.idle.check(ctx, now.Add(59*time.Second))
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("after 59 quiet seconds: %s", got.State)
	}
	for _, step := range []struct {
		at    time.Duration
		state desktop.State
		vm    desktop.VMState
	}{
		{61 * time.Second, desktop.StateNapping, desktop.VMPaused},
		{4 * time.Minute, desktop.StateNapping, desktop.VMPaused},
		{301 * time.Second, desktop.StateSleeping, desktop.VMPaused},
		{31 * time.Minute, desktop.StateHibernated, desktop.VMSaved},
	} {
		h.m.idle.check(ctx, now.Add(step.at))
		if got := h.settle(t, d.ID); got.State != step.state || h.hv.vm(d.DomainName()) != step.vm {
			t.Fatalf("after %s quiet: desktop %s, VM %s; want %s, %s", step.at, got.State, h.hv.vm(d.DomainName()), step.state, step.vm)
		}
	}
	if n := h.called("GuestExec"); n != 1 {
		t.Errorf("guest trims before the nap: %d, want 1", n)
	}
	if n := h.called("Reclaim"); n != 1 {
		t.Errorf("memory pushed out %d times, want 1", n)
	}
	evs, _ := h.m.Events(ctx, d.ID, 50)
	for _, tier := range []string{"napping", "sleeping", "hibernating"} {
		if !slices.ContainsFunc(evs, func(e *desktop.Event) bool {
			return e.Type == "idle" && strings.HasSuffix(e.Message, "; "+tier) && strings.Contains(e.Message, "no console viewers")
		}) {
			t.Errorf("no idle event for %s: %v", tier, evs)
		}
	}
}

// TestUseWakesEveryTier: Wake brings a napping or sleeping desktop back at
// once and restarts its quiet period, so the next check leaves it running.
func TestUseWakesEveryTier(t *testing.T) {
	for _, tier := range []struct {
		at    time.Duration
		state desktop.State
	}{{2 * time.Minute, desktop.StateNapping}, {6 * time.Minute, desktop.StateSleeping}} {
		t.Run(string(tier.state), func(t *testing.T) {
			h := newHarness(t, &fakeDisks{})
			ctx := context.Background()
			d := tiered(t, h)
			now := time.Now()
			h.m.idle.check(ctx, now)
			h.m.idle.quiet[d.ID].since = now.Add(-tier.at)
			h.m.idle.check(ctx, now)
			h.settle(t, d.ID)
			if tier.state == desktop.StateSleeping {
				h.m.idle.check(ctx, now) // napping → sleeping
			}
			if got := h.settle(t, d.ID); got.State != tier.state {
				t.Fatalf("state %s, want %s", got.State, tier.state)
			}
			got, err := h.m.Wake(ctx, d.ID, "alice")
			if err != nil || got.State != desktop.StateRunning || h.hv.vm(d.DomainName()) != desktop.VMRunning {
				t.Fatalf("wake from %s: %v %+v", tier.state, err, got)
			}
			h.m.idle.check(ctx, time.Now().Add(30*time.Second))
			if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
				t.Errorf("30 s after waking from %s: %s", tier.state, got.State)
			}
			evs, _ := h.m.Events(ctx, d.ID, 50)
			if !slices.ContainsFunc(evs, func(e *desktop.Event) bool { return e.Type == "resumed" && strings.Contains(e.Message, "resumed from") }) {
				t.Errorf("no resumed event: %v", evs)
			}
		})
	}
}

// TestSleepWithoutSwapNaps: a host that cannot take the memory (no swap)
// leaves the desktop napping, says why once, and does not try again at
// every check.
func TestSleepWithoutSwapNaps(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := tiered(t, h)
	h.hv.fail("Reclaim")
	now := time.Now()
	h.m.idle.check(ctx, now)
	h.m.idle.check(ctx, now.Add(6*time.Minute))
	h.settle(t, d.ID)
	h.m.idle.check(ctx, now.Add(7*time.Minute))
	h.m.idle.check(ctx, now.Add(8*time.Minute))
	got := h.settle(t, d.ID)
	if got.State != desktop.StateNapping || h.hv.vm(d.DomainName()) != desktop.VMPaused {
		t.Fatalf("desktop %s, VM %s", got.State, h.hv.vm(d.DomainName()))
	}
	if n := h.called("Reclaim"); n != 1 {
		t.Errorf("tried to push memory out %d times", n)
	}
	evs, _ := h.m.Events(ctx, d.ID, 50)
	if !slices.ContainsFunc(evs, func(e *desktop.Event) bool {
		return e.Type == "sleep_failed" && strings.Contains(e.Message, "napping instead")
	}) {
		t.Errorf("no sleep_failed event: %v", evs)
	}
}

// TestViewerKeepsTiersAway: a desktop with a console viewer never naps.
func TestViewerKeepsTiersAway(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := tiered(t, h)
	done := h.m.AddViewer(d.ID)
	defer done()
	h.m.idle.check(ctx, time.Now().Add(10*time.Minute))
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("with a viewer: %s", got.State)
	}
}

// TestUseDuringTheTrimCallsTheNapOff: use while the guest is trimmed before
// a nap keeps the desktop running.
func TestUseDuringTheTrimCallsTheNapOff(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := tiered(t, h)
	h.m.idle.check(ctx, time.Now())
	h.m.idle.quiet[d.ID].since = time.Now().Add(-2 * time.Minute)
	h.m.idle.mu.Lock()
	since := h.m.idle.quiet[d.ID].since
	h.m.idle.mu.Unlock()
	h.m.Touch(d.ID) // as if an API call came during the trim
	if h.m.idle.stillQuiet(d.ID, since) {
		t.Fatal("still quiet after use")
	}
	h.m.idle.lower(d, tierAwake, tierNap, 2*time.Minute, since)
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("napped although used: %s", got.State)
	}
}

func TestIdleTiersValidate(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "v").ID)
	var ve *desktop.ValidationError
	for _, bad := range []IdleTiers{
		{NapAfter: new(5)},                         // too short
		{NapAfter: new(600), SleepAfter: new(300)}, // out of order
		{SleepAfter: new(3600)},                    // after hibernation (1800)
		{NapAfter: new(-1)},
	} {
		if _, err := h.m.SetIdleTiers(context.Background(), d.ID, bad, "alice"); !errors.As(err, &ve) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	got, err := h.m.SetIdleTiers(context.Background(), d.ID, IdleTiers{NapAfter: new(30), SleepAfter: new(0)}, "alice")
	if err != nil || got.NapAfterSeconds != 30 || got.SleepAfterSeconds != 0 || got.IdleTimeoutSeconds != desktop.DefaultIdleTimeout {
		t.Fatalf("set: %v %+v", err, got)
	}
}

// TestWakeOfARunningDesktopReturnsAtOnce: a running desktop is not waited
// on, even while an operation holds it (the console connects during a
// snapshot).
func TestWakeOfARunningDesktopReturnsAtOnce(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "run").ID)
	if err := h.m.ops.lock(d.ID, "snapshot"); err != nil {
		t.Fatal(err)
	}
	defer h.m.ops.unlock(d.ID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := h.m.Wake(ctx, d.ID, "alice"); err != nil || got.State != desktop.StateRunning {
		t.Fatalf("wake of a running, busy desktop: %v %+v", err, got)
	}
}
