package manager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestDrainMovesEveryDesktopOffAHost(t *testing.T) {
	h, mv, _, _, running := newColdHarness(t)
	ctx := context.Background()
	h.m.moves.marks = h.store
	h.hostFree(t, "local", 8192)
	create := func(name string) *desktop.Desktop {
		d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: name, Actor: "test", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}})
		if err != nil {
			t.Fatal(err)
		}
		return h.settle(t, d.ID)
	}
	stopped, broken := create("stopped"), create("broken")
	if _, err := h.m.Stop(ctx, stopped.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, stopped.ID)
	h.hv.fail("Start")
	if _, err := h.m.Stop(ctx, broken.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, broken.ID)
	if _, err := h.m.Start(ctx, broken.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if b := h.settle(t, broken.ID); b.State != desktop.StateError {
		t.Fatalf("broken is %s", b.State)
	}

	st, err := h.m.Drain(ctx, "local", "test")
	if err != nil || st.Host != "local" {
		t.Fatalf("drain: %+v %v", st, err)
	}
	if again, err := h.m.Drain(ctx, "local", "test"); err != nil || !again.StartedAt.Equal(st.StartedAt) {
		t.Errorf("a second drain is the first: %+v %v", again, err)
	}
	// Placement passes the draining host over at once.
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "bob", Name: "new", Actor: "test", Host: "local",
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}}); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Errorf("a create on the draining host: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st = h.m.moves.DrainOf("local"); !st.Done; st = h.m.moves.DrainOf("local") {
		if time.Now().After(deadline) {
			t.Fatalf("the drain did not end: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Moved != 2 || len(st.Left) != 1 || !strings.Contains(st.Left[broken.ID], "it is error") || st.EndedAt == nil {
		t.Fatalf("drain ended: %+v", st)
	}
	for _, d := range []*desktop.Desktop{running, stopped} {
		d = h.settle(t, d.ID)
		if d.Host != "two" {
			t.Errorf("%s is on %s (%s, %q)", d.Name, d.Host, d.State, d.LastError)
		}
	}
	if len(mv.dests) != 1 {
		t.Errorf("the running desktop was not moved live: %v", mv.dests)
	}
	hs, _ := h.store.GetHost(ctx, "local")
	if !hs.Draining {
		t.Errorf("the host is no longer marked draining")
	}
	if err := h.m.moves.Undrain(ctx, "local", "test"); err != nil {
		t.Fatal(err)
	}
	if hs, _ := h.store.GetHost(ctx, "local"); hs.Draining {
		t.Errorf("still draining after undrain")
	}
	var ce *desktop.ConflictError
	h.m.moves.cold = nil
	if _, err := h.m.Drain(ctx, "two", "test"); !errors.As(err, &ce) {
		t.Errorf("a drain without cold moves: %v", err)
	}
}
