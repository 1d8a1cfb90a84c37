package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestBackupFullWhenMarkGone: the previous backup's mark removed from the
// disk (the disk replaced, the desktop moved) makes the next backup full,
// saying why.
func TestBackupFullWhenMarkGone(t *testing.T) {
	h, d := newBackupHarness(t)
	addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	first := takeBackup(t, h, d.ID, BackupRequest{})
	qemu(t, "qemu-img", "snapshot", "-d", first.Mark, d.DataDiskPath)
	qemuIO(t, d.DataDiskPath, "write -P 0x22 4M 1M")

	second := takeBackup(t, h, d.ID, BackupRequest{})
	if second.State != desktop.BackupComplete || second.Kind != desktop.BackupFull || second.Parent != "" {
		t.Fatalf("backup after the mark went: %+v", second)
	}
	if !strings.Contains(second.WhyFull, "mark is gone") {
		t.Errorf("why full: %q", second.WhyFull)
	}
	// Full: both written cells read; the first one's chunk was there.
	if second.ReadTotal != 2<<20 || second.Chunks != 2 || second.ChunksNew != 1 {
		t.Errorf("read %d, %d chunks, %d new", second.ReadTotal, second.Chunks, second.ChunksNew)
	}
	if !saidEvent(t, h, d.ID, "backup_completed", "mark is gone") {
		t.Errorf("the completed event does not say why the backup is full")
	}
	// The one after is incremental again.
	third := takeBackup(t, h, d.ID, BackupRequest{})
	if third.Kind != desktop.BackupIncremental || third.Parent != second.ID || third.ReadTotal != 0 {
		t.Errorf("third backup: %+v", third)
	}
}

// TestBackupInterruptedByStop: a backup bureau was taking when it stopped
// is marked failed at its next start; the mark it made is dropped by the
// next backup, which is taken against the last complete one.
func TestBackupInterruptedByStop(t *testing.T) {
	env := newBkEnv(t)
	key := randKey(t)
	h := env.manager(t, key)
	d := h.settle(t, h.create(t, "d").ID)
	tg, _ := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	done := takeBackup(t, h, d.ID, BackupRequest{})

	// Killed after the mark: a running record and a mark in the disk.
	cut := &desktop.Backup{ID: newID(), DesktopID: d.ID, DesktopName: d.Name, Owner: d.Owner, TargetID: tg.ID,
		State: desktop.BackupRunning, Kind: desktop.BackupFull, StartedAt: time.Now().UTC()}
	cut.Mark = markPrefix + cut.ID
	if err := env.st.Backups().CreateBackup(context.Background(), cut); err != nil {
		t.Fatal(err)
	}
	qemu(t, "qemu-img", "snapshot", "-c", cut.Mark, d.DataDiskPath)
	h.m.Close()

	h = env.manager(t, key)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	got, err := h.m.Backups().Get(context.Background(), cut.ID)
	if err != nil || got.State != desktop.BackupFailed || !strings.Contains(got.Error, "bureau stopped") || got.FinishedAt == nil {
		t.Fatalf("interrupted backup after a restart: %+v, %v", got, err)
	}
	qemuIO(t, d.DataDiskPath, "write -P 0x22 2M 1M")
	next := takeBackup(t, h, d.ID, BackupRequest{})
	if next.State != desktop.BackupComplete || next.Kind != desktop.BackupIncremental || next.Parent != done.ID || next.ReadTotal != 1<<20 {
		t.Errorf("backup after the restart: %+v", next)
	}
	if m := marks(t, d.DataDiskPath); !slices.Equal(m, []string{next.Mark}) {
		t.Errorf("marks %v, want only %s (the interrupted one's dropped)", m, next.Mark)
	}
}

