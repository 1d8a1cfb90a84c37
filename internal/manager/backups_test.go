package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestBackupTargets(t *testing.T) {
	env := newBkEnv(t)
	key := randKey(t)
	h := env.manager(t, key)
	ctx := context.Background()
	bks := h.m.Backups()
	for _, req := range []TargetRequest{
		{Name: "Bad Name", Kind: desktop.TargetDir, Dir: t.TempDir()},
		{Name: "nas", Kind: desktop.TargetDir, Dir: "relative/dir"},
		{Name: "nas", Kind: "tape", Dir: t.TempDir()},
	} {
		var ve *desktop.ValidationError
		if _, err := bks.CreateTarget(ctx, req); !errors.As(err, &ve) {
			t.Errorf("CreateTarget(%+v) = %v, want a validation error", req, err)
		}
	}
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o600)
	var ve *desktop.ValidationError
	if _, err := bks.CreateTarget(ctx, TargetRequest{Name: "nas", Kind: desktop.TargetDir, Dir: notDir}); !errors.As(err, &ve) || ve.Field != "target" {
		t.Errorf("a target on a file: %v, want a validation error on target", err)
	}

	tg, dir := addDirTarget(t, h, "nas")
	if tg.Kind != desktop.TargetDir || tg.Dir != dir || tg.CreatedBy != "admin" {
		t.Errorf("created %+v", tg)
	}
	if !exists(filepath.Join(dir, "config")) {
		t.Errorf("the target has no repository config")
	}
	if all, err := bks.Targets(ctx); err != nil || len(all) != 1 || all[0].ID != tg.ID {
		t.Errorf("Targets = %v, %v", all, err)
	}
	if got, err := bks.Target(ctx, "nas"); err != nil || got.ID != tg.ID || got.Dir != dir {
		t.Errorf("Target(nas) = %+v, %v", got, err)
	}
	if _, err := bks.CreateTarget(ctx, TargetRequest{Name: "nas", Kind: desktop.TargetDir, Dir: t.TempDir()}); !errors.Is(err, desktop.ErrNameTaken) {
		t.Errorf("a second target named nas: %v", err)
	}

	// Another install (another backup key) is refused the directory.
	other := newBkEnv(t).manager(t, randKey(t))
	_, err := other.m.Backups().CreateTarget(ctx, TargetRequest{Name: "nas", Kind: desktop.TargetDir, Dir: dir})
	var ce *desktop.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "another backup key") {
		t.Errorf("a target written with another key: %v, want a conflict naming the key", err)
	}
	// One with the same key is given it.
	same := newBkEnv(t).manager(t, key)
	if _, err := same.m.Backups().CreateTarget(ctx, TargetRequest{Name: "nas", Kind: desktop.TargetDir, Dir: dir}); err != nil {
		t.Errorf("a target written with the same key: %v", err)
	}
}

// TestBackupTargetSecretSealed: an S3 target's secret key is kept sealed
// with the secrets key, never listed, and opened only for the backups.
// (Creating an S3 target needs a server: the record is written directly.)
func TestBackupTargetSecretSealed(t *testing.T) {
	env := newBkEnv(t)
	h := env.manager(t, randKey(t))
	ctx := context.Background()
	bks := h.m.Backups()
	tg := &desktop.BackupTarget{ID: newID(), Name: "offsite", Kind: desktop.TargetS3,
		S3: desktop.S3Location{Endpoint: "s3.example.net:443", Bucket: "b", AccessKey: "AK", SecretKey: "s3cret"}}
	sealed, err := bks.sealSecret(tg)
	if err != nil || sealed == "" || strings.Contains(sealed, "s3cret") {
		t.Fatalf("sealed %q, %v", sealed, err)
	}
	if err := env.st.Backups().CreateTarget(ctx, tg, sealed); err != nil {
		t.Fatal(err)
	}
	if got, err := bks.Target(ctx, "offsite"); err != nil || got.S3.SecretKey != "" || got.S3.AccessKey != "AK" {
		t.Errorf("Target = %+v, %v: the secret key is shown", got, err)
	}
	if all, _ := bks.Targets(ctx); len(all) != 1 || all[0].S3.SecretKey != "" {
		t.Errorf("Targets = %+v: the secret key is shown", all)
	}
	if got, err := bks.target(ctx, ""); err != nil || got.S3.SecretKey != "s3cret" {
		t.Errorf("target for a backup = %+v, %v: want the secret opened", got, err)
	}
	// Another secrets key cannot open it.
	other := env.manager(t, randKey(t))
	if _, err := other.m.Backups().target(ctx, "offsite"); err == nil || !strings.Contains(err.Error(), "secrets key") {
		t.Errorf("opened with another secrets key: %v", err)
	}
}

