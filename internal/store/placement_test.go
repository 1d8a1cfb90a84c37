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
