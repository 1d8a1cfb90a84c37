package manager

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/backup/qcow2"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/storage"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

// The backup tests work on real qcow2 data disks: qemu-img makes them and
// takes and drops the marks (no VM runs, so the "live" marks are taken by
// qemu-img too), qemu-io writes into them, and the backups are read from
// the files by internal/backup/qcow2 as in production.

// qemuHV is the fake hypervisor whose live disk snapshots are real
// internal snapshots in the files, reported quiesced.
type qemuHV struct{ *fakeHV }

func (q qemuHV) LiveDiskSnapshot(ctx context.Context, n, snap string, files []string) (bool, error) {
	if err := q.need(n, vmActive); err != nil {
		return false, err
	}
	if err := q.attached(n, files); err != nil {
		return false, err
	}
	if err := q.step("LiveDiskSnapshot", fmt.Sprintf("%s/%s %d", n, snap, len(files))); err != nil {
		return false, err
	}
	for _, f := range files {
		if err := (storage.Disks{}).Snapshot(ctx, f, snap); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (q qemuHV) DeleteLiveDiskSnapshot(ctx context.Context, n, snap string, files []string) error {
	if err := q.need(n, vmActive); err != nil {
		return err
	}
	if err := q.step("DeleteLiveDiskSnapshot", fmt.Sprintf("%s/%s %d", n, snap, len(files))); err != nil {
		return err
	}
	for _, f := range files {
		if err := (storage.Disks{}).DeleteSnapshot(ctx, f, snap); err != nil {
			return err
		}
	}
	return nil
}

// qemuDisks makes real 64 MiB qcow2 data disks and snapshots stopped disks
// with qemu-img (hostfiles.Local's stopped-disk path); the rest is fake.
// A create waits at its data disk while hold is open.
type qemuDisks struct {
	*fakeDisks
	hold chan struct{}
}

func (q *qemuDisks) CreateDataDisk(ctx context.Context, path string, _ int) error {
	if q.hold != nil {
		select {
		case <-q.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := notThere(path); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-o", "lazy_refcounts=on", path, "64M").CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create: %v: %s", err, out)
	}
	return nil
}

func (q *qemuDisks) Snapshot(ctx context.Context, path, name string) error {
	return storage.Disks{}.Snapshot(ctx, path, name)
}

func (q *qemuDisks) DeleteSnapshot(ctx context.Context, path, name string) error {
	return storage.Disks{}.DeleteSnapshot(ctx, path, name)
}

func (q *qemuDisks) RevertSnapshot(ctx context.Context, path, name string) error {
	return storage.Disks{}.RevertSnapshot(ctx, path, name)
}

// bkEnv is one install: its folder, database and hypervisor; managers
// (bureau runs) are made over it with a backup key.
type bkEnv struct {
	dir   string
	st    *store.Store
	hv    *fakeHV
	disks *qemuDisks
}

func newBkEnv(t *testing.T) *bkEnv {
	t.Helper()
	for _, tool := range []string{"qemu-img", "qemu-io"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the backup tests need the real QEMU tools (qemu-utils): %v", tool, err)
		}
	}
	dir := t.TempDir()
	ctx := context.Background()
	st := storetest.Open(t, filepath.Join(dir, "b.db"))
	st.PutImage(ctx, &desktop.Image{Name: "base", Path: filepath.Join(dir, "base.qcow2"), RecipeHash: "abc", CreatedAt: time.Now()})
	fd := &fakeDisks{}
	hv := newFakeHV()
	hv.files = fd.snapshots()
	return &bkEnv{dir: dir, st: st, hv: hv, disks: &qemuDisks{fakeDisks: fd}}
}

// manager starts a bureau over the install with backup key key (closed
// at the end of the test, before the database).
func (e *bkEnv) manager(t *testing.T, key []byte) *harness {
	t.Helper()
	seal := randKey(t)
	m := New(Config{DataDir: e.dir, DefaultImage: "base", Accelerator: desktop.AccelTCG, StopTimeout: 300 * time.Millisecond,
		DefaultPlan: "unlimited", TemplateSettle: time.Millisecond, TrimSettle: time.Millisecond,
		Backups: BackupsConfig{Targets: e.st.Backups(), Records: e.st.Backups(), Schedules: e.st.Backups(), Key: key, SealKey: seal}},
		qemuHV{e.hv}, e.disks, &fakeSeeds{}, e.st, slog.New(slog.DiscardHandler))
	t.Cleanup(m.Close)
	return &harness{m: m, hv: e.hv, disks: e.disks.fakeDisks, store: e.st, dir: e.dir}
}

func randKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// newBackupHarness is one bureau with a backup key and a running desktop
// "d" whose data disk is a real qcow2.
func newBackupHarness(t *testing.T) (*harness, *desktop.Desktop) {
	t.Helper()
	h := newBkEnv(t).manager(t, randKey(t))
	d := h.settle(t, h.create(t, "d").ID)
	if d.State != desktop.StateRunning {
		t.Fatalf("desktop is %s, want running", d.State)
	}
	return h, d
}

// addDirTarget adds a directory target and returns it and its folder.
func addDirTarget(t *testing.T, h *harness, name string) (*desktop.BackupTarget, string) {
	t.Helper()
	dir := t.TempDir()
	tg, err := h.m.Backups().CreateTarget(context.Background(), TargetRequest{Name: name, Kind: desktop.TargetDir, Dir: dir, Actor: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	return tg, dir
}

// qemuIO runs qemu-io commands ("write -P 0x11 0 1M") on a qcow2 file.
func qemuIO(t *testing.T, path string, cmds ...string) {
	t.Helper()
	args := []string{"-f", "qcow2"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	qemu(t, "qemu-io", append(args, path)...)
}

func qemu(t *testing.T, tool string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// marks lists the backup marks in a qcow2 file, as its snapshot table has
// them.
func marks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snaps, err := qcow2.Snapshots(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range snaps {
		if strings.HasPrefix(s.Name, markPrefix) {
			out = append(out, s.Name)
		}
	}
	return out
}

// takeBackup starts a backup and waits until it ends, and for the marks
// it no longer needs to be dropped (after the record is written).
func takeBackup(t *testing.T, h *harness, desktopID string, req BackupRequest) *desktop.Backup {
	t.Helper()
	bk, err := h.m.Backups().Start(context.Background(), desktopID, req)
	if err != nil {
		t.Fatal(err)
	}
	if bk.State != desktop.BackupRunning {
		t.Fatalf("Start returned a %s backup, want running", bk.State)
	}
	return awaitBackup(t, h, bk.ID)
}

// awaitBackup waits until a backup is no longer running and its work is
// over (its marks dropped), and returns its record.
func awaitBackup(t *testing.T, h *harness, id string) *desktop.Backup {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		bk, err := h.m.Backups().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if bk.State != desktop.BackupRunning && !backupUnderWay(h.m.Backups(), bk.DesktopID) && !h.m.ops.isBusy(bk.DesktopID) {
			return bk
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s still %s after 30s", id, bk.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// backupUnderWay says whether a backup of the desktop is under way (until
// its old marks are dropped).
func backupUnderWay(b *Backups, desktopID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.running[desktopID]
	return ok
}