func TestBackupFullThenIncremental(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	tg, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M", "write -P 0x22 1M 1M", "write -P 0x33 10M 1M")

	first := takeBackup(t, h, d.ID, BackupRequest{Actor: "alice"})
	if first.State != desktop.BackupComplete || first.Kind != desktop.BackupFull || first.WhyFull == "" || first.Parent != "" {
		t.Fatalf("first backup: %+v", first)
	}
	if first.Consistency != desktop.ConsistencyFilesystem || first.TargetID != tg.ID || first.DiskBytes != 64<<20 {
		t.Errorf("first backup: %+v", first)
	}
	if first.Chunks != 3 || first.ChunksNew != 3 || first.ReadTotal != 3<<20 || first.BytesRead != first.ReadTotal {
		t.Errorf("first backup: %d chunks, %d new, read %d of %d; want the 3 written cells", first.Chunks, first.ChunksNew, first.BytesRead, first.ReadTotal)
	}
	if !exists(filepath.Join(dir, "backups", first.ID)) {
		t.Errorf("no manifest backups/%s in the target", first.ID)
	}
	if got := chunkFiles(t, dir); len(got) != 3 {
		t.Errorf("chunks in the target: %v", got)
	}
	if got := marks(t, d.DataDiskPath); !slices.Equal(got, []string{markPrefix + first.ID}) {
		t.Errorf("marks after the first backup: %v", got)
	}
	if !saidEvent(t, h, d.ID, "backup_started", first.ID) || !saidEvent(t, h, d.ID, "backup_completed", "full backup "+first.ID) {
		t.Errorf("events of the backup missing")
	}

	qemuIO(t, d.DataDiskPath, "write -P 0x44 20M 1M", "write -P 0x55 21M 1M", "write -P 0x66 22M 1M")
	second := takeBackup(t, h, d.ID, BackupRequest{Target: "nas"})
	if second.State != desktop.BackupComplete || second.Kind != desktop.BackupIncremental || second.Parent != first.ID || second.WhyFull != "" {
		t.Fatalf("second backup: %+v", second)
	}
	if second.ReadTotal != 3<<20 || second.ChunksNew != 3 || second.Chunks != 6 {
		t.Errorf("second backup read %d bytes, %d of %d chunks new; want the 3 changed cells only", second.ReadTotal, second.ChunksNew, second.Chunks)
	}
	if got := marks(t, d.DataDiskPath); !slices.Equal(got, []string{markPrefix + second.ID}) {
		t.Errorf("marks after the second backup: %v, want only its own", got)
	}
	if list, err := h.m.Backups().List(ctx, BackupFilter{DesktopID: d.ID, TargetID: "nas"}); err != nil || len(list) != 2 || list[0].ID != second.ID {
		t.Errorf("List = %v, %v; want both, newest first", list, err)
	}
}

func TestBackupOfStoppedDesktop(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	addDirTarget(t, h, "nas")
	if _, err := h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped {
		t.Fatalf("desktop %s, want stopped", got.State)
	}
	qemuIO(t, d.DataDiskPath, "write -P 0x77 5M 2M")
	bk := takeBackup(t, h, d.ID, BackupRequest{})
	// Two equal cells: one chunk stored.
	if bk.State != desktop.BackupComplete || bk.Consistency != desktop.ConsistencyStopped || bk.Chunks != 2 || bk.ChunksNew != 1 {
		t.Fatalf("backup of a stopped desktop: %+v", bk)
	}
	if slices.ContainsFunc(h.hv.callList(), func(c string) bool { return strings.HasPrefix(c, "LiveDiskSnapshot") }) {
		t.Errorf("a stopped desktop marked through its VM: %v", h.hv.callList())
	}
	if got := marks(t, d.DataDiskPath); !slices.Equal(got, []string{bk.Mark}) {
		t.Errorf("marks %v, want %s", got, bk.Mark)
	}
}

func TestBackupRefusals(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	bks := h.m.Backups()
	var ve *desktop.ValidationError
	if _, err := bks.Start(ctx, d.ID, BackupRequest{}); !errors.As(err, &ve) || ve.Field != "target" {
		t.Errorf("no target set up: %v", err)
	}
	addDirTarget(t, h, "nas")
	addDirTarget(t, h, "usb")
	if _, err := bks.Start(ctx, d.ID, BackupRequest{}); !errors.As(err, &ve) || ve.Field != "target" {
		t.Errorf("two targets, none named: %v", err)
	}
	if _, err := bks.Start(ctx, d.ID, BackupRequest{Target: "tape"}); !errors.As(err, &ve) || ve.Field != "target" {
		t.Errorf("an unknown target: %v", err)
	}
	if _, err := bks.Start(ctx, "nope", BackupRequest{Target: "nas"}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("an unknown desktop: %v", err)
	}

	// A backup waiting for the desktop's lock is running: a second one
	// is refused until it ends.
	if err := h.m.ops.lock(d.ID, "held by the test"); err != nil {
		t.Fatal(err)
	}
	first, err := bks.Start(ctx, d.ID, BackupRequest{Target: "nas"})
	if err != nil {
		t.Fatal(err)
	}
	var ce *desktop.ConflictError
	if _, err := bks.Start(ctx, d.ID, BackupRequest{Target: "usb"}); !errors.As(err, &ce) || !strings.Contains(err.Error(), first.ID) {
		t.Errorf("a second backup while one runs: %v", err)
	}
	h.m.ops.unlock(d.ID)
	if got := awaitBackup(t, h, first.ID); got.State != desktop.BackupComplete {
		t.Fatalf("first backup: %+v", got)
	}
	if got := takeBackup(t, h, d.ID, BackupRequest{Target: "usb"}); got.State != desktop.BackupComplete {
		t.Errorf("a backup after the first ended: %+v", got)
	}
}

func TestBackupRefusesDesktopBeingMade(t *testing.T) {
	env := newBkEnv(t)
	h := env.manager(t, randKey(t))
	addDirTarget(t, h, "nas")
	env.disks.hold = make(chan struct{})
	d := h.create(t, "new") // waits at its data disk
	_, err := h.m.Backups().Start(context.Background(), d.ID, BackupRequest{})
	var te *desktop.TransitionError
	if !errors.As(err, &te) || te.State != desktop.StateCreating {
		t.Errorf("backup of a desktop being made: %v", err)
	}
	close(env.disks.hold)
	h.settle(t, d.ID)
	if list, _ := h.m.Backups().List(context.Background(), BackupFilter{DesktopID: d.ID}); len(list) != 0 {
		t.Errorf("a refused backup is recorded: %+v", list)
	}
}

// chunkFiles lists the chunk objects in a directory target.
func chunkFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "chunks", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}
