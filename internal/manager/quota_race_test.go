package manager

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
)

// onEachDatabase runs test with a harness on SQLite and, when
// BUREAU_TEST_POSTGRES_URL is set, on PostgreSQL, in a schema of its own
// (dropped afterwards), so it meets no other test's tables. Without the
// URL the PostgreSQL half is skipped, or fails if BUREAU_REQUIRE_POSTGRES=1
// (make unit sets it).
func onEachDatabase(t *testing.T, test func(t *testing.T, h *harness)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		st, err := store.Open(context.Background(), filepath.Join(dir, "b.db"))
		if err != nil {
			t.Fatal(err)
		}
		test(t, newHarnessOn(t, &fakeDisks{}, dir, nil, st))
	})
	url := os.Getenv("BUREAU_TEST_POSTGRES_URL")
	t.Run("postgres", func(t *testing.T) {
		if url == "" {
			if os.Getenv("BUREAU_REQUIRE_POSTGRES") == "1" {
				t.Fatal("BUREAU_REQUIRE_POSTGRES=1 but BUREAU_TEST_POSTGRES_URL is empty: PostgreSQL did not start")
			}
			t.Skip("BUREAU_TEST_POSTGRES_URL is not set (make unit starts PostgreSQL and sets it)")
		}
		ctx := context.Background()
		admin, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		schema := "manager_" + newID()
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		})
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		st, err := store.Open(ctx, url+sep+"search_path="+schema)
		if err != nil {
			t.Fatal(err)
		}
		test(t, newHarnessOn(t, &fakeDisks{}, t.TempDir(), nil, st))
	})
}

// raceQuota runs fn(0) … fn(n-1) at once and counts the calls that
// succeeded and those refused by the quota limit named; any other error
// fails the test.
func raceQuota(t *testing.T, n int, limit string, fn func(i int) error) (ok, refused int) {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		others []string
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
			case errors.As(err, &qe) && qe.Limit == limit:
				refused++
			default:
				others = append(others, fmt.Sprintf("call %d: %v", i, err))
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, o := range others {
		t.Error(o)
	}
	return ok, refused
}

// setQuota gives alice custom limits.
func (h *harness) setQuota(t *testing.T, q desktop.Quota) {
	t.Helper()
	q.Owner, q.Plan = "alice", "custom"
	if _, err := h.m.SetQuota(context.Background(), q, "admin"); err != nil {
		t.Fatal(err)
	}
}

// small creates n running desktops of alice's with 1 vCPU, 1 GiB memory
// and a 1 GiB data disk.
func (h *harness) small(t *testing.T, n int) []*desktop.Desktop {
	t.Helper()
	var out []*desktop.Desktop
	for i := range n {
		d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: fmt.Sprint("s", i), Actor: "test",
			Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.awaitState(t, d.ID, desktop.StateRunning, 5*time.Second))
	}
	for _, d := range out {
		h.settle(t, d.ID)
	}
	return out
}

func TestConcurrentCreatesHoldTheDesktopQuota(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		h.setQuota(t, desktop.Quota{MaxDesktops: 3})
		ok, refused := raceQuota(t, 20, "desktops", func(i int) error {
			_, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: fmt.Sprint("c", i), Actor: "test",
				Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
			return err
		})
		if ok != 3 || refused != 17 {
			t.Errorf("20 creates against a quota of 3 desktops: %d created, %d refused", ok, refused)
		}
		if ds, _ := h.m.List(ctx, desktop.Filter{Owner: "alice"}); len(ds) != 3 {
			t.Errorf("alice has %d desktops", len(ds))
		}
		if _, err := h.m.Create(ctx, CreateRequest{Owner: "bob", Name: "b", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}}); err != nil {
			t.Errorf("bob's quota is his own: %v", err)
		}
		if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "admin-made", Unlimited: true,
			Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}}); err != nil {
			t.Errorf("an admin's create for alice: %v", err)
		}
	})
}

