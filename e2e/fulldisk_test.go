//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/capacity"
	"github.com/bureau/bureau/internal/desktop"
)

// TestFullDisk runs a real desktop on a small file system of its own and
// fills it: bureau refuses what would not fit with 507, a guest write that
// hits the full disk pauses the desktop with the reason instead of losing
// anything, and once space is freed the desktop resumes, its write
// completes and its data is intact. Hibernating into a save directory
// without room for the RAM is refused the same way.
func TestFullDisk(t *testing.T) {
	needE2E(t)
	dir := loopFS(t, 5<<30)
	s := newServerIn(t, dir)
	var d apiv1.Desktop
	// Small RAM for a small save, two vCPUs for a quicker boot under TCG
	// (one took ~3 min to the guest agent here).
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "full", "vcpus": 2, "memory_mib": 1024, "data_disk_gib": 2}, &d); code != http.StatusAccepted {
		t.Fatalf("create: %d", code)
	}
	api := "/api/v1/desktops/" + d.ID
	t.Cleanup(func() { // before the file system under it goes, whatever happened
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.hv.Destroy(ctx, domainOf(d.ID))
		s.hv.Undefine(ctx, domainOf(d.ID))
	})
	s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	t.Logf("create → guest agent: %s", s.waitAgent(&d, 10*time.Minute).Round(time.Second))
	s.waitGuest(&d, "home on the data disk", "mountpoint -q /home && test -d /home/agent", 5*time.Minute)
	s.waitReadyAPI(adminToken, d.ID, 10*time.Minute) // files answer 409 not_ready before
	const marker = "written before the disk filled\n"
	if code := s.call(adminToken, "PUT", api+"/files?path=marker.txt", marker, nil); code != http.StatusCreated {
		t.Fatalf("upload marker: %d", code)
	}
	s.guest(&d, "sync")

	// bureau restarted seeing a 256 MiB save directory of its own; the
	// desktop keeps running meanwhile.
	hostSaveDir := smallSaveDir(t, s, 256)
	t.Run("hibernate_without_room_for_the_RAM", func(t *testing.T) {
		s := s.with(t)
		e := s.expectError(adminToken, "POST", api+"/hibernate", nil, http.StatusInsufficientStorage, "insufficient_capacity")
		if !strings.Contains(e.Error.Message, capacity.DefaultSaveDir) {
			t.Errorf("the refusal does not name the save directory: %q", e.Error.Message)
		}
		if got := s.waitState(adminToken, d.ID, desktop.StateRunning, time.Second); got.Operation != "" || s.vmState(&d) != desktop.VMRunning {
			t.Errorf("a refused hibernate touched the desktop: %+v", got)
		}
	})
	hostSaveDir()

	reserve := filepath.Join(dir, "reserve")
	if !exists(reserve) {
		t.Fatal("no disk reserve in the data directory")
	}
	var releasedReserve bool
	// The guest writes 48 MiB to its data disk, 1 MiB at a time, each
	// synced: it is still writing when the host's disk fills (any write
	// of the guest may then be the one that pauses it), and finishes
	// once resumed.
	const bigMiB = 48
	mib := strings.Repeat("bureau\n", 1<<20/7+1)[:1<<20]
	want := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Repeat(mib, bigMiB))))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		s.hv.GuestExec(ctx, domainOf(d.ID), desktop.Exec{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(
			": > /home/agent/big.tmp && for i in $(seq %d); do yes bureau | head -c 1048576 >> /home/agent/big.tmp && sync || exit 1; sleep 0.3; done && mv /home/agent/big.tmp /home/agent/big && sync", bigMiB)}})
	}()
	s.waitGuest(&d, "the guest writing", "test $(stat -c %s /home/agent/big.tmp) -ge 2097152", 2*time.Minute)
	filler := fill(t, dir)
	t.Run("refused_when_full", func(t *testing.T) {
		s := s.with(t)
		s.expectError(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "more", "vcpus": 1, "memory_mib": 512, "data_disk_gib": 1}, http.StatusInsufficientStorage, "insufficient_capacity")
		s.expectError(adminToken, "POST", api+"/snapshots", map[string]any{"name": "with-ram", "memory": true}, http.StatusInsufficientStorage, "insufficient_capacity")
		var snaps struct{ Snapshots []apiv1.Snapshot }
		if s.call(adminToken, "GET", api+"/snapshots", nil, &snaps); len(snaps.Snapshots) != 0 {
			t.Errorf("a refused snapshot is listed: %+v", snaps.Snapshots)
		}
		var list struct{ Desktops []apiv1.Desktop }
		if s.call(adminToken, "GET", "/api/v1/desktops", nil, &list); len(list.Desktops) != 1 {
			t.Errorf("desktops after a refused create: %d", len(list.Desktops))
		}
	})

	// The guest's writes to its disks find no room on the host: QEMU
	// pauses the VM on the failed write.
	t.Run("guest_write_pauses_with_the_reason", func(t *testing.T) {
		s := s.with(t)
		got := s.waitState(adminToken, d.ID, desktop.StatePaused, 3*time.Minute)
		if !strings.Contains(got.LastError, "disk") {
			t.Errorf("paused without saying why: %q", got.LastError)
		}
		var ev struct{ Events []apiv1.Event }
		s.call(adminToken, "GET", api+"/events", nil, &ev)
		if n := len(ev.Events); n == 0 || ev.Events[n-1].Type != "vm_paused" {
			t.Errorf("events (oldest first): %+v", ev.Events)
		}
		// Using it says why instead of resuming into the same failure.
		e := s.expectError(adminToken, "POST", api+"/exec", map[string]any{"cmd": "true"}, http.StatusInsufficientStorage, "insufficient_capacity")
		if !strings.Contains(e.Error.Message, "free space") {
			t.Errorf("exec on a desktop paused by a full disk: %q", e.Error.Message)
		}
		if s.vmState(&d) != desktop.VMPaused {
			t.Errorf("the VM is %s, want paused", s.vmState(&d))
		}
		releasedReserve = !exists(reserve)
		t.Logf("bureau released its disk reserve to record the pause: %t", releasedReserve)
	})

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Run("resume_after_freeing_space_loses_nothing", func(t *testing.T) {
		s := s.with(t)
		var got apiv1.Desktop
		if code := s.call(adminToken, "POST", api+"/resume", nil, &got); code != http.StatusOK || got.State != string(desktop.StateRunning) || got.LastError != "" {
			t.Fatalf("resume: %d %+v", code, got)
		}
		s.waitGuest(&d, "the interrupted write completes", "test -f /home/agent/big", 5*time.Minute)
		if out, _ := s.guest(&d, "sha256sum < /home/agent/big | cut -d' ' -f1"); out != want {
			t.Errorf("the file written across the pause: sha256 %s, want %s", out, want)
		}
		var b []byte
		if code := s.call(adminToken, "GET", api+"/files?path=marker.txt", nil, &b); code != http.StatusOK || string(b) != marker {
			t.Errorf("marker after the pause: %d %q", code, b)
		}
		// If bureau had to give up its disk reserve to record the pause
		// (SQLite sometimes still has room in its log), it makes it again
		// now that there is room.
		if releasedReserve {
			for deadline := time.Now().Add(time.Minute); !exists(reserve) && time.Now().Before(deadline); {
				time.Sleep(time.Second)
			}
			if !exists(reserve) {
				t.Error("the disk reserve was not made again after space was freed")
			}
		}
		// With room again, hibernation and resume work and keep the data.
		if code := s.call(adminToken, "POST", api+"/hibernate", nil, nil); code != http.StatusAccepted {
			t.Fatalf("hibernate: %d", code)
		}
		s.waitState(adminToken, d.ID, desktop.StateHibernated, 3*time.Minute)
		if code := s.call(adminToken, "GET", api+"/files?path=marker.txt", nil, &b); code != http.StatusOK || string(b) != marker {
			t.Errorf("marker read through wake on use: %d %q", code, b)
		}
	})
	if code := s.call(adminToken, "DELETE", api+"?delete_data=true", nil, nil); code != http.StatusOK {
		t.Errorf("delete: %d", code)
	}
	s.expectError(adminToken, "GET", api, nil, http.StatusNotFound, "not_found")
}

