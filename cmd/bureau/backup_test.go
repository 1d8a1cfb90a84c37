package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

var backupBegan = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// backupRecord is a backup as the API shows it, with fields on top.
func backupRecord(state string, fields map[string]any) map[string]any {
	b := map[string]any{"id": "b1", "desktop_id": "d1", "desktop_name": "agent-1", "owner": "alice", "target_id": "t1",
		"state": state, "kind": "full", "consistency": "", "disk_bytes": 20 << 30, "image": "debian", "vcpus": 2,
		"memory_mib": 4096, "bytes_read": 0, "read_total": 0, "chunks": 0, "chunks_new": 0, "bytes_new": 0,
		"started_at": backupBegan}
	for k, v := range fields {
		b[k] = v
	}
	return b
}

// bodies records the JSON bodies a route was sent (and answers with
// status and v).
func (f *fakeBureau) bodies(route string, status int, v any) *[]string {
	var mu sync.Mutex
	var got []string
	f.routes[route] = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		writeJSON(w, status, v)
	}
	return &got
}

func TestBackupTargetAddRefusesBadArguments(t *testing.T) {
	t.Setenv(s3SecretEnv, "")
	f := newFakeBureau(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nas"}, "give --dir PATH, or --s3-endpoint"},
		{[]string{"nas", "--dir", "/srv/b", "--s3-endpoint", "h:9000"}, "--dir and --s3-endpoint: give one"},
		{[]string{"nas", "--s3-endpoint", "h:9000", "--s3-access-key", "k"}, "an S3 target needs --s3-bucket and --s3-access-key"},
		{[]string{"nas", "--s3-endpoint", "h:9000", "--s3-bucket", "b", "--s3-access-key", "k"}, "the S3 secret key: give --s3-secret-key-file FILE or set BUREAU_S3_SECRET_KEY"},
		{[]string{"nas", "--s3-endpoint", "h:9000", "--s3-bucket", "b", "--s3-access-key", "k", "--s3-secret-key-file", "/nonexistent"}, "the S3 secret key: open /nonexistent"},
		{[]string{}, "accepts 1 arg(s), received 0"},
	} {
		if _, _, err := f.run(append([]string{"backup-target", "add"}, c.args...)...); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if r := f.requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}
	if _, _, err := f.run("backup-target", "add", "nas", "--s3-secret-key", "x"); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("a secret key flag: %v", err)
	}
}

