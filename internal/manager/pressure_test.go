package manager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

type fakeMemory struct{ avail int }

func (f *fakeMemory) AvailableMemoryMiB() (int, error) { return f.avail, nil }

// TestMemoryPressureMovesTheLongestIdleFirst: with the host short of
// memory, each check moves the longest-idle desktop one tier down that
// frees memory (running → sleeping → hibernated) and says why; a desktop
// used within the last minute is never frozen, and nothing moves once the
// host has memory again.
func TestMemoryPressureMovesTheLongestIdleFirst(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	mem := &fakeMemory{avail: 100}
	h.m.idle.memory, h.m.idle.lowMiB = mem, 1024
	off := IdleTiers{NapAfter: new(0), SleepAfter: new(0), HibernateAfter: new(0)} // only pressure moves them
	var ids []string
	for _, name := range []string{"oldest", "newer", "busy"} {
		d := h.settle(t, h.create(t, name).ID)
		if _, err := h.m.SetIdleTiers(ctx, d.ID, off, "alice"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	now := time.Now()
	h.m.idle.check(ctx, now) // first sight: quiet periods begin now
	h.m.idle.mu.Lock()
	h.m.idle.quiet[ids[0]].since = now.Add(-10 * time.Minute)
	h.m.idle.quiet[ids[1]].since = now.Add(-5 * time.Minute)
	h.m.idle.quiet[ids[2]].since = now.Add(-10 * time.Second)
	h.m.idle.mu.Unlock()
	states := func() []desktop.State {
		var out []desktop.State
		for _, id := range ids {
			out = append(out, h.settle(t, id).State)
		}
		return out
	}
	R, S, H := desktop.StateRunning, desktop.StateSleeping, desktop.StateHibernated
	for i, want := range [][]desktop.State{{S, R, R}, {H, R, R}, {H, S, R}, {H, H, R}, {H, H, R}} {
		h.m.idle.check(ctx, now.Add(time.Duration(i+1)*time.Second))
		if got := states(); !slices.Equal(got, want) {
			t.Fatalf("check %d under pressure: %v, want %v", i+1, got, want)
		}
	}
	evs, _ := h.m.Events(ctx, ids[0], 50)
	if !slices.ContainsFunc(evs, func(e *desktop.Event) bool {
		return e.Type == "pressure" && strings.Contains(e.Message, "host memory low (100 MiB available, under 1024 MiB)")
	}) {
		t.Errorf("no pressure event: %v", evs)
	}

	// Memory back: the busy desktop, now quiet long enough, stays running.
	mem.avail = 4096
	h.m.idle.mu.Lock()
	h.m.idle.quiet[ids[2]].since = now.Add(-time.Hour)
	h.m.idle.mu.Unlock()
	h.m.idle.check(ctx, now.Add(10*time.Second))
	if got := h.settle(t, ids[2]).State; got != R {
		t.Errorf("moved down with memory to spare: %s", got)
	}
}
