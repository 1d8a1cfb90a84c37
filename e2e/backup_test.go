//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// A small folder for reading a backup's files: a file, a subfolder and a symlink.
	s.guest(running, `mkdir -p /home/agent/work/sub/deeper && echo alpha > /home/agent/work/sub/a.txt && seq 1 5000 > /home/agent/work/sub/deeper/b.txt && ln -s a.txt /home/agent/work/sub/link && sync`)
	atFirst := s.guestSums(running, "/home/agent/work", "big", "numbers", "note", "sub/a.txt", "sub/deeper/b.txt")

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
	atSecond := s.guestSums(running, "/home/agent/work", "big", "mid", "numbers", "note", "sub/a.txt", "sub/deeper/b.txt")
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
	failed := list.Backups[0]
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

	// A backup's files, read without restoring it: listed, downloaded, put
	// back into the running desktop (docs/backups.md, "Files in a backup").
	checkBackupFiles(t, s, running, first, second, failed, atFirst, atSecond)

	// The console shows them, on the desktop's tab and the admin's page
	// (and the second backup's files).
	checkBackupsPage(t, s, d.ID, []apiv1.Backup{local, third, second, first}, second.ID)

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
	// Its files went with it.
	s.expectError(adminToken, "GET", "/api/v1/backups/"+first.ID+"/files?path=/home/agent/work", nil, 404, "not_found")
	s.expectError(adminToken, "GET", "/api/v1/backups/"+first.ID+"/files/content?path=/home/agent/work/note", nil, 404, "not_found")
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

	// The disaster drill: a fresh install with the key and the target, on
	// SQLite (in make test the first install is on PostgreSQL: a backup
	// does not depend on the database that made it).
	dir2, err := os.MkdirTemp("/var/lib", "bureau-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "backup.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := newSQLiteServerIn(t, dir2)
	if code := s2.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "offsite", "kind": "s3", "s3": s3}, nil); code != http.StatusCreated {
		t.Fatalf("the fresh install adds the target: %d", code)
	}
	list.Backups = nil
	s2.call(adminToken, "GET", "/api/v1/backups?desktop="+d.ID, nil, &list)
	if len(list.Backups) != 2 {
		t.Fatalf("the fresh install lists %d backups of the desktop, want the 2 complete ones left in the target: %+v", len(list.Backups), list.Backups)
	}
	// Its files can be read there too, before anything is restored.
	var note bytes.Buffer
	if resp := s2.backupFileGet(adminToken, third.ID, "/home/agent/work/note", &note); resp.StatusCode != http.StatusOK || note.String() != "first\nsecond\nthird\n" {
		t.Errorf("the fresh install reads the third backup's note: %d %q", resp.StatusCode, note.String())
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
	checkRestoreOnto(t, s2, up, third, sums)
}

