package manager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestConcurrentOperationsOnManyDesktops fires 400 mixed lifecycle
// operations, 50 at a time, at 8 desktops: each is done or refused with a
// reason a client can act on (busy, wrong state, unknown or taken name),
// never an internal error; afterwards every desktop's recorded state is
// its VM's, and no snapshot name is listed twice.
func TestConcurrentOperationsOnManyDesktops(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	var ids []string
	for i := range 8 {
		ids = append(ids, h.settle(t, h.create(t, fmt.Sprintf("c%d", i)).ID).ID)
	}
	no := false
	ops := []func(id string, n int) error{
		func(id string, _ int) error { _, err := h.m.Pause(ctx, id, "alice"); return err },
		func(id string, _ int) error { _, err := h.m.Resume(ctx, id, "alice"); return err },
		func(id string, _ int) error { _, err := h.m.Hibernate(ctx, id, "alice"); return err },
		func(id string, _ int) error {
			_, err := h.m.Stop(ctx, id, "alice", StopOptions{Force: true})
			return err
		},
		func(id string, _ int) error { _, err := h.m.Start(ctx, id, "alice"); return err },
		func(id string, _ int) error { _, err := h.m.Reboot(ctx, id, "alice"); return err },
		func(id string, n int) error {
			_, err := h.m.Snapshots().CreateSnapshot(ctx, id, SnapshotRequest{Name: fmt.Sprintf("s%d", n%3), Memory: &no})
			return err
		},
		func(id string, n int) error {
			_, err := h.m.Snapshots().RevertSnapshot(ctx, id, fmt.Sprintf("s%d", n%3), "alice")
			return err
		},
		func(id string, n int) error {
			return h.m.Snapshots().DeleteSnapshot(ctx, id, fmt.Sprintf("s%d", n%3), "alice")
		},
		func(id string, _ int) error { _, err := h.m.Wake(ctx, id, "alice"); return err },
		func(id string, _ int) error { _, err := h.m.Get(ctx, id); return err },
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		done   = map[string]int{}
		sem    = make(chan struct{}, 50)
		failed []string
	)
	for n := range 400 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			time.Sleep(rand.N(40 * time.Millisecond)) // interleave with running operations
			id, op := ids[rand.IntN(len(ids))], rand.IntN(len(ops))
			err := ops[op](id, n)
			mu.Lock()
			defer mu.Unlock()
			if msg := unexpected(err); msg != "" {
				failed = append(failed, fmt.Sprintf("op %d on %s: %s", op, id, msg))
			}
			done[fmt.Sprintf("op%d ok=%t", op, err == nil)]++
		}()
	}
	wg.Wait()
	for _, f := range failed {
		t.Error(f)
	}
	t.Logf("outcomes: %v", done)
	for _, id := range ids {
		d := h.settle(t, id)
		deadline := time.Now().Add(5 * time.Second)
		for (d.State == desktop.StateResuming || d.State == desktop.StateStopping) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			d = h.settle(t, id)
		}
		want := map[desktop.State]desktop.VMState{desktop.StateRunning: desktop.VMRunning, desktop.StatePaused: desktop.VMPaused,
			desktop.StateHibernated: desktop.VMSaved, desktop.StateStopped: desktop.VMShutoff}[d.State]
		if got := h.hv.vm(d.DomainName()); want == "" || got != want {
			t.Errorf("desktop %s is %s (%s) but its VM is %s", id, d.State, d.LastError, got)
		}
		snaps, err := h.m.Snapshots().ListSnapshots(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, s := range snaps {
			if seen[s.Name] {
				t.Errorf("desktop %s lists snapshot %s twice", id, s.Name)
			}
			seen[s.Name] = true
		}
	}
}

// unexpected describes an error a client could not act on ("" if err is
// nil or one it can).
func unexpected(err error) string {
	var te *desktop.TransitionError
	var ve *desktop.ValidationError
	var ce *desktop.ConflictError
	switch {
	case err == nil, errors.Is(err, desktop.ErrBusy), errors.Is(err, desktop.ErrNotFound), errors.Is(err, desktop.ErrNameTaken),
		errors.As(err, &te), errors.As(err, &ve), errors.As(err, &ce):
		return ""
	}
	return err.Error()
}
