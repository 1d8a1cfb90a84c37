package manager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestIdleDesktopIsHibernated(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "idle").ID)
	if d.IdleTimeoutSeconds != desktop.DefaultIdleTimeout {
		t.Fatalf("default idle timeout = %d", d.IdleTimeoutSeconds)
	}
	now := time.Now()
	h.m.idle.check(ctx, now)
	h.hv.addCPU(time.Second) // 1 s of CPU in 29 min: idle
	h.m.idle.check(ctx, now.Add(29*time.Minute))
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("hibernated before its timeout: %s", got.State)
	}
	h.m.idle.check(ctx, now.Add(31*time.Minute))
	got := h.settle(t, d.ID)
	if got.State != desktop.StateHibernated {
		t.Fatalf("after 31 idle minutes: %s", got.State)
	}
	evs, _ := h.m.Events(ctx, d.ID, 20)
	var found bool
	for _, e := range evs {
		found = found || e.Type == "idle" && strings.Contains(e.Message, "no console viewers")
	}
	if !found {
		t.Errorf("no idle event: %v", evs)
	}
}

func TestBusyDesktopsStayRunning(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(h *harness, id string, now time.Time){
		"viewer": func(h *harness, id string, now time.Time) { h.m.AddViewer(id) },
		"cpu": func(h *harness, id string, now time.Time) {
			h.hv.addCPU(20 * time.Minute) // 20 of 40 minutes: 50 % of a CPU
		},
		"api action": func(h *harness, id string, now time.Time) {
			h.m.Touch(id)
			h.m.idle.quiet[id].since = now.Add(20 * time.Minute)
		},
		"never": func(h *harness, id string, now time.Time) {
			if _, err := h.m.SetIdleTiers(ctx, id, IdleTiers{HibernateAfter: new(0)}, "alice"); err != nil {
				panic(err)
			}
		},
	}
	for name, busy := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, &fakeDisks{})
			d := h.settle(t, h.create(t, "busy").ID)
			now := time.Now()
			h.m.idle.check(ctx, now)
			busy(h, d.ID, now)
			h.m.idle.check(ctx, now.Add(40*time.Minute))
			if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
				t.Errorf("%s: desktop %s", name, got.State)
			}
		})
	}
}

func TestViewerLeavingRestartsQuietPeriod(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "v").ID)
	done := h.m.AddViewer(d.ID)
	done()
	h.m.idle.check(ctx, time.Now().Add(10*time.Minute))
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Errorf("hibernated 10 minutes after the viewer left: %s", got.State)
	}
}

func TestSetIdleTimeoutValidates(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "v").ID)
	var ve *desktop.ValidationError
	for _, bad := range []int{-1, 5, 8 * 24 * 3600} {
		if _, err := h.m.SetIdleTiers(context.Background(), d.ID, IdleTiers{HibernateAfter: &bad}, "alice"); !errors.As(err, &ve) {
			t.Errorf("%d: %v", bad, err)
		}
	}
	got, err := h.m.SetIdleTiers(context.Background(), d.ID, IdleTiers{HibernateAfter: new(120)}, "alice")
	if err != nil || got.IdleTimeoutSeconds != 120 {
		t.Fatalf("set: %v %+v", err, got)
	}
	if again, _ := h.m.Get(context.Background(), d.ID); again.IdleTimeoutSeconds != 120 {
		t.Errorf("not stored: %d", again.IdleTimeoutSeconds)
	}
}

// TestQuietDesktopIsTrimmedOncePerQuietPeriod: a desktop quiet for
// TrimAfter has its page cache dropped once; use starts a new quiet period
// and so a new trim; a watched desktop is never trimmed.
func TestQuietDesktopIsTrimmedOncePerQuietPeriod(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "trim").ID)
	trims := func() int {
		h.m.ops.wg.Wait()
		n := 0
		for _, c := range h.hv.callList() {
			if c == "GuestExec "+d.DomainName() {
				n++
			}
		}
		return n
	}
	now := time.Now()
	h.m.idle.check(ctx, now)
	h.m.idle.check(ctx, now.Add(time.Minute))
	if n := trims(); n != 0 {
		t.Fatalf("trimmed after 1 quiet minute: %d", n)
	}
	h.m.idle.check(ctx, now.Add(3*time.Minute))
	h.m.idle.check(ctx, now.Add(5*time.Minute))
	if n := trims(); n != 1 {
		t.Fatalf("trims after 5 quiet minutes: %d, want 1", n)
	}
	h.m.Touch(d.ID)
	h.m.idle.quiet[d.ID].since = now.Add(6 * time.Minute) // as if used at minute 6
	h.m.idle.check(ctx, now.Add(7*time.Minute))
	if n := trims(); n != 1 {
		t.Fatalf("trimmed 1 minute after use: %d", n)
	}
	h.m.idle.check(ctx, now.Add(9*time.Minute))
	if n := trims(); n != 2 {
		t.Fatalf("trims after use and 3 more quiet minutes: %d, want 2", n)
	}
	done := h.m.AddViewer(d.ID)
	defer done()
	h.m.idle.quiet[d.ID].since = now.Add(15 * time.Minute) // quiet since minute 15
	h.m.idle.check(ctx, now.Add(20*time.Minute))
	if n := trims(); n != 2 {
		t.Fatalf("a desktop with a viewer was trimmed: %d", n)
	}
}

// TestSettingsAndStateNeverUndoEachOther: a setting changed while an
// operation runs survives the operation saving the copy it began with, and
// the operation's new state survives a setting written from an older read
// (the e2e burst of PATCH and pause left a desktop "pausing" for good).
func TestSettingsAndStateNeverUndoEachOther(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	opCopy, _ := h.m.Get(ctx, d.ID) // what an operation began with
	if _, err := h.m.SetIdleTiers(ctx, d.ID, IdleTiers{HibernateAfter: new(600)}, "alice"); err != nil {
		t.Fatal(err)
	}
	opCopy.State = desktop.StatePaused
	if err := h.m.ops.put(ctx, opCopy); err != nil {
		t.Fatal(err)
	}
	got, _ := h.m.Get(ctx, d.ID)
	if got.IdleTimeoutSeconds != 600 || got.State != desktop.StatePaused {
		t.Fatalf("after a setting, then an operation's save: idle %d, state %s", got.IdleTimeoutSeconds, got.State)
	}
	// A setting written alone never carries state with it.
	if _, err := h.m.SetRestartOnCrash(ctx, d.ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	got, _ = h.m.Get(ctx, d.ID)
	if got.State != desktop.StatePaused || !got.RestartOnCrash {
		t.Fatalf("after a setting from an older read: state %s, restart %t", got.State, got.RestartOnCrash)
	}
}
