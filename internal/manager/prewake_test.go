package manager

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// hibernated creates a desktop and hibernates it.
func hibernated(t *testing.T, h *harness) *desktop.Desktop {
	t.Helper()
	d := h.settle(t, h.create(t, "pw").ID)
	h.m.Hibernate(context.Background(), d.ID, "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateHibernated {
		t.Fatalf("hibernate: %+v", got)
	}
	return d
}

// TestPrewakeRestoresPausedThenUseResumes: a likely use restores a
// hibernated desktop paused (it naps, with an event that says why); the
// use itself then only resumes the VM.
func TestPrewakeRestoresPausedThenUseResumes(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := hibernated(t, h)
	h.m.Prewake(ctx, d.ID, "console/t1", "console page opened")
	if got := h.settle(t, d.ID); got.State != desktop.StateNapping || h.hv.vm(d.DomainName()) != desktop.VMPaused {
		t.Fatalf("after prewake: %s, VM %s; want napping, paused", got.State, h.hv.vm(d.DomainName()))
	}
	evs, _ := h.m.Events(ctx, d.ID, 20)
	if !slices.ContainsFunc(evs, func(e *desktop.Event) bool {
		return e.Type == "napping" && strings.Contains(e.Message, "ahead of use (console page opened)")
	}) {
		t.Errorf("no event says why it was restored: %v", evs)
	}
	starts := h.called("Start")
	if got, err := h.m.Wake(ctx, d.ID, "console/t1"); err != nil || got.State != desktop.StateRunning {
		t.Fatalf("wake after prewake: %v %+v", err, got)
	}
	if h.called("Start") != starts || h.called("Resume") != 1 {
		t.Errorf("the use restored again instead of resuming: %v", h.hv.callList())
	}
}

// TestPrewakeLeavesOtherStatesAlone: only a hibernated desktop is
// restored ahead of use; a running or stopped one is not touched.
func TestPrewakeLeavesOtherStatesAlone(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "pw").ID)
	h.m.Prewake(ctx, d.ID, "alice", "console link made")
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning || h.called("StartPaused") != 0 {
		t.Fatalf("prewake of a running desktop: %s, calls %v", got.State, h.hv.callList())
	}
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	h.m.Prewake(ctx, d.ID, "alice", "console link made")
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped || h.called("StartPaused") != 0 {
		t.Fatalf("prewake of a stopped desktop: %s, calls %v", got.State, h.hv.callList())
	}
}

// TestFailedPrewakeStaysHibernated: a restore ahead of use that fails
// leaves the desktop hibernated with its save image, and says why; a use
// then restores it the usual way.
func TestFailedPrewakeStaysHibernated(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := hibernated(t, h)
	h.hv.fail("StartPaused")
	h.m.Prewake(ctx, d.ID, "alice", "console link made")
	got := h.settle(t, d.ID)
	if got.State != desktop.StateHibernated || h.hv.vm(d.DomainName()) != desktop.VMSaved {
		t.Fatalf("after a failed prewake: %s, VM %s", got.State, h.hv.vm(d.DomainName()))
	}
	evs, _ := h.m.Events(ctx, d.ID, 20)
	if !slices.ContainsFunc(evs, func(e *desktop.Event) bool { return e.Type == "prewake_failed" }) {
		t.Errorf("no prewake_failed event: %v", evs)
	}
	h.hv.fail("")
	if got, err := h.m.Wake(ctx, d.ID, "alice"); err != nil || got.State != desktop.StateRunning {
		t.Fatalf("wake after a failed prewake: %v %+v", err, got)
	}
}
