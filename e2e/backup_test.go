//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/backup/backuptest"
	"github.com/bureau/bureau/internal/desktop"
)

// TestBackups backs a real desktop's data disk up to a real S3-compatible
// server (SeaweedFS on loopback) while it runs: a full backup, then an
// incremental one after a 10 MiB change that uploads about that much; it
// kills bureau half-way through a backup (nothing partial is listed, the
// next backup completes), verifies, finds a corrupted chunk in a directory
// target, deletes the desktop, and then runs the disaster drill: a fresh
// bureau with only the backup key and the target's address lists the
// backups and restores the desktop, every file identical by checksum.
func TestBackups(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	loc, stopS3, err := backuptest.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("SeaweedFS: %v", err)
	}
	t.Cleanup(stopS3)
	s3 := map[string]any{"endpoint": loc.Endpoint, "bucket": loc.Bucket, "region": loc.Region,
		"access_key": loc.AccessKey, "secret_key": loc.SecretKey, "insecure": true}

	// Targets: bad input is refused with a reason; nothing is recorded.
	wrong := map[string]any{"endpoint": loc.Endpoint, "bucket": loc.Bucket, "access_key": loc.AccessKey, "secret_key": "not-the-key", "insecure": true}
	if e := s.expectError(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "bad", "kind": "s3", "s3": wrong}, 422, "invalid"); !strings.Contains(strings.ToLower(e.Error.Message), "denied") {
		t.Errorf("a wrong secret key: %q", e.Error.Message)
	}
	missing := map[string]any{"endpoint": loc.Endpoint, "bucket": "no-such-bucket", "access_key": loc.AccessKey, "secret_key": loc.SecretKey, "insecure": true}
	if e := s.expectError(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "bad", "kind": "s3", "s3": missing}, 422, "invalid"); !strings.Contains(e.Error.Message, "no-such-bucket") {
		t.Errorf("a missing bucket: %q", e.Error.Message)
	}
	var tg apiv1.BackupTarget
	if code := s.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "offsite", "kind": "s3", "s3": s3}, &tg); code != http.StatusCreated {
		t.Fatalf("add the S3 target: %d", code)
	}
	dirTarget := t.TempDir()
	if code := s.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "local", "kind": "dir", "dir": dirTarget}, nil); code != http.StatusCreated {
		t.Fatalf("add the directory target: %d", code)
	}

	var d apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "bk", "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 4}, &d); code != http.StatusAccepted {
		t.Fatalf("create: %d", code)
	}
	running := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(running, 5*time.Minute)
	s.waitGuest(running, "cloud-init", "cloud-init status | grep -q 'status: done'", 10*time.Minute)
	s.guest(running, `mkdir -p /home/agent/work && head -c 200M /dev/urandom > /home/agent/work/big && seq 1 100000 > /home/agent/work/numbers && echo first > /home/agent/work/note && sync`)

	first := s.backupOf(d.ID, "offsite")
	if first.Kind != "full" || first.WhyFull == "" || first.ChunksNew == 0 || first.BytesNew < 150<<20 {
		t.Errorf("first backup: %+v", first)
	}
	if first.Consistency != "filesystem" && first.Consistency != "crash" {
		t.Errorf("a running desktop's backup is %q", first.Consistency)
	}
	t.Logf("full backup of a %d GiB data disk: %d MiB read, %d chunks (%d new), %d MiB uploaded, %s, in %s", first.DiskBytes>>30, first.BytesRead>>20, first.Chunks, first.ChunksNew, first.BytesNew>>20, first.Consistency, took(first))

	// 10 MiB change: the incremental reads and uploads about that much.
	s.guest(running, `head -c 10M /dev/urandom > /home/agent/work/mid && echo second >> /home/agent/work/note && sync`)
	second := s.backupOf(d.ID, "offsite")
	if second.Kind != "incremental" || second.Parent != first.ID {
		t.Errorf("second backup: %+v", second)
	}
	if second.BytesNew > 24<<20 || second.ReadTotal > 64<<20 {
		t.Errorf("a 10 MiB change read %d MiB and uploaded %d MiB (bounds: 64 and 24)", second.ReadTotal>>20, second.BytesNew>>20)
	}
	t.Logf("incremental after a 10 MiB change: read %d MiB, %d new chunks, %.1f MiB uploaded, in %s", second.ReadTotal>>20, second.ChunksNew, float64(second.BytesNew)/(1<<20), took(second))

	// bureau killed after marking the disk: the backup is never listed as
	// good, and the next one completes (against the last good one).
	s.guest(running, `echo third >> /home/agent/work/note && sync`)
	s.crashAt("backup:after-mark", func() {
		s.send("POST", "/api/v1/desktops/"+d.ID+"/backups", `{"target":"offsite"}`)
	})
	var list struct{ Backups []apiv1.Backup }
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/backups", nil, &list)
	if len(list.Backups) != 3 || list.Backups[0].State != "failed" || list.Backups[0].Error == "" {
		t.Fatalf("after a kill mid-backup: %+v", list.Backups)
	}
	third := s.backupOf(d.ID, "offsite")
	if third.Kind != "incremental" || third.Parent != second.ID {
		t.Errorf("the backup after the kill: %+v", third)
	}
	marks := s.backupMarks(running)
	if len(marks) != 1 || !strings.HasSuffix(marks[0], third.ID) {
		t.Errorf("marks left in the data disk: %v (want only the newest backup's)", marks)
	}

	var check apiv1.BackupCheck
	if code := s.call(adminToken, "POST", "/api/v1/backups/"+third.ID+"/verify", nil, &check); code != http.StatusOK || !check.OK || check.Chunks == 0 {
		t.Errorf("verify: %d %+v", code, check)
	}

	// A directory target with a corrupted chunk: verify names it.
	local := s.backupOf(d.ID, "local")
	chunks, _ := filepath.Glob(filepath.Join(dirTarget, "chunks", "*", "*"))
	if len(chunks) == 0 {
		t.Fatalf("no chunks in the directory target %s", dirTarget)
	}
	bad := chunks[len(chunks)/2]
	b, _ := os.ReadFile(bad)
	b[len(b)/2] ^= 0xff
	os.WriteFile(bad, b, 0o600)
	check = apiv1.BackupCheck{}
	s.call(adminToken, "POST", "/api/v1/backups/"+local.ID+"/verify", nil, &check)
	if check.OK || len(check.Corrupt) != 1 || !strings.HasSuffix(bad, check.Corrupt[0]) || backup.ChunkKey(check.Corrupt[0]) == "" {
		t.Errorf("verify after corrupting %s: %+v", bad, check)
	}

	// The console shows them, on the desktop's tab and the admin's page.
	checkBackupsPage(t, s, d.ID, []apiv1.Backup{local, third, second, first})

	// Deleting the first backup leaves the others whole; the chunks only
	// it used are swept from the target.
	store, err := backup.NewS3(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := store.List(ctx, "chunks/")
	if code := s.call(adminToken, "DELETE", "/api/v1/backups/"+first.ID, nil, nil); code != http.StatusNoContent {
		t.Errorf("delete the first backup: %d", code)
	}
	s.expectError(adminToken, "GET", "/api/v1/backups/"+first.ID, nil, 404, "not_found")
	swept := false
	for deadline := time.Now().Add(time.Minute); !swept && time.Now().Before(deadline); time.Sleep(time.Second) {
		after, _ := store.List(ctx, "chunks/")
		swept = len(after) < len(before)
	}
	if !swept {
		t.Errorf("no chunk swept from the target after deleting backup %s (%d chunks)", first.ID, len(before))
	}

	// A schedule: defaults filled in, bad input refused.
	var sched apiv1.BackupSchedule
	if code := s.call(adminToken, "PUT", "/api/v1/desktops/"+d.ID+"/backup-schedule", map[string]any{"target": "offsite", "every_minutes": 120, "keep_last": 3}, &sched); code != http.StatusOK ||
		sched.EveryMinutes != 120 || sched.KeepLast != 3 || sched.KeepHourly != 24 || sched.TargetID != tg.ID {
		t.Errorf("set a schedule: %d %+v", code, sched)
	}
	s.expectError(adminToken, "PUT", "/api/v1/desktops/"+d.ID+"/backup-schedule", map[string]any{"every_minutes": 0}, 422, "invalid")

	sums, _ := s.guest(running, "cd /home/agent/work && sha256sum big mid numbers note")
	if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil); code != http.StatusOK {
		t.Fatalf("delete the desktop: %d", code)
	}
	s.waitGone(d.ID)
	key, err := os.ReadFile(filepath.Join(s.dataDir, "backup.key"))
	if err != nil {
		t.Fatal(err)
	}
	s.stop()

	// The disaster drill: a fresh install with the key and the target.
	dir2, err := os.MkdirTemp("/var/lib", "bureau-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "backup.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := newServerIn(t, dir2)
	if code := s2.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "offsite", "kind": "s3", "s3": s3}, nil); code != http.StatusCreated {
		t.Fatalf("the fresh install adds the target: %d", code)
	}
	list.Backups = nil
	s2.call(adminToken, "GET", "/api/v1/backups?desktop="+d.ID, nil, &list)
	if len(list.Backups) != 2 {
		t.Fatalf("the fresh install lists %d backups of the desktop, want the 2 complete ones left in the target: %+v", len(list.Backups), list.Backups)
	}
	var restored apiv1.Desktop
	restoreAt := time.Now()
	if code := s2.call(adminToken, "POST", "/api/v1/backups/"+third.ID+"/restore", map[string]any{"name": "bk-restored"}, &restored); code != http.StatusAccepted {
		t.Fatalf("restore: %d", code)
	}
	up := s2.waitState(adminToken, restored.ID, desktop.StateRunning, 8*time.Minute)
	t.Logf("restore of %d MiB of chunks to a running desktop: %s", third.Chunks, time.Since(restoreAt).Round(100*time.Millisecond))
	s2.waitAgent(up, 5*time.Minute)
	s2.waitGuest(up, "restored desktop's cloud-init", "cloud-init status | grep -q 'status: done'", 10*time.Minute)
	if got, _ := s2.guest(up, "cd /home/agent/work && sha256sum big mid numbers note"); got != sums {
		t.Errorf("restored files differ:\n got %s\nwant %s", got, sums)
	}
	if note, _ := s2.guest(up, "cat /home/agent/work/note"); note != "first\nsecond\nthird" {
		t.Errorf("restored note = %q", note)
	}
}

