package libvirt

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

func testLink(t *testing.T) *HostLink {
	t.Helper()
	link, err := DialHost(context.Background(), "test:///default")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	return link.(*HostLink)
}

// diskFacts dials uri as the hosts registry does and returns the disk
// its facts report.
func diskFacts(t *testing.T, d HostDialer, uri string) (total, free int64) {
	t.Helper()
	ctx := context.Background()
	l, err := d.Dial(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f.DiskMiB, f.FreeDiskMiB
}

// definePool defines a dir pool on the test driver, started if start.
func definePool(t *testing.T, conn *libvirt.Connect, name, dir string, start bool) *libvirt.StoragePool {
	t.Helper()
	x, err := (&libvirtxml.StoragePool{Type: "dir", Name: name, Target: &libvirtxml.StoragePoolTarget{Path: dir}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := conn.StoragePoolDefineXML(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pl.Destroy()
		pl.Undefine()
		pl.Free()
	})
	if start {
		if err := pl.Create(0); err != nil {
			t.Fatal(err)
		}
	}
	return pl
}

func TestRemoteDiskIsMeasuredThroughBureausPools(t *testing.T) {
	l := testLink(t)
	root := "/bureau-test/" + t.Name()
	images := root + "/images"
	d := HostDialer{ImagesDir: images, LocalURI: "qemu:///system"}

	// No pool of bureau's there yet: unmeasured, and nothing made.
	if total, free := diskFacts(t, d, "test:///default"); total != 0 || free != 0 {
		t.Errorf("without pools: %d/%d MiB, want 0", total, free)
	}
	if pl, err := l.conn.LookupStoragePoolByName(pools.PoolName(images)); err == nil {
		pl.Free()
		t.Fatal("a health check made the images pool")
	}

	// A stopped desktop pool is not started to be measured, nor is a
	// pool that is not bureau's, even under DATA_DIR.
	stopped := definePool(t, l.conn, pools.PoolName(root+"/desktops/d0"), root+"/desktops/d0", false)
	definePool(t, l.conn, "not-bureaus", root+"/other", true)
	if total, _ := diskFacts(t, d, "test:///default"); total != 0 {
		t.Errorf("through a stopped or foreign pool: %d MiB, want 0", total)
	}
	if active, _ := stopped.IsActive(); active {
		t.Error("a health check started a stopped pool")
	}

	// A running desktop pool under DATA_DIR stands in for the images
	// folder's (the test driver gives every pool 100 GiB).
	definePool(t, l.conn, pools.PoolName(root+"/desktops/d1"), root+"/desktops/d1", true)
	if total, free := diskFacts(t, d, "test:///default"); total != 100<<10 || free != 100<<10 {
		t.Errorf("through a desktop's pool: %d/%d MiB, want 102400/102400", total, free)
	}

	// The images folder's own pool is preferred: a 1 GiB volume there
	// shows in its free space only.
	ip := definePool(t, l.conn, pools.PoolName(images), images, true)
	vx, _ := (&libvirtxml.StorageVolume{Name: "base.qcow2", Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 1 << 30},
		Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 1 << 30}}).Marshal()
	vol, err := ip.StorageVolCreateXML(vx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { vol.Delete(0); vol.Free() }()
	if total, free := diskFacts(t, d, "test:///default"); total != 100<<10 || free != 99<<10 {
		t.Errorf("through the images pool: %d/%d MiB, want 102400/101376", total, free)
	}

	// Without an images folder, a link measures nothing.
	if total, _ := diskFacts(t, HostDialer{}, "test:///default"); total != 0 {
		t.Errorf("no images folder: %d MiB", total)
	}
}

func TestTestDriversDefaultPoolIsMeasured(t *testing.T) {
	// test:///default's own pool, whatever its name, when its target is
	// the images folder.
	if total, free := diskFacts(t, HostDialer{ImagesDir: "/default-pool"}, "test:///default"); total != 100<<10 || free <= 0 || free > total {
		t.Errorf("default pool: %d/%d MiB", total, free)
	}
}

func TestLocalDiskIsMeasuredWithStatfs(t *testing.T) {
	dataDir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err != nil {
		t.Fatal(err)
	}
	want, wantFree := int64(st.Blocks*uint64(st.Frsize)>>20), int64(st.Bfree*uint64(st.Frsize)>>20)
	// The images folder is not made yet: its parent's filesystem, its
	// free blocks counted as libvirt's pools count them (other tests
	// write meanwhile: a little slack).
	d := HostDialer{ImagesDir: filepath.Join(dataDir, "images"), LocalURI: "test:///default"}
	total, free := diskFacts(t, d, "test:///default")
	if total != want || free <= 0 || free > total || free < wantFree-256 || free > wantFree+256 {
		t.Errorf("local disk %d/%d MiB, want %d/~%d", total, free, want, wantFree)
	}
	if total, free := statfsMiB("/no/such/dir/images"); total != 0 || free != 0 {
		t.Errorf("missing folder: %d/%d", total, free)
	}
}
