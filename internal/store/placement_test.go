package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/placement"
)

var errHostFull = errors.New("host full")

// Twenty owners creating at once on one host with room for three: the
// host's row is locked from the load read to the insert, so exactly three
// are recorded (each owner's own quota lock would not serialize them).
func TestCreatesPlacedOnOneHostNeverOverfillIt(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			if err := s.InsertHost(ctx, &hosts.Host{Name: "two", URI: "qemu+tcp://127.0.0.1:1/system", State: hosts.StateUp, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			fits := func(l placement.Load) error {
				if l.CommittedMiB+2048 > 3*2048 {
					return errHostFull
				}
				return nil
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			made, full := 0, 0
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d := newDesktop(fmt.Sprint("p", i), fmt.Sprint("owner", i), "d")
					d.Host = "two"
					err := s.CreateDesktopChecked(ctx, d, func(*desktop.Quota, desktop.Usage) error { return nil }, fits)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						made++
					case errors.Is(err, errHostFull):
						full++
					default:
						t.Errorf("create %d: %v", i, err)
					}
				}()
			}
			wg.Wait()
			if made != 3 || full != 17 {
				t.Fatalf("20 creates against room for 3: %d made, %d refused", made, full)
			}
			loads, err := s.HostLoads(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := placement.Load{Desktops: 3, CommittedMiB: 3 * 2048, PendingMiB: 3 * 2048, Creating: 3}
			if loads["two"] != want {
				t.Errorf("load of two: %+v, want %+v", loads["two"], want)
			}
			// Stopped desktops hold no RAM; running ones are no longer
			// pending.
			ds, err := s.ListDesktops(ctx, desktop.Filter{Host: "two"})
			if err != nil || len(ds) != 3 {
				t.Fatalf("desktops on two: %d, %v", len(ds), err)
			}
			ds[0].State, ds[1].State = desktop.StateStopped, desktop.StateRunning
			for _, d := range ds[:2] {
				if err := s.UpdateDesktop(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			loads, _ = s.HostLoads(ctx)
			if want := (placement.Load{Desktops: 3, CommittedMiB: 2 * 2048, PendingMiB: 2048, Creating: 1}); loads["two"] != want {
				t.Errorf("load of two after a stop and a start: %+v, want %+v", loads["two"], want)
			}
			d := newDesktop("nohost", "x", "d")
			d.Host = "nowhere"
			err = s.CreateDesktopChecked(ctx, d, func(*desktop.Quota, desktop.Usage) error { return nil }, fits)
			if !errors.Is(err, hosts.ErrNotFound) {
				t.Errorf("a create on an unknown host: %v", err)
			}
		})
	}
}

// A running desktop moving to another host counts there (arriving, so
// pending) from its reservation until the move is recorded or ends; a
// reservation is refused, under the destination's row lock, when it does
// not fit.
func TestAMoveReservesItsDestination(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			for _, name := range []string{"local", "two"} {
				if err := s.InsertHost(ctx, &hosts.Host{Name: name, URI: "qemu+tcp://" + name + "/system", State: hosts.StateUp, CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			d := newDesktop("mover", "alice", "m")
			d.Host, d.State = "local", desktop.StateMigrating
			if err := s.CreateDesktop(ctx, d); err != nil {
				t.Fatal(err)
			}
			full := func(l placement.Load) error {
				if l.CommittedMiB > 0 {
					return errHostFull
				}
				return nil
			}
			var seen placement.Load
			fits := func(l placement.Load) error { seen = l; return nil }
			if err := s.ReserveMove(ctx, d.ID, "two", fits); err != nil || seen != (placement.Load{}) {
				t.Fatalf("reserve on an empty host: %v, load seen %+v", err, seen)
			}
			mem := int64(d.MemoryMiB)
			loads, _ := s.HostLoads(ctx)
			if want := (placement.Load{Desktops: 1, CommittedMiB: mem, PendingMiB: mem}); loads["two"] != want || loads["local"].CommittedMiB != mem {
				t.Errorf("loads during the move: two %+v (want %+v), local %+v", loads["two"], want, loads["local"])
			}
			// Another move (or a create) to two now sees it there.
			other := newDesktop("other", "bob", "o")
			other.Host, other.State = "local", desktop.StateMigrating
			if err := s.CreateDesktop(ctx, other); err != nil {
				t.Fatal(err)
			}
			if err := s.ReserveMove(ctx, other.ID, "two", full); !errors.Is(err, errHostFull) {
				t.Errorf("a second move to a host that has room for one: %v", err)
			}
			if err := s.ReserveMove(ctx, "nobody", "two", nil); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("reserve for an unknown desktop: %v", err)
			}
			// Ended: two is empty again; recorded there: counted once.
			if err := s.EndMove(ctx, d.ID); err != nil {
				t.Fatal(err)
			}
			if loads, _ := s.HostLoads(ctx); loads["two"] != (placement.Load{}) {
				t.Errorf("two after the move ended: %+v", loads["two"])
			}
			if err := s.ReserveMove(ctx, d.ID, "two", full); err != nil {
				t.Fatal(err)
			}
			if err := s.MoveDesktop(ctx, d.ID, "two", "10.121.0.9", false); err != nil {
				t.Fatal(err)
			}
			loads, _ = s.HostLoads(ctx)
			if want := (placement.Load{Desktops: 1, CommittedMiB: mem}); loads["two"] != want {
				t.Errorf("two after the move: %+v, want %+v", loads["two"], want)
			}
		})
	}
}