// A desktop counts from the moment it is recorded, in every state until it
// is deleted: one still creating, or one whose create failed.
func TestQuotaCountsCreatingAndFailedDesktops(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		h.setQuota(t, desktop.Quota{MaxDesktops: 2})
		now := time.Now().UTC()
		for i, st := range []desktop.State{desktop.StateCreating, desktop.StateError} {
			if err := h.store.CreateDesktop(ctx, &desktop.Desktop{ID: fmt.Sprint("x", i), Owner: "alice", Name: fmt.Sprint("x", i),
				Spec: desktop.Spec{Image: "base", VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}, State: st, DesiredState: desktop.StateRunning,
				Accelerator: "tcg", Dir: h.dir, CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		var qe *desktop.QuotaError
		_, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "third", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
		if !errors.As(err, &qe) || qe.Limit != "desktops" || qe.Would != 3 {
			t.Errorf("a third desktop beside a creating and a failed one: %v", err)
		}
	})
}

func TestConcurrentResizesHoldTheDiskQuota(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		ds := h.small(t, 20) // 20 GiB of data disks
		h.setQuota(t, desktop.Quota{MaxDiskGiB: 20 + 3*4})
		ok, refused := raceQuota(t, 20, "disk_gib", func(i int) error {
			_, err := h.m.ResizeDataDisk(ctx, ds[i].ID, ResizeRequest{SizeGiB: 5, Actor: "alice"})
			return err
		})
		_, u, _ := h.m.Quota(ctx, "alice")
		if ok != 3 || refused != 17 || u.DiskMiB != 32<<10 {
			t.Errorf("20 resizes by 4 GiB against room for 3: %d grown, %d refused, %d MiB counted", ok, refused, u.DiskMiB)
		}
		// A resize that fails gives the space it held back.
		h.setQuota(t, desktop.Quota{MaxDiskGiB: 100})
		h.hv.fail("ResizeDisk")
		if _, err := h.m.ResizeDataDisk(ctx, ds[0].ID, ResizeRequest{SizeGiB: 50, Actor: "alice"}); err == nil {
			t.Fatal("a failed live resize succeeded")
		}
		h.hv.fail("")
		if got, _ := h.m.Get(ctx, ds[0].ID); got.DataDiskGiB == 50 {
			t.Errorf("a failed resize is recorded: %d GiB", got.DataDiskGiB)
		}
		if _, u2, _ := h.m.Quota(ctx, "alice"); u2.DiskMiB != u.DiskMiB {
			t.Errorf("a failed resize left %d MiB counted, want %d", u2.DiskMiB, u.DiskMiB)
		}
		if _, err := h.m.ResizeDataDisk(ctx, ds[0].ID, ResizeRequest{SizeGiB: 500, Actor: "admin", Unlimited: true}); err != nil {
			t.Errorf("an admin's resize past alice's quota: %v", err)
		}
	})
}

func TestConcurrentSnapshotsHoldTheSnapshotQuota(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		ds := h.small(t, 20)
		h.setQuota(t, desktop.Quota{MaxSnapshots: 3})
		ok, refused := raceQuota(t, 20, "snapshots", func(i int) error {
			_, err := h.m.Snapshots().CreateSnapshot(ctx, ds[i].ID, SnapshotRequest{Name: "s", Actor: "alice"})
			return err
		})
		_, u, _ := h.m.Quota(ctx, "alice")
		if ok != 3 || refused != 17 || u.Snapshots != 3 {
			t.Errorf("20 snapshots against a quota of 3: %d taken, %d refused, %d counted", ok, refused, u.Snapshots)
		}
		if _, err := h.m.Snapshots().CreateSnapshot(ctx, ds[0].ID, SnapshotRequest{Name: "admin", Unlimited: true}); err != nil {
			t.Errorf("an admin's snapshot past alice's quota: %v", err)
		}
	})
}

// A snapshot with memory is counted for its RAM from the moment it is
// recorded; a disk-only one for nothing until measured.
func TestSnapshotBytesCountAgainstTheDiskQuota(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		d := h.small(t, 1)[0] // 1 GiB of data disk and 1 GiB of RAM
		h.setQuota(t, desktop.Quota{MaxDiskGiB: 1})
		var qe *desktop.QuotaError
		if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ram"}); !errors.As(err, &qe) || qe.Limit != "disk_gib" || qe.Would != 2 {
			t.Errorf("a snapshot of 1 GiB of RAM past the disk quota: %v", err)
		}
		no := false
		if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "disks", Memory: &no}); err != nil {
			t.Errorf("a disk-only snapshot: %v", err)
		}
		if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 1 {
			t.Errorf("snapshots listed: %v", list)
		}
	})
}

func TestConcurrentClonesHoldTheDesktopQuota(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		src := h.small(t, 1)[0]
		if _, err := h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "gold", Scope: desktop.ScopeData}); err != nil {
			t.Fatal(err)
		}
		h.setQuota(t, desktop.Quota{MaxDesktops: 1 + 3})
		ok, refused := raceQuota(t, 20, "desktops", func(i int) error {
			_, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: fmt.Sprint("clone", i), Actor: "alice",
				From: &CloneSource{DesktopID: src.ID, Snapshot: "gold"}, Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024}})
			return err
		})
		if ok != 3 || refused != 17 {
			t.Errorf("20 clones against room for 3: %d made, %d refused", ok, refused)
		}
	})
}