// loopFS mounts a new ext4 file system of size bytes (sparse, no blocks
// reserved for root, which QEMU runs as) and returns its mount point.
func loopFS(t *testing.T, size int64) string {
	t.Helper()
	img, err := os.CreateTemp("/var/lib", "bureau-e2e-fs-*.img")
	if err != nil {
		t.Fatal(err)
	}
	img.Close()
	t.Cleanup(func() { os.Remove(img.Name()) })
	if err := os.Truncate(img.Name(), size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img.Name()).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	dir := strings.TrimSuffix(img.Name(), ".img")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img.Name(), dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	// Runs after the server's cleanup (registered later) has stopped it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
		os.Remove(dir)
	})
	return dir
}

// fill takes every free block of the file system at dir and returns the
// file holding them.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var off int64
	for chunk := int64(1 << 30); chunk >= 4096; {
		if err := syscall.Fallocate(int(f.Fd()), 0, off, chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			chunk /= 2
			continue
		}
		off += chunk
	}
	var st syscall.Statfs_t
	syscall.Statfs(dir, &st)
	t.Logf("filled %s with %d MiB; %d KiB left", dir, off>>20, st.Bavail*uint64(st.Bsize)>>10)
	return p
}

// smallSaveDir restarts the server so that it sees a tmpfs of mib MiB as
// libvirt's save directory: the server runs in a mount namespace of its
// own (unshare) with the tmpfs mounted over the directory there. libvirtd
// and every other process still see the host's directory, so hibernated
// VMs already there (another instance's desktops, or this run's) are left
// alone and nothing depends on the directory being empty. The function
// returned restarts the server as it was, seeing the host's directory (the
// tmpfs goes with the namespace).
func smallSaveDir(t *testing.T, s *server, mib int) (restore func()) {
	t.Helper()
	if fi, err := os.Stat(capacity.DefaultSaveDir); err != nil || !fi.IsDir() {
		t.Fatalf("libvirt's save directory %s: %v", capacity.DefaultSaveDir, err)
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal(err)
	}
	// Beside the harness's data directories: /tmp may be mounted noexec.
	wdir, err := os.MkdirTemp("/var/lib", "bureau-e2e-wrapper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wdir) })
	wrapper := filepath.Join(wdir, "bureau-small-save-dir")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --mount --propagation private sh -c 'mount -t tmpfs -o size=%dm,mode=0755 tmpfs %s && exec \"$0\" \"$@\"' %s \"$@\"\n",
		unshare, mib, capacity.DefaultSaveDir, s.bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := s.bin
	restartAs(s, wrapper)
	// The server's own view, as it would check it: /proc/PID/root resolves
	// paths in the server's mount namespace.
	var st syscall.Statfs_t
	if err := syscall.Statfs(fmt.Sprintf("/proc/%d/root%s", s.cmd.Process.Pid, capacity.DefaultSaveDir), &st); err != nil {
		t.Fatal(err)
	}
	if size := st.Blocks * uint64(st.Bsize) >> 20; size > uint64(mib) {
		t.Fatalf("the server sees %d MiB in %s, want the %d MiB tmpfs", size, capacity.DefaultSaveDir, mib)
	}
	return func() { restartAs(s, bin) }
}

// restartAs stops the server and starts it again running bin (the bureau
// binary itself, or a wrapper that execs it).
func restartAs(s *server, bin string) {
	s.t.Helper()
	s.stop()
	s.bin = bin
	s.start()
}