// checkRestoreOnto writes backup bk over desktop d's data disk, in place,
// once d is stopped (docs/backups.md, "Over a stopped desktop"): its /home
// is the backup's again (sums: the sha256sum lines of its work files),
// what was written since is gone, its OS disk is kept, and the disk as it
// was is a snapshot that reverts the restore.
func checkRestoreOnto(t *testing.T, s *server, d *apiv1.Desktop, bk apiv1.Backup, sums string) {
	t.Helper()
	s.guest(d, "echo changed > /home/agent/work/note && echo new > /home/agent/work/since && echo kept > /var/tmp/os-kept && sync")
	restore := "/api/v1/backups/" + bk.ID + "/restore"
	s.expectError(adminToken, "POST", restore, map[string]any{"desktop": d.ID, "replace_data_disk": true}, 409, "invalid_state")
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/stop", nil, nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	s.waitState(adminToken, d.ID, desktop.StateStopped, 5*time.Minute)
	s.expectError(adminToken, "POST", restore, map[string]any{"desktop": d.ID}, 422, "invalid")
	began := time.Now()
	var r apiv1.Desktop
	if code := s.call(adminToken, "POST", restore, map[string]any{"desktop": d.Name, "replace_data_disk": true}, &r); code != http.StatusAccepted ||
		r.ID != d.ID || r.State != string(desktop.StateReverting) || r.Operation != string(desktop.OpRestoreData) {
		t.Fatalf("restore over the stopped desktop: %d %+v", code, r)
	}
	if done := s.waitState(adminToken, d.ID, desktop.StateStopped, 10*time.Minute); done.LastError != "" {
		t.Fatalf("restore over the desktop: %q", done.LastError)
	}
	t.Logf("restore of backup %s over a stopped desktop's %d GiB data disk: %s", bk.ID, bk.DiskBytes>>30, time.Since(began).Round(100*time.Millisecond))
	var snaps struct{ Snapshots []apiv1.Snapshot }
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/snapshots", nil, &snaps)
	if !slices.ContainsFunc(snaps.Snapshots, func(sn apiv1.Snapshot) bool {
		return sn.Name == "before-restore-"+bk.ID && sn.Scope == desktop.ScopeData
	}) {
		t.Errorf("no data snapshot before-restore-%s after the restore: %+v", bk.ID, snaps.Snapshots)
	}
	s.eventsInclude(adminToken, d.ID, "restore_requested", "data_disk_restored")

	s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/start", nil, nil)
	up := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(up, 5*time.Minute)
	s.waitGuest(up, "/home mounted", "test -d /home/agent/work", 5*time.Minute)
	if got, _ := s.guest(up, "cd /home/agent/work && sha256sum big mid numbers note"); got != sums {
		t.Errorf("files after the restore over the desktop differ:\n got %s\nwant %s", got, sums)
	}
	if out, _ := s.guest(up, "test -e /home/agent/work/since && echo since-stays; cat /var/tmp/os-kept"); out != "kept" {
		t.Errorf("after the restore over the desktop: %q, want the file written since gone and the OS disk kept", out)
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

// backupEntry is the entry of a listing of a backup's files named name,
// or nil.
func backupEntry(l apiv1.BackupFiles, name string) *apiv1.BackupFile {
	for i := range l.Entries {
		if l.Entries[i].Name == name {
			return &l.Entries[i]
		}
	}
	return nil
}

// backupEntryNames are the names a listing of a backup's files gives, in
// its order.
func backupEntryNames(l apiv1.BackupFiles) string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Name)
	}
	return strings.Join(out, " ")
}

// attachmentNamed says whether a Content-Disposition header is an
// attachment named name (quoted or not: RFC 6266 allows both).
func attachmentNamed(header, name string) bool {
	kind, params, err := mime.ParseMediaType(header)
	return err == nil && kind == "attachment" && params["filename"] == name
}

