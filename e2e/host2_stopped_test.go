//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"github.com/bureau/bureau/internal/manager"
)

// pools.Files is also the manager's StoppedDisks and FileSizes of a remote host.
var (
	_ manager.StoppedDisks = (*pools.Files)(nil)
	_ manager.FileSizes    = (*pools.Files)(nil)
)

// checkStoppedDisks takes, reverts and deletes internal snapshots of a
// stopped desktop's disk files on host2 and grows one, through pools.Files
// (host2's libvirtd runs qemu-img there), as bureau does to a remote
// desktop whose VM is off. osDisk and dataDisk are host2's paths, folder
// the same folder as this host sees it; virsh runs on host2; timed runs a
// call and logs how long it took (a domain defined and undefined around
// qemu-img on host2 each time).
func checkStoppedDisks(t *testing.T, f *pools.Files, osDisk, dataDisk, folder string, uid, gid int,
	virsh func(...string) (string, error), timed func(string, func() error) error) {
	ctx := context.Background()
	here := func(path string) string { return filepath.Join(folder, filepath.Base(path)) }
	io := func(cmd, path string) string {
		t.Helper()
		out, _ := exec.Command("qemu-io", "-c", cmd, here(path)).CombinedOutput()
		return string(out)
	}
	snaps := func(path string) string {
		t.Helper()
		out, err := exec.Command("qemu-img", "snapshot", "-U", "-l", here(path)).CombinedOutput()
		if err != nil {
			t.Fatalf("qemu-img snapshot -l %s: %v %s", path, err, out)
		}
		return string(out)
	}

	io("write -P 0x11 0 1M", dataDisk)
	for _, disk := range []string{dataDisk, osDisk} {
		if err := timed("Snapshot "+filepath.Base(disk), func() error { return f.Snapshot(ctx, disk, "cold one") }); err != nil {
			t.Fatalf("snapshot of %s: %v", disk, err)
		}
		if !strings.Contains(snaps(disk), "cold one") {
			t.Errorf("%s holds no snapshot after Snapshot:\n%s", disk, snaps(disk))
		}
	}
	if !strings.Contains(io("write -P 0x22 0 1M", dataDisk), "wrote") {
		t.Fatal("writing to the data disk after its snapshot")
	}

	// Revert: the bytes of the snapshot are back; an unknown one fails.
	if err := timed("RevertSnapshot data.qcow2", func() error { return f.RevertSnapshot(ctx, dataDisk, "cold one") }); err != nil {
		t.Fatalf("revert: %v", err)
	}
	if out := io("read -P 0x11 0 1M", dataDisk); !strings.Contains(out, "read 1048576/1048576") {
		t.Errorf("after the revert the data disk does not hold the snapshot's bytes:\n%s", out)
	}
	if err := f.RevertSnapshot(ctx, dataDisk, "never taken"); err == nil {
		t.Error("revert to a snapshot the file does not hold: no error")
	}

	// Delete: gone from the file; deleting it again is fine.
	for _, disk := range []string{dataDisk, osDisk} {
		if err := timed("DeleteSnapshot "+filepath.Base(disk), func() error { return f.DeleteSnapshot(ctx, disk, "cold one") }); err != nil {
			t.Fatalf("delete the snapshot of %s: %v", disk, err)
		}
		if strings.Contains(snaps(disk), "cold one") {
			t.Errorf("%s still holds the snapshot:\n%s", disk, snaps(disk))
		}
	}
	if err := f.DeleteSnapshot(ctx, dataDisk, "cold one"); err != nil {
		t.Errorf("deleting a deleted snapshot: %v", err)
	}
	if out := io("read -P 0x11 0 1M", dataDisk); !strings.Contains(out, "read 1048576/1048576") {
		t.Errorf("deleting the snapshot changed the data disk:\n%s", out)
	}

	// Resize: the disk grows; the file stays the QEMU user's.
	if err := timed("Resize data.qcow2 to 3 GiB", func() error { return f.Resize(ctx, dataDisk, 3) }); err != nil {
		t.Fatalf("resize: %v", err)
	}
	if info := filesImageInfo(t, here(dataDisk)); info.VirtualSize != 3<<30 {
		t.Errorf("after Resize to 3 GiB: %d bytes", info.VirtualSize)
	}
	filesCheckOwner(t, here(dataDisk), 0o600, uid, gid)
	filesCheckOwner(t, here(osDisk), 0o600, uid, gid)

	// Allocated: what the file takes on host2's disk; nothing for none.
	var st syscall.Stat_t
	if err := syscall.Stat(here(dataDisk), &st); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Allocated(ctx, dataDisk); err != nil || n != st.Blocks*512 || n == 0 {
		t.Errorf("Allocated(data disk): %d %v, want %d", n, err, st.Blocks*512)
	}
	if n, err := f.Allocated(ctx, filepath.Join(filepath.Dir(dataDisk), "none.qcow2")); n != 0 || err != nil {
		t.Errorf("Allocated(no such file): %d %v", n, err)
	}

	// The domains defined for the calls are gone.
	if out, err := virsh("list", "--all", "--name"); err != nil || strings.Contains(out, "bureau.file-") {
		t.Errorf("domains left on host2: %v\n%s", err, out)
	}
}