// TestBackupFailureDropsItsMark: a backup that fails after marking the
// disk leaves no mark behind, and the previous one's stays for the next.
func TestBackupFailureDropsItsMark(t *testing.T) {
	h, d := newBackupHarness(t)
	_, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	first := takeBackup(t, h, d.ID, BackupRequest{})
	qemuIO(t, d.DataDiskPath, "write -P 0x22 3M 1M")
	// The target's chunk folder is in the way (a file; root writes to
	// read-only folders): the new chunk cannot be stored.
	chunks := filepath.Join(dir, "chunks")
	if err := os.Rename(chunks, chunks+".aside"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(chunks, nil, 0o600)
	failed := takeBackup(t, h, d.ID, BackupRequest{})
	os.Remove(chunks)
	if err := os.Rename(chunks+".aside", chunks); err != nil {
		t.Fatal(err)
	}
	if failed.State != desktop.BackupFailed || failed.Error == "" || failed.FinishedAt == nil {
		t.Fatalf("backup to a read-only target: %+v", failed)
	}
	if !saidEvent(t, h, d.ID, "backup_failed", failed.ID) {
		t.Errorf("no backup_failed event")
	}
	if m := marks(t, d.DataDiskPath); !slices.Equal(m, []string{first.Mark}) {
		t.Errorf("marks %v, want only the last complete backup's", m)
	}
	if _, err := h.m.Backups().Verify(context.Background(), failed.ID, "alice"); !isConflict(err) {
		t.Errorf("verify of a failed backup: %v", err)
	}
	next := takeBackup(t, h, d.ID, BackupRequest{})
	if next.Kind != desktop.BackupIncremental || next.Parent != first.ID {
		t.Errorf("backup after a failed one: %+v", next)
	}
}

func TestBackupDeleteTarget(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	bks := h.m.Backups()
	tg, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	done := takeBackup(t, h, d.ID, BackupRequest{})
	running := &desktop.Backup{ID: newID(), DesktopID: d.ID, DesktopName: d.Name, Owner: d.Owner, TargetID: tg.ID,
		State: desktop.BackupRunning, Kind: desktop.BackupFull, StartedAt: time.Now().UTC()}
	if err := h.store.Backups().CreateBackup(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := bks.DeleteTarget(ctx, "nas", "admin"); !isConflict(err) || !strings.Contains(err.Error(), running.ID) {
		t.Errorf("delete a target a backup runs to: %v", err)
	}
	if _, err := bks.Target(ctx, "nas"); err != nil {
		t.Errorf("the target is gone after a refused delete: %v", err)
	}
	running.State = desktop.BackupFailed
	if err := h.store.Backups().UpdateBackup(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := bks.DeleteTarget(ctx, tg.ID, "admin"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if all, err := bks.Targets(ctx); err != nil || len(all) != 0 {
		t.Errorf("targets after the delete: %v, %v", all, err)
	}
	if _, err := bks.List(ctx, BackupFilter{TargetID: "nas"}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("list by the deleted target: %v", err)
	}
	if list, err := bks.List(ctx, BackupFilter{DesktopID: d.ID}); err != nil || len(list) != 0 {
		t.Errorf("the deleted target's backups are listed: %v, %v", list, err)
	}
	if !exists(dir+"/backups/"+done.ID) || len(chunkFiles(t, dir)) == 0 {
		t.Errorf("the backups did not stay in the target")
	}
	// Added again, the target's backups are found there.
	again, err := bks.CreateTarget(ctx, TargetRequest{Name: "nas", Kind: desktop.TargetDir, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	list, err := bks.List(ctx, BackupFilter{TargetID: "nas"})
	if err != nil || len(list) != 1 || list[0].ID != done.ID || list[0].State != desktop.BackupComplete || list[0].TargetID != again.ID {
		t.Errorf("backups found in the re-added target: %+v, %v", list, err)
	}
	// The backup found there is the chain's: the next one reads only what
	// changed since its mark, which is still in the disk.
	qemuIO(t, d.DataDiskPath, "write -P 0x22 9M 1M")
	next := takeBackup(t, h, d.ID, BackupRequest{})
	if next.Kind != desktop.BackupIncremental || next.Parent != done.ID || next.ReadTotal != 1<<20 {
		t.Errorf("backup after the target was added again: %s of %s, read %d; want incremental, the changed cell only", next.Kind, next.Parent, next.ReadTotal)
	}
	if m := marks(t, d.DataDiskPath); !slices.Equal(m, []string{next.Mark}) {
		t.Errorf("marks %v, want only %s", m, next.Mark)
	}
}

func isConflict(err error) bool {
	var ce *desktop.ConflictError
	return errors.As(err, &ce)
}