// backupOf takes a backup of a desktop to a target and waits for it to
// complete.
func (s *server) backupOf(id, target string) apiv1.Backup {
	s.t.Helper()
	var b apiv1.Backup
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+id+"/backups", map[string]any{"target": target}, &b); code != http.StatusAccepted {
		s.t.Fatalf("backup to %s: %d", target, code)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for b.State == "running" && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		s.call(adminToken, "GET", "/api/v1/backups/"+b.ID, nil, &b)
	}
	if b.State != "complete" {
		s.t.Fatalf("backup %s to %s: %s (%s)", b.ID, target, b.State, b.Error)
	}
	return b
}

// took is how long a backup ran.
func took(b apiv1.Backup) time.Duration {
	if b.FinishedAt == nil {
		return 0
	}
	return b.FinishedAt.Sub(b.StartedAt).Round(10 * time.Millisecond)
}

// backupMarks lists the backup marks (internal snapshots) in a desktop's
// data disk.
func (s *server) backupMarks(d *apiv1.Desktop) []string {
	s.t.Helper()
	disk := filepath.Join(s.dataDir, "desktops", d.ID, "data.qcow2")
	out, err := exec.Command("qemu-img", "snapshot", "-U", "-l", disk).CombinedOutput()
	if err != nil {
		s.t.Fatalf("qemu-img snapshot -l: %v\n%s", err, out)
	}
	var marks []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "bureau-backup-") {
			marks = append(marks, f)
		}
	}
	return marks
}

// waitGone waits until a desktop is deleted.
func (s *server) waitGone(id string) {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if code := s.call(adminToken, "GET", "/api/v1/desktops/"+id, nil, nil); code == http.StatusNotFound {
			return
		}
		time.Sleep(time.Second)
	}
	s.t.Fatalf("desktop %s not deleted after 3 minutes", id)
}
