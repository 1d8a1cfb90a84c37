//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/backup/backuptest"
	"github.com/bureau/bureau/internal/desktop"
)

// TestBackupBench measures backups side by side on real desktops and a
// real SeaweedFS on loopback (make bench-backup): a full backup of a 4 GiB
// data disk holding 1 GiB of random data, an incremental one after a
// 10 MiB change, the guest's disk throughput before and during a backup,
// a restore into a new desktop, and the dedup ratio over five desktops
// from one image. It is skipped unless BUREAU_BENCH_BACKUP=1.
func TestBackupBench(t *testing.T) {
	if os.Getenv("BUREAU_BENCH_BACKUP") != "1" {
		t.Skip("set BUREAU_BENCH_BACKUP=1 (make bench-backup)")
	}
	s := newServer(t)
	ctx := context.Background()
	loc, stopS3, err := backuptest.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("SeaweedFS: %v", err)
	}
	t.Cleanup(stopS3)
	s3 := map[string]any{"endpoint": loc.Endpoint, "bucket": loc.Bucket, "access_key": loc.AccessKey, "secret_key": loc.SecretKey, "insecure": true}
	for _, name := range []string{"bench", "drill"} {
		loc := map[string]any{"prefix": name + "/"}
		for k, v := range s3 {
			loc[k] = v
		}
		if code := s.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": name, "kind": "s3", "s3": loc}, nil); code != http.StatusCreated {
			t.Fatalf("add target %s: %d", name, code)
		}
	}
	var rows [][2]string
	row := func(name, value string) { rows = append(rows, [2]string{name, value}); t.Logf("%s: %s", name, value) }
	defer func() {
		var b strings.Builder
		fmt.Fprintf(&b, "\n| backups (TCG, SeaweedFS on loopback) | |\n|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
		}
		t.Log(b.String())
	}()

	// Five desktops from one image, booted together.
	var ds []apiv1.Desktop
	for i := range 5 {
		var d apiv1.Desktop
		if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": fmt.Sprintf("bb-%d", i), "vcpus": 1, "memory_mib": 1024, "data_disk_gib": 4}, &d); code != http.StatusAccepted {
			t.Fatalf("create: %d", code)
		}
		ds = append(ds, d)
	}
	for i := range ds {
		up := s.waitState(adminToken, ds[i].ID, desktop.StateRunning, 15*time.Minute)
		s.waitGuest(up, "cloud-init", "cloud-init status | grep -q 'status: done'", 20*time.Minute)
		ds[i] = *up
	}

	// Dedup: each fresh desktop's data disk to one target.
	var read, uploaded, cells int64
	for i := range ds {
		b := s.backupOf(ds[i].ID, "drill")
		read += b.BytesRead
		uploaded += b.BytesNew
		cells += int64(b.Chunks)
	}
	store, err := backup.NewS3(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := store.List(ctx, "drill/chunks/")
	row("dedup over 5 fresh desktops from one image (chunks used / stored)", fmt.Sprintf("%d / %d = %.1f× (%d MiB read, %.1f MiB uploaded)",
		cells, len(stored), float64(cells)/float64(max(len(stored), 1)), read>>20, float64(uploaded)/(1<<20)))
	for _, d := range ds[1:] {
		s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
	}

	d := &ds[0]
	s.guest(d, "head -c 1G /dev/urandom > /home/agent/gig && sync")
	throughput := func() string {
		out, _ := s.guest(d, "dd if=/dev/zero of=/home/agent/dd bs=1M count=128 oflag=direct 2>&1 | tail -1; rm -f /home/agent/dd")
		f := strings.Split(out, ", ")
		return f[len(f)-1]
	}
	row("guest disk write (dd 128 MiB, O_DIRECT), no backup", throughput())

	full := s.backupOf(d.ID, "bench")
	row("full backup of a 4 GiB data disk holding 1 GiB (random)", fmt.Sprintf("%s: %d MiB read, %.0f MB/s, %d MiB uploaded",
		took(full), full.BytesRead>>20, float64(full.BytesRead)/1e6/took(full).Seconds(), full.BytesNew>>20))

	s.guest(d, "head -c 10M /dev/urandom > /home/agent/ten && sync")
	inc := s.backupOf(d.ID, "bench")
	row("incremental after a 10 MiB change", fmt.Sprintf("%s: %d MiB read, %.1f MiB uploaded (%d chunks)",
		took(inc), inc.ReadTotal>>20, float64(inc.BytesNew)/(1<<20), inc.ChunksNew))

	// The guest's disk while a full backup (a target of its own) reads.
	var during apiv1.Backup
	if code := s.call(adminToken, "POST", "/api/v1/backup-targets", map[string]any{"name": "again", "kind": "dir", "dir": t.TempDir()}, nil); code != http.StatusCreated {
		t.Fatalf("add a directory target: %d", code)
	}
	if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/backups", map[string]any{"target": "again"}, &during); code != http.StatusAccepted {
		t.Fatalf("backup: %d", code)
	}
	time.Sleep(time.Second)
	row("guest disk write (dd 128 MiB, O_DIRECT), during a full backup", throughput())
	for during.State == "running" {
		time.Sleep(time.Second)
		s.call(adminToken, "GET", "/api/v1/backups/"+during.ID, nil, &during)
	}
	row("the same full backup to a directory target, while the guest wrote", fmt.Sprintf("%s (%s)", took(during), during.State))

	sum, _ := s.guest(d, "sha256sum /home/agent/gig /home/agent/ten")
	var restored apiv1.Desktop
	begun := time.Now()
	if code := s.call(adminToken, "POST", "/api/v1/backups/"+inc.ID+"/restore", map[string]any{"name": "bb-restored"}, &restored); code != http.StatusAccepted {
		t.Fatalf("restore: %d", code)
	}
	up := s.waitState(adminToken, restored.ID, desktop.StateRunning, 15*time.Minute)
	row("restore of that disk to a running desktop (request → running)", time.Since(begun).Round(100*time.Millisecond).String())
	s.waitAgent(up, 10*time.Minute)
	s.waitGuest(up, "cloud-init", "cloud-init status | grep -q 'status: done'", 20*time.Minute)
	if got, _ := s.guest(up, "sha256sum /home/agent/gig /home/agent/ten"); got != sum {
		t.Errorf("restored files differ: %s, want %s", got, sum)
	}
}
