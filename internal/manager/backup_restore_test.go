package manager

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestBackupRestore: a restore is a new desktop whose data disk is the
// source's at the backup's mark (an incremental backup: its cells come
// from two backups), not as it is now.
func TestBackupRestore(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M", "write -P 0x22 7M 100k", "write -P 0x33 63M 1M")
	first := takeBackup(t, h, d.ID, BackupRequest{})
	qemuIO(t, d.DataDiskPath, "write -P 0x44 7M 4k", "write -P 0x55 30M 2M", "write -z 0 1M")
	second := takeBackup(t, h, d.ID, BackupRequest{})
	if second.Kind != desktop.BackupIncremental || second.Parent != first.ID {
		t.Fatalf("second backup: %+v", second)
	}
	qemuIO(t, d.DataDiskPath, "write -P 0x66 40M 1M") // after the backup

	r, err := h.m.Backups().Restore(ctx, second.ID, RestoreRequest{Name: "r", Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != desktop.StateCreating || r.Owner != d.Owner || r.Image != d.Image || r.VCPUs != d.VCPUs || r.MemoryMiB != d.MemoryMiB {
		t.Errorf("restored desktop: %+v", r)
	}
	r = h.settle(t, r.ID)
	if r.State != desktop.StateRunning || r.DataDiskGiB != 1 {
		t.Fatalf("restored desktop after its create: %s (%s), %d GiB", r.State, r.LastError, r.DataDiskGiB)
	}
	if !saidEvent(t, h, r.ID, "restore_requested", second.ID) {
		t.Errorf("the restored desktop's events do not say where it came from")
	}
	atMark := filepath.Join(t.TempDir(), "mark.raw")
	qemu(t, "qemu-img", "convert", "-U", "-f", "qcow2", "-l", "snapshot.name="+second.Mark, "-O", "raw", d.DataDiskPath, atMark)
	qemu(t, "qemu-img", "compare", "-U", "-f", "raw", "-F", "qcow2", atMark, r.DataDiskPath)
	if err := exec.Command("qemu-img", "compare", "-U", "-q", d.DataDiskPath, r.DataDiskPath).Run(); err == nil {
		t.Errorf("the restored disk has what was written after the backup")
	}
	if m := marks(t, r.DataDiskPath); len(m) != 0 {
		t.Errorf("the restored disk holds marks %v", m)
	}
	if exists(r.DataDiskPath + ".restoring.raw") {
		t.Errorf("the restore's scratch file is left")
	}
}

func TestBackupRestoreRefusals(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	tg, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	done := takeBackup(t, h, d.ID, BackupRequest{})
	running := &desktop.Backup{ID: newID(), DesktopID: d.ID, DesktopName: d.Name, Owner: d.Owner, TargetID: tg.ID,
		State: desktop.BackupRunning, StartedAt: time.Now().UTC()}
	if err := h.store.Backups().CreateBackup(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Backups().Restore(ctx, running.ID, RestoreRequest{Name: "r"}); !isConflict(err) {
		t.Errorf("restore of a running backup: %v", err)
	}
	os.Remove(filepath.Join(dir, "backups", done.ID))
	if _, err := h.m.Backups().Restore(ctx, done.ID, RestoreRequest{Name: "r"}); !isConflict(err) {
		t.Errorf("restore of a backup whose manifest is gone: %v", err)
	}
	if list, _ := h.m.List(ctx, desktop.Filter{}); len(list) != 1 {
		t.Errorf("a refused restore made a desktop: %d desktops", len(list))
	}
}

func TestBackupVerify(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	bks := h.m.Backups()
	tg, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M", "write -P 0x22 1M 1M", "write -P 0x33 2M 1M")
	bk := takeBackup(t, h, d.ID, BackupRequest{})

	check, err := bks.Verify(ctx, bk.ID, "alice")
	if err != nil || !check.OK || check.Chunks != 3 || len(check.Missing)+len(check.Corrupt) != 0 {
		t.Fatalf("verify of a good backup: %+v, %v", check, err)
	}
	if !saidEvent(t, h, d.ID, "backup_verified", "every chunk is intact") {
		t.Errorf("no backup_verified event")
	}

	files := chunkFiles(t, dir)
	slices.Sort(files)
	flipByte(t, files[0])
	os.Remove(files[1])
	check, err = bks.Verify(ctx, bk.ID, "alice")
	if err != nil || check.OK {
		t.Fatalf("verify of a damaged backup: %+v, %v", check, err)
	}
	if !slices.Equal(check.Corrupt, []string{filepath.Base(files[0])}) || !slices.Equal(check.Missing, []string{filepath.Base(files[1])}) {
		t.Errorf("corrupt %v, missing %v; want %s and %s", check.Corrupt, check.Missing, filepath.Base(files[0]), filepath.Base(files[1]))
	}
	if !saidEvent(t, h, d.ID, "backup_verified", "1 chunks missing, 1 corrupt") {
		t.Errorf("the verify event does not say what is wrong")
	}

	os.Remove(filepath.Join(dir, "backups", bk.ID))
	if check, err := bks.Verify(ctx, bk.ID, "alice"); err != nil || check.OK || !slices.Equal(check.Missing, []string{"backups/" + bk.ID}) {
		t.Errorf("verify without the manifest: %+v, %v", check, err)
	}
	running := &desktop.Backup{ID: newID(), DesktopID: d.ID, TargetID: tg.ID, State: desktop.BackupRunning, StartedAt: time.Now().UTC()}
	h.store.Backups().CreateBackup(ctx, running)
	if _, err := bks.Verify(ctx, running.ID, "alice"); !isConflict(err) {
		t.Errorf("verify of a running backup: %v", err)
	}
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
