package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// atMost admits while the usage after adding add stays within q (or, for
// owners without a quota of their own, within def).
func atMost(def desktop.Quota, add desktop.Usage) func(*desktop.Quota, desktop.Usage) error {
	return func(q *desktop.Quota, u desktop.Usage) error {
		if q == nil {
			q = &def
		}
		return q.Check(u.Plus(add))
	}
}

// race runs n calls of fn at once and counts successes and quota refusals;
// any other error fails the test.
func race(t *testing.T, n int, fn func(i int) error) (ok, refused int) {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		others []error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			var qe *desktop.QuotaError
			switch {
			case err == nil:
				ok++
			case errors.As(err, &qe):
				refused++
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range others {
		t.Errorf("unexpected error: %v", err)
	}
	return ok, refused
}

func TestCheckedWritesHoldTheQuotaUnderConcurrency(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			three := desktop.Quota{Plan: "custom", MaxDesktops: 3}
			ok, refused := race(t, 20, func(i int) error {
				return s.CreateDesktopChecked(ctx, newDesktop(fmt.Sprint("c", i), "carol", fmt.Sprint("d", i)), atMost(three, desktop.Usage{Desktops: 1}), nil)
			})
			if ok != 3 || refused != 17 {
				t.Errorf("20 creates against 3 desktops: %d made, %d refused", ok, refused)
			}
			// Others' desktops do not count, and the stored quota wins over
			// the default.
			if err := s.PutQuota(ctx, &desktop.Quota{Owner: "carol", Plan: "custom", MaxDesktops: 4}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateDesktopChecked(ctx, newDesktop("x1", "carol", "x1"), atMost(three, desktop.Usage{Desktops: 1}), nil); err != nil {
				t.Errorf("a 4th desktop with a stored quota of 4: %v", err)
			}

			if u, _ := s.Usage(ctx, "carol"); u.Desktops != 4 {
				t.Errorf("carol has %d desktops, want 4", u.Desktops)
			}

			// dave's 20 desktops have 20 GiB data disks (400 GiB); his quota
			// has room for three of them to grow by 5 GiB.
			for i := range 20 {
				if err := s.CreateDesktop(ctx, newDesktop(fmt.Sprint("v", i), "dave", fmt.Sprint("d", i))); err != nil {
					t.Fatal(err)
				}
			}
			s.PutQuota(ctx, &desktop.Quota{Owner: "dave", Plan: "custom", MaxDiskGiB: 415, MaxSnapshots: 3})
			ok, refused = race(t, 20, func(i int) error {
				return s.GrowDataDiskChecked(ctx, fmt.Sprint("v", i), "dave", 25, atMost(three, desktop.Usage{DiskMiB: 5 << 10}))
			})
			if u, _ := s.Usage(ctx, "dave"); ok != 3 || refused != 17 || u.DiskMiB != 415<<10 {
				t.Errorf("20 growths against room for 3: %d grown, %d refused, %d MiB used", ok, refused, u.DiskMiB)
			}
			if err := s.GrowDataDiskChecked(ctx, "v0", "eve", 30, atMost(three, desktop.Usage{})); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("growing a desktop of another owner: %v", err)
			}

			// Snapshots count against their desktop's owner, and their
			// recorded size against the disk quota.
			ok, refused = race(t, 20, func(i int) error {
				sn := &desktop.Snapshot{ID: fmt.Sprint("s", i), DesktopID: fmt.Sprint("v", i), Name: "s", Scope: "all", CreatedAt: time.Now()}
				return s.CreateSnapshotChecked(ctx, sn, "dave", atMost(three, desktop.Usage{Snapshots: 1}))
			})
			if u, _ := s.Usage(ctx, "dave"); ok != 3 || refused != 17 || u.Snapshots != 3 {
				t.Errorf("20 snapshots against room for 3: %d taken, %d refused, %d counted", ok, refused, u.Snapshots)
			}
			s.PutQuota(ctx, &desktop.Quota{Owner: "dave", Plan: "custom", MaxDiskGiB: 418})
			ok, refused = race(t, 20, func(i int) error {
				sn := &desktop.Snapshot{ID: fmt.Sprint("m", i), DesktopID: fmt.Sprint("v", i), Name: "m", Scope: "all", Memory: true,
					SizeBytes: 1 << 30, CreatedAt: time.Now()}
				return s.CreateSnapshotChecked(ctx, sn, "dave", atMost(three, desktop.Usage{Snapshots: 1, DiskMiB: 1 << 10}))
			})
			if ok != 3 || refused != 17 {
				t.Errorf("20 snapshots of 1 GiB against room for 3 GiB: %d taken, %d refused", ok, refused)
			}
			if q, err := s.GetQuota(ctx, "dave"); err != nil || q.MaxDiskGiB != 418 || q.MaxSnapshots != 0 {
				t.Errorf("dave's quota: %+v %v", q, err)
			}
		})
	}
}