func TestBackupTargetAdd(t *testing.T) {
	f := newFakeBureau(t)
	target := map[string]any{"id": "t1", "name": "offsite", "kind": "s3", "created_at": backupBegan, "created_by": "root/tok",
		"s3": map[string]any{"endpoint": "nas.lan:9000", "bucket": "bk", "access_key": "AKID", "insecure": true}}
	sent := f.bodies("POST /api/v1/backup-targets", 201, target)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("hunter2\n"), 0o600)
	out, _, err := f.run("backup-target", "add", "offsite", "--s3-endpoint", "nas.lan:9000", "--s3-bucket", "bk",
		"--s3-prefix", "bureau/", "--s3-region", "eu-central-1", "--s3-access-key", "AKID", "--s3-secret-key-file", secret, "--s3-insecure")
	if err != nil || !strings.Contains(out, `"name": "offsite"`) {
		t.Fatalf("%s %v", out, err)
	}
	t.Setenv(s3SecretEnv, "from-env")
	if _, _, err := f.run("backup-target", "add", "offsite", "--s3-endpoint", "nas.lan:9000", "--s3-bucket", "bk", "--s3-access-key", "AKID"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.run("backup-target", "add", "local", "--dir", "/srv/backups"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"name":"offsite","kind":"s3","s3":{"endpoint":"nas.lan:9000","bucket":"bk","prefix":"bureau/","region":"eu-central-1","access_key":"AKID","secret_key":"hunter2","insecure":true}}`,
		`{"name":"offsite","kind":"s3","s3":{"endpoint":"nas.lan:9000","bucket":"bk","access_key":"AKID","secret_key":"from-env"}}`,
		`{"name":"local","kind":"dir","dir":"/srv/backups"}`,
	}
	if strings.Join(*sent, "\n") != strings.Join(want, "\n") {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(*sent, "\n"), strings.Join(want, "\n"))
	}
}

func TestBackupTargetListAndRm(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	f.json("GET /api/v1/backup-targets", 200, map[string]any{"targets": []map[string]any{
		{"id": "t1", "name": "offsite", "kind": "s3", "created_at": backupBegan, "created_by": "root/tok_1",
			"s3": map[string]any{"endpoint": "nas.lan:9000", "bucket": "bk", "prefix": "bureau/", "region": "eu", "access_key": "AKID", "insecure": true}},
		{"id": "t2", "name": "local", "kind": "dir", "dir": "/srv/backups", "created_at": backupBegan, "created_by": "root/tok_1"},
	}})
	out, _, err := f.run("backup-target", "list")
	want := `ID  NAME     KIND  LOCATION                                                    ADDED                BY
t1  offsite  s3    s3://bk/bureau/ at nas.lan:9000 (eu, plain HTTP, key AKID)  2025-03-04 05:06:07  root/tok_1
t2  local    dir   /srv/backups                                                2025-03-04 05:06:07  root/tok_1
`
	if err != nil || trimLines(out) != want {
		t.Errorf("got\n%s\nwant\n%s%v", out, want, err)
	}
	f.json("DELETE /api/v1/backup-targets/offsite", 204, nil)
	if out, _, err := f.run("backup-target", "rm", "offsite"); err != nil || !strings.HasPrefix(out, "backup target offsite removed; its backups stay in it") {
		t.Errorf("rm: %q %v", out, err)
	}
}

// TestBackupCreateWait follows a backup: progress on stderr, then the
// summary; the request names the desktop by id and the target.
func TestBackupCreateWait(t *testing.T) {
	old := backupPoll
	backupPoll = time.Millisecond
	t.Cleanup(func() { backupPoll = old })
	f := newFakeBureau(t)
	sent := f.bodies("POST /api/v1/desktops/d1/backups", 202, backupRecord("running", nil))
	finished := backupBegan.Add(4*time.Minute + 12*time.Second)
	seq := []map[string]any{
		backupRecord("running", map[string]any{"consistency": "filesystem", "read_total": 3 << 30, "bytes_read": 1 << 30, "chunks_new": 256, "bytes_new": 300 << 20}),
		backupRecord("running", map[string]any{"consistency": "filesystem", "read_total": 3 << 30, "bytes_read": 2 << 30, "chunks_new": 512, "bytes_new": 600 << 20}),
		backupRecord("complete", map[string]any{"consistency": "filesystem", "read_total": 3 << 30, "bytes_read": 3 << 30, "chunks": 768,
			"chunks_new": 768, "bytes_new": 900 << 20, "why_full": "the desktop's first backup to target nas", "finished_at": finished}),
	}
	var mu sync.Mutex
	reads := 0
	f.routes["GET /api/v1/backups/b1"] = func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		writeJSON(w, 200, seq[min(reads, len(seq)-1)])
		reads++
	}
	out, errw, err := f.run("backup", "create", "agent-1", "--target", "nas", "--wait")
	if err != nil {
		t.Fatal(err, errw)
	}
	if want := "full backup b1 of desktop agent-1 complete (the desktop's first backup to target nas), filesystem-consistent " +
		"(the guest's filesystems frozen): 3.0 GiB read, 768 of 768 chunks new (900.0 MiB uploaded) in 4m12s\n"; out != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
	if !strings.HasPrefix(errw, "backup 0% — marking the data disk — ") {
		t.Errorf("progress %q", errw)
	}
	if len(*sent) != 1 || (*sent)[0] != `{"target":"nas"}` {
		t.Errorf("bodies %v", *sent)
	}
}

func TestBackupCreateWaitFails(t *testing.T) {
	old := backupPoll
	backupPoll = time.Millisecond
	t.Cleanup(func() { backupPoll = old })
	f := newFakeBureau(t)
	f.bodies("POST /api/v1/desktops/d1/backups", 202, backupRecord("running", nil))
	f.json("GET /api/v1/backups/b1", 200, backupRecord("failed", map[string]any{"error": "read the data disk at its mark: input/output error"}))
	out, _, err := f.run("backup", "create", "d1", "--wait")
	if err == nil || err.Error() != "backup b1 of desktop agent-1 failed: read the data disk at its mark: input/output error" || out != "" {
		t.Errorf("%q %v", out, err)
	}
}

func TestBackupCreatePrintsTheRecord(t *testing.T) {
	f := newFakeBureau(t)
	sent := f.bodies("POST /api/v1/desktops/d1/backups", 202, backupRecord("running", nil))
	out, _, err := f.run("backup", "create", "agent-1")
	if err != nil || !strings.Contains(out, `"state": "running"`) || strings.Contains(out, "mark") {
		t.Errorf("%s %v", out, err)
	}
	if (*sent)[0] != `{}` {
		t.Errorf("body %q", (*sent)[0])
	}
	f.json("POST /api/v1/desktops/d1/backups", 422, map[string]any{"error": map[string]string{"code": "invalid", "field": "target",
		"message": "2 backup targets are set up: name one"}})
	if _, _, err := f.run("backup", "create", "agent-1"); err == nil || !strings.HasPrefix(err.Error(), "2 backup targets are set up: name one") {
		t.Errorf("refused: %v", err)
	}
	if _, _, err := f.run("backup", "create", "nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an unknown desktop: %v", err)
	}
}

func TestBackupList(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	done := backupBegan.Add(95 * time.Second)
	list := map[string]any{"backups": []map[string]any{
		backupRecord("running", map[string]any{"id": "b3", "consistency": "crash", "bytes_read": 512 << 20}),
		backupRecord("complete", map[string]any{"id": "b2", "kind": "incremental", "parent": "b1", "consistency": "filesystem",
			"bytes_read": 40 << 20, "bytes_new": 10 << 20, "finished_at": done}),
		backupRecord("complete", map[string]any{"id": "b0", "desktop_id": "d9", "desktop_name": "gone", "consistency": "stopped",
			"bytes_read": 3 << 30, "bytes_new": 1 << 30, "finished_at": done}),
	}}
	f.json("GET /api/v1/backups", 200, list)
	out, _, err := f.run("backup", "list")
	want := `ID  DESKTOP  STATE     KIND         CONSISTENCY  DISK      READ       UPLOADED  TARGET  STARTED              TOOK
b3  agent-1  running   full         crash        20.0 GiB  512.0 MiB  0 B       t1      2025-03-04 05:06:07  -
b2  agent-1  complete  incremental  filesystem   20.0 GiB  40.0 MiB   10.0 MiB  t1      2025-03-04 05:06:07  1m35s
b0  gone     complete  full         stopped      20.0 GiB  3.0 GiB    1.0 GiB   t1      2025-03-04 05:06:07  1m35s
`
	if err != nil || trimLines(out) != want {
		t.Errorf("got\n%s\nwant\n%s%v", out, want, err)
	}
	// A desktop by name is asked for by id; a deleted one is found by its
	// last name among the caller's backups.
	if _, _, err := f.run("backup", "list", "--desktop", "agent-1", "--target", "nas"); err != nil {
		t.Fatal(err)
	}
	out, _, err = f.run("backup", "list", "--desktop", "gone")
	if err != nil || strings.Count(out, "\n") != 2 || !strings.Contains(out, "b0  gone") {
		t.Errorf("a deleted desktop's: %s %v", out, err)
	}
	if _, _, err := f.run("backup", "list", "--desktop", "never"); err == nil || err.Error() != "no desktop never, and no backup of one by that name or id" {
		t.Errorf("no such desktop: %v", err)
	}
	var asked []string
	for _, r := range f.requests() {
		if strings.HasPrefix(r, "GET /api/v1/backups") {
			asked = append(asked, r)
		}
	}
	if want := []string{"GET /api/v1/backups", "GET /api/v1/backups?desktop=d1&target=nas", "GET /api/v1/backups", "GET /api/v1/backups"}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("asked %v", asked)
	}
}

func TestBackupShow(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET /api/v1/backups/b1", 200, backupRecord("complete", map[string]any{"parent": "b0"}))
	out, _, err := f.run("backup", "show", "b1")
	var b map[string]any
	if err != nil || json.Unmarshal([]byte(out), &b) != nil || b["parent"] != "b0" || b["disk_bytes"] != float64(20<<30) {
		t.Errorf("%s %v", out, err)
	}
}

func TestBackupVerify(t *testing.T) {
	f := newFakeBureau(t)
	f.json("POST /api/v1/backups/b1/verify", 200, map[string]any{"backup_id": "b1", "chunks": 768, "missing": []string{}, "corrupt": []string{}, "ok": true, "took_ms": 3240})
	out, _, err := f.run("backup", "verify", "b1")
	if err != nil || out != "backup b1 is intact: 768 chunks read back and checked in 3.2s\n" {
		t.Errorf("%q %v", out, err)
	}
	f.json("POST /api/v1/backups/b1/verify", 200, map[string]any{"backup_id": "b1", "chunks": 768, "missing": []string{"chunks/ab/ab12"},
		"corrupt": []string{"chunks/cd/cd34", "chunks/ef/ef56"}, "ok": false, "took_ms": 3240})
	out, _, err = f.run("backup", "verify", "b1")
	if out != "missing: chunks/ab/ab12\ncorrupt: chunks/cd/cd34\ncorrupt: chunks/ef/ef56\n" ||
		err == nil || err.Error() != "backup b1 is damaged: 1 chunks missing, 2 corrupt of 768; a restore of it would fail" {
		t.Errorf("%q %v", out, err)
	}
}

func TestBackupRestore(t *testing.T) {
	f := newFakeBureau(t)
	for _, args := range [][]string{{"backup", "restore", "b1"}, {"backup", "restore", "b1", "--name", "x", "--onto", "y"}} {
		if _, _, err := f.run(args...); err == nil || !strings.Contains(err.Error(), "give --name (a new desktop) or --onto") {
			t.Errorf("%v: %v", args, err)
		}
	}
	sent := f.bodies("POST /api/v1/backups/b1/restore", 202, map[string]any{"id": "d2", "name": "back", "owner": "alice", "state": "creating",
		"operation": "create", "operation_step": "disks"})
	f.json("GET /api/v1/desktops/d2", 200, map[string]any{"id": "d2", "name": "back", "owner": "alice", "state": "running"})
	out, errw, err := f.run("backup", "restore", "b1", "--name", "back", "--wait")
	if err != nil || !strings.Contains(out, `"state": "running"`) || !strings.Contains(errw, "creating") {
		t.Errorf("%s %s %v", out, errw, err)
	}
	out, _, err = f.run("backup", "restore", "b1", "--name", "back")
	if err != nil || !strings.Contains(out, `"state": "creating"`) {
		t.Errorf("%s %v", out, err)
	}
	if strings.Join(*sent, "|") != `{"name":"back"}|{"name":"back"}` {
		t.Errorf("bodies %v", *sent)
	}
}

// TestBackupRestoreOnto: --onto writes the backup over a stopped desktop's
// data disk; --wait waits until it is stopped again and fails when the
// restore did (the desktop says why).
func TestBackupRestoreOnto(t *testing.T) {
	f := newFakeBureau(t)
	sent := f.bodies("POST /api/v1/backups/b1/restore", 202, map[string]any{"id": "d1", "name": "work", "owner": "alice", "state": "reverting",
		"operation": "restore_data"})
	f.json("GET /api/v1/desktops/d1", 200, map[string]any{"id": "d1", "name": "work", "owner": "alice", "state": "stopped",
		"last_error": "restoring backup b1 failed: chunk x: not found; the data disk is as it was"})
	_, _, err := f.run("backup", "restore", "b1", "--onto", "work", "--replace-data-disk", "--wait")
	if err == nil || !strings.Contains(err.Error(), "the data disk is as it was") {
		t.Errorf("a failed restore onto a desktop: %v", err)
	}
	if strings.Join(*sent, "|") != `{"desktop":"work","replace_data_disk":true}` {
		t.Errorf("bodies %v", *sent)
	}
}

func TestBackupProgressLine(t *testing.T) {
	var pace backupPace
	at := time.Now()
	b := apiv1.Backup{Consistency: "crash", ReadTotal: 3 << 30, BytesRead: 1 << 30, ChunksNew: 256, BytesNew: 300 << 20}
	if got, want := progressLine(backupProgress(b, &pace, at), 10*time.Second),
		"backup 33% — 1.0 GiB/3.0 GiB read, 256 new chunks, 300.0 MiB uploaded — 10s elapsed"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	b.BytesRead, b.ChunksNew = 2<<30, 512
	if got, want := progressLine(backupProgress(b, &pace, at.Add(30*time.Second)), 40*time.Second),
		"backup 67% — 2.0 GiB/3.0 GiB read, 512 new chunks, 300.0 MiB uploaded — 40s elapsed, about 30s left"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