// checkBackupFiles reads the files of two complete backups of d (running)
// without restoring them: first holds work/{big,numbers,note} and work/sub
// (a.txt, deeper/b.txt, a symlink link -> a.txt), second also work/mid and
// a longer note; atFirst and atSecond are the sha256 sums of those files in
// the guest when each was taken (guestSums). failed is a backup that never
// completed. Files are put back into d under /home/agent/restored*.
func checkBackupFiles(t *testing.T, s *server, d *apiv1.Desktop, first, second, failed apiv1.Backup, atFirst, atSecond map[string]string) {
	t.Helper()
	files := func(b apiv1.Backup, path string) string {
		return "/api/v1/backups/" + b.ID + "/files?path=" + url.QueryEscape(path)
	}
	restore := "/api/v1/backups/" + second.ID + "/files/restore"
	opened := time.Now()

	// Listing: /home by default; folders sorted by name, never . or ..
	var home apiv1.BackupFiles
	if code := s.call(adminToken, "GET", "/api/v1/backups/"+second.ID+"/files", nil, &home); code != http.StatusOK ||
		home.BackupID != second.ID || home.Path != "/home" || home.Type != "dir" || backupEntry(home, "agent") == nil || backupEntry(home, "agent").Type != "dir" {
		t.Errorf("list the second backup's files (path left out: /home): %d %+v", code, home)
		return // the rest of TestBackups does not need them
	}
	t.Logf("a backup opened for its files and /home listed in %s", time.Since(opened).Round(100*time.Millisecond))
	var agent apiv1.BackupFiles
	if s.call(adminToken, "GET", files(second, "/home/agent"), nil, &agent); agent.Path != "/home/agent" || agent.Type != "dir" ||
		backupEntry(agent, "work") == nil || backupEntry(agent, "work").Type != "dir" || backupEntry(agent, "work").Path != "/home/agent/work" {
		t.Errorf("/home/agent of the second backup: %+v", agent)
	}
	sizes := map[string]int64{"big": 200 << 20, "mid": 10 << 20, "note": int64(len("first\nsecond\n")), "numbers": int64(len(seqText(100000)))}
	var work apiv1.BackupFiles
	s.call(adminToken, "GET", files(second, "/home/agent/work"), nil, &work)
	if got, want := backupEntryNames(work), "big mid note numbers sub"; got != want {
		t.Errorf("/home/agent/work of the second backup lists %q, want %q (sorted, no . or ..)", got, want)
	}
	for name, size := range sizes {
		if e := backupEntry(work, name); e == nil || e.Type != "file" || e.Size != size || e.Path != "/home/agent/work/"+name || e.Mode == "" || e.Modified.IsZero() {
			t.Errorf("%s in the second backup: %+v, want a file of %d bytes", name, e, size)
		}
	}
	if e := backupEntry(work, "sub"); e == nil || e.Type != "dir" {
		t.Errorf("sub in the second backup: %+v, want a folder", e)
	}
	var sub apiv1.BackupFiles
	s.call(adminToken, "GET", files(second, "/home/agent/work/sub"), nil, &sub)
	if got := backupEntryNames(sub); got != "a.txt deeper link" {
		t.Errorf("/home/agent/work/sub of the second backup lists %q, want a.txt deeper link", got)
	} else if a, dp, l := backupEntry(sub, "a.txt"), backupEntry(sub, "deeper"), backupEntry(sub, "link"); a.Type != "file" || a.Size != 6 || dp.Type != "dir" || l.Type != "symlink" || l.LinkTarget != "a.txt" {
		t.Errorf("/home/agent/work/sub of the second backup: %+v", sub.Entries)
	}
	var one apiv1.BackupFiles
	if s.call(adminToken, "GET", files(second, "/home/agent/work/note"), nil, &one); one.Type != "file" || one.Size != sizes["note"] || one.Entries == nil || len(one.Entries) != 0 {
		t.Errorf("a file described: %+v (want type file, entries [])", one)
	}
	// The first backup: taken before mid was written.
	var workFirst apiv1.BackupFiles
	if s.call(adminToken, "GET", files(first, "/home/agent/work"), nil, &workFirst); backupEntryNames(workFirst) != "big note numbers sub" ||
		backupEntry(workFirst, "note").Size != int64(len("first\n")) {
		t.Errorf("/home/agent/work of the first backup: %+v (want big note numbers sub, note of 6 bytes)", workFirst.Entries)
	}
	if e := s.expectError(adminToken, "GET", files(first, "/home/agent/work/mid"), nil, 404, "not_found"); !strings.Contains(e.Error.Message, "/home/agent/work/mid") {
		t.Errorf("a path not in the backup: the error does not name it: %q", e.Error.Message)
	}

	// Downloads: a file's bytes are the guest's when the backup was taken.
	for _, c := range []struct {
		b    apiv1.Backup
		name string
		want map[string]string
	}{
		{first, "numbers", atFirst}, {first, "note", atFirst}, {second, "note", atSecond},
		{second, "mid", atSecond}, {second, "big", atSecond}, {second, "sub/deeper/b.txt", atSecond},
	} {
		h := sha256.New()
		began := time.Now()
		resp := s.backupFileGet(adminToken, c.b.ID, "/home/agent/work/"+c.name, h)
		got := hex.EncodeToString(h.Sum(nil))
		base := filepath.Base(c.name)
		if resp.StatusCode != http.StatusOK || got != c.want[c.name] {
			t.Errorf("download %s of backup %s: %d, sha256 %s, want %s (the guest's when it was taken)", c.name, c.b.ID, resp.StatusCode, got, c.want[c.name])
		} else if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "application/octet-stream" ||
			!attachmentNamed(cd, base) || resp.ContentLength < 0 {
			t.Errorf("download %s: Content-Type %q, Content-Disposition %q, Content-Length %d", c.name, ct, cd, resp.ContentLength)
		}
		if c.name == "big" {
			t.Logf("a 200 MiB file downloaded from a backup in %s", time.Since(began).Round(100*time.Millisecond))
		}
	}
	var note bytes.Buffer
	if s.backupFileGet(adminToken, first.ID, "/home/agent/work/note", &note); note.String() != "first\n" {
		t.Errorf("the first backup's note: %q", note.String())
	}
	// A symlink is not downloaded: its target is.
	if resp := s.backupFileGet(adminToken, second.ID, "/home/agent/work/sub/link", io.Discard); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("download a symlink: %d, want 400", resp.StatusCode)
	}

	// A folder downloads as a tar of what it holds.
	var tarball bytes.Buffer
	resp := s.backupFileGet(adminToken, second.ID, "/home/agent/work/sub", &tarball)
	if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); resp.StatusCode != http.StatusOK || ct != "application/x-tar" || !attachmentNamed(cd, "sub.tar") {
		t.Errorf("download a folder: %d, Content-Type %q, Content-Disposition %q", resp.StatusCode, ct, cd)
	}
	members := map[string]string{} // name -> what it is: "dir", "-> target" or the sha256 of its bytes
	tr := tar.NewReader(&tarball)
	for {
		hd, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				t.Errorf("the folder's tar: %v (members so far %v)", err, members)
			}
			break
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hd.Name, "./"), "/")
		switch hd.Typeflag {
		case tar.TypeDir:
			members[name] = "dir"
		case tar.TypeSymlink:
			members[name] = "-> " + hd.Linkname
		case tar.TypeReg:
			h := sha256.New()
			io.Copy(h, tr)
			members[name] = hex.EncodeToString(h.Sum(nil))
		default:
			members[name] = fmt.Sprintf("type %c", hd.Typeflag)
		}
	}
	delete(members, "") // a member for the folder itself, if any
	wantTar := map[string]string{"a.txt": atSecond["sub/a.txt"], "deeper": "dir", "deeper/b.txt": atSecond["sub/deeper/b.txt"], "link": "-> a.txt"}
	if fmt.Sprint(members) != fmt.Sprint(wantTar) {
		t.Errorf("the folder's tar holds %v, want %v", members, wantTar)
	}

	// Put back into the running desktop: a file at a new path (its folder
	// made), written as the desktop's user.
	var put apiv1.BackupFilesRestored
	if code := s.call(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/note", "desktop": d.Name, "to": "/home/agent/restored/note"}, &put); code != http.StatusOK ||
		put.BackupID != second.ID || put.DesktopID != d.ID || put.Path != "/home/agent/work/note" || put.To != "/home/agent/restored/note" || put.Files != 1 || put.Bytes != sizes["note"] {
		t.Errorf("restore a file into the desktop: %d %+v", code, put)
	}
	inGuest := func(file string) string {
		out, _ := s.guest(d, "sha256sum "+file+" | cut -d' ' -f1; stat -c %U "+file)
		return out
	}
	if got, want := inGuest("/home/agent/restored/note"), atSecond["note"]+"\nagent"; got != want {
		t.Errorf("the restored file in the guest: %q, want %q (sha256, owner)", got, want)
	}
	// Again: it is there now. Without overwrite nothing is written.
	s.guest(d, "echo changed > /home/agent/restored/note")
	if e := s.expectError(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/note", "desktop": d.ID, "to": "/home/agent/restored/note"}, 409, "exists"); !strings.Contains(e.Error.Message, "/home/agent/restored/note") {
		t.Errorf("restore over a file: the error does not name it: %q", e.Error.Message)
	}
	if out, _ := s.guest(d, "cat /home/agent/restored/note"); out != "changed" {
		t.Errorf("a refused restore changed the file: %q", out)
	}
	// to defaults to path, which is there.
	s.expectError(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/mid", "desktop": d.ID}, 409, "exists")
	put = apiv1.BackupFilesRestored{}
	if code := s.call(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/note", "desktop": d.ID, "to": "/home/agent/restored/note", "overwrite": true}, &put); code != http.StatusOK || put.Files != 1 {
		t.Errorf("restore over a file with overwrite: %d %+v", code, put)
	}
	if got, want := inGuest("/home/agent/restored/note"), atSecond["note"]+"\nagent"; got != want {
		t.Errorf("the file restored over the changed one: %q, want %q", got, want)
	}
	// A folder at a new path.
	put = apiv1.BackupFilesRestored{}
	if code := s.call(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/sub", "desktop": d.ID, "to": "/home/agent/restored-sub"}, &put); code != http.StatusOK ||
		put.To != "/home/agent/restored-sub" || put.Files < 2 || put.Bytes < int64(6+len(seqText(5000))) {
		t.Errorf("restore a folder into the desktop: %d %+v", code, put)
	}
	if out, _ := s.guest(d, "cd /home/agent/restored-sub && sha256sum a.txt deeper/b.txt && readlink link && stat -c %U deeper/b.txt"); out !=
		atSecond["sub/a.txt"]+"  a.txt\n"+atSecond["sub/deeper/b.txt"]+"  deeper/b.txt\na.txt\nagent" {
		t.Errorf("the restored folder in the guest:\n%s", out)
	}
	var evs struct{ Events []apiv1.Event }
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events?limit=1000", nil, &evs)
	said := 0
	for _, e := range evs.Events {
		if e.Type == "backup_files_restored" && strings.Contains(e.Message, second.ID) {
			said++
		}
	}
	if said != 3 {
		t.Errorf("the desktop's events say backup_files_restored from %s %d times, want 3 (the refused restores say nothing)", second.ID, said)
	}

	// Bad paths, for reading and for where to write.
	for _, p := range []string{"/home/../etc/passwd", "/etc/passwd", "relative", "home/agent"} {
		s.expectError(adminToken, "GET", files(second, p), nil, 400, "invalid_path")
		s.expectError(adminToken, "GET", "/api/v1/backups/"+second.ID+"/files/content?path="+url.QueryEscape(p), nil, 400, "invalid_path")
		s.expectError(adminToken, "POST", restore, map[string]any{"path": p, "desktop": d.ID, "to": "/home/agent/restored/x"}, 400, "invalid_path")
		s.expectError(adminToken, "POST", restore, map[string]any{"path": "/home/agent/work/note", "desktop": d.ID, "to": p}, 400, "invalid_path")
	}
	if out, _ := s.guest(d, "test -e /home/agent/restored/x; echo $?"); out != "1" {
		t.Errorf("a restore refused for its path wrote /home/agent/restored/x: test -e says %q", out)
	}
	s.expectError(adminToken, "GET", "/api/v1/backups/"+second.ID+"/files/content?path=/home/agent/nope", nil, 404, "not_found")
	s.expectError(adminToken, "POST", restore, map[string]any{"path": "/home/agent/nope", "desktop": d.ID, "to": "/home/agent/restored/nope"}, 404, "not_found")

	// Another owner sees no such backup.
	var other struct {
		Token string `json:"token"`
	}
	if code := s.call(adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": "bk-other", "name": "bk-other"}, &other); code != http.StatusCreated {
		t.Fatalf("a second owner's token: %d", code)
	}
	s.expectError(other.Token, "GET", files(second, "/home/agent"), nil, 404, "not_found")
	s.expectError(other.Token, "GET", "/api/v1/backups/"+second.ID+"/files/content?path=/home/agent/work/note", nil, 404, "not_found")
	s.expectError(other.Token, "POST", restore, map[string]any{"path": "/home/agent/work/note", "desktop": d.ID, "to": "/home/agent/restored/other"}, 404, "not_found")

	// A backup that never completed cannot be opened.
	if code := s.call(adminToken, "GET", files(failed, "/home"), nil, nil); code != http.StatusConflict {
		t.Errorf("the files of a failed backup: %d, want 409", code)
	}
}

// backupFileGet downloads path of a backup (GET
// /api/v1/backups/{id}/files/content) into w and returns the response (its
// body read).
func (s *server) backupFileGet(token, id, path string, w io.Writer) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/v1/backups/"+id+"/files/content?path="+url.QueryEscape(path), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("download %s of backup %s: %v", path, id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w = io.Discard
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		s.t.Errorf("download %s of backup %s: %v", path, id, err)
	}
	return resp
}

// guestSums is the sha256 sum of each file (relative to dir) in the guest.
func (s *server) guestSums(d *apiv1.Desktop, dir string, files ...string) map[string]string {
	s.t.Helper()
	out, code := s.guest(d, "cd "+dir+" && sha256sum "+strings.Join(files, " "))
	if code != 0 {
		s.t.Fatalf("sha256sum in the guest: %s", out)
	}
	sums := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			sums[f[1]] = f[0]
		}
	}
	return sums
}

// seqText is what `seq 1 n` prints.
func seqText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}
