package pools

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/storage"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// The test driver keeps pools and volumes in memory (no folders, files
// or uploads): these tests cover the pools and volumes Files defines; the
// files themselves are checked against a real libvirtd in
// e2e/host2_files_test.go.

// testFiles is Files for a host "two" whose libvirt is the test driver.
func testFiles(t *testing.T) (*Files, *libvirt.Connect) {
	t.Helper()
	ctx := context.Background()
	h, err := link.Open(ctx, "test:///default", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	s := NewStorage(h)
	if _, err := s.Files(ctx, "two"); err == nil {
		t.Error("Files without remote hosts: no error")
	}
	h.SetRemotes(link.Remotes{
		Where: func(string) string { return "" },
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"two": "test:///default"}, nil
		},
	})
	if _, err := s.Files(ctx, "three"); err == nil {
		t.Error("Files of an unknown host: no error")
	}
	f, err := s.Files(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.ForgetRemote("two") })
	conn, err := h.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f, conn
}

// poolDef is the definition of dir's pool (nil if none).
func poolDef(t *testing.T, conn *libvirt.Connect, dir string) *libvirtxml.StoragePool {
	t.Helper()
	pl, def, err := Host{conn: conn}.lookupPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	if pl == nil {
		return nil
	}
	pl.Free()
	return def
}

// volDef is the definition of the volume at path.
func volDef(t *testing.T, conn *libvirt.Connect, path string) *libvirtxml.StorageVolume {
	t.Helper()
	vol, err := conn.LookupStorageVolByPath(path)
	if err != nil {
		t.Fatalf("volume %s: %v", path, err)
	}
	defer vol.Free()
	x, err := vol.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestFilesOnTheTestDriver(t *testing.T) {
	f, conn := testFiles(t)
	ctx := context.Background()
	root := "/bureau-test/" + t.Name()
	images, dir := root+"/images", root+"/desktops/d1"
	t.Cleanup(func() {
		removePool(conn, PoolName(images))
		removePool(conn, PoolName(dir))
	})

	// The base image, as EnsureImage would leave it (the test driver
	// has no upload): a qcow2 of 10 GiB in the images folder's pool.
	if _, err := (Host{conn: conn}).imagePool(ctx, images); err != nil {
		t.Fatal(err)
	}
	ip, _ := conn.LookupStoragePoolByName(PoolName(images))
	defer ip.Free()
	bx, _ := (&libvirtxml.StorageVolume{Name: "base.qcow2", Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 10 << 30},
		Target: &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}}}).Marshal()
	if bv, err := ip.StorageVolCreateXML(bx, 0); err != nil {
		t.Fatal(err)
	} else {
		bv.Free()
	}
	base := images + "/base.qcow2"

	// Before MakeDir: nothing there, and nothing made.
	if ok, err := f.Exists(ctx, dir+"/data.qcow2"); ok || err != nil {
		t.Errorf("Exists without a pool: %v %v", ok, err)
	}
	if err := f.CreateDataDisk(ctx, dir+"/data.qcow2", 8, 1234567, 107); err == nil || !strings.Contains(err.Error(), "MakeDir") {
		t.Errorf("data disk without a pool: %v", err)
	}
	if err := f.Remove(ctx, dir+"/data.qcow2"); err != nil {
		t.Errorf("Remove without a pool: %v", err)
	}
	if kept, err := f.RemoveAllBut(ctx, dir, ""); kept || err != nil {
		t.Errorf("RemoveAllBut without a pool: %v %v", kept, err)
	}

	if err := f.MakeDir(ctx, dir, 1234567, 107); err != nil {
		t.Fatal(err)
	}
	def := poolDef(t, conn, dir)
	if def == nil || def.Name != PoolName(dir) || def.Type != "dir" {
		t.Fatalf("pool for %s: %+v", dir, def)
	}
	if p := def.Target.Permissions; p == nil || p.Mode != "0700" || p.Owner != "1234567" || p.Group != "107" {
		t.Errorf("folder permissions %+v, want 0700 1234567:107", p)
	}
	if _, active, auto := poolState(t, conn, def.Name); !active || !auto {
		t.Errorf("pool active %v autostart %v", active, auto)
	}
	// Again, for another user: the same pool, the new owner.
	if err := f.MakeDir(ctx, dir, 2345678, 0); err != nil {
		t.Fatal(err)
	}
	if def := poolDef(t, conn, dir); def.Name != PoolName(dir) || def.Target.Permissions.Owner != "2345678" || def.Target.Permissions.Group != "0" {
		t.Errorf("after MakeDir for another user: %s %+v", def.Name, def.Target.Permissions)
	}
	if _, active, auto := poolState(t, conn, def.Name); !active || !auto {
		t.Errorf("pool active %v autostart %v after the new owner", active, auto)
	}

	os1, os2, data := dir+"/os.qcow2", dir+"/os-big.qcow2", dir+"/data.qcow2"
	if err := f.CreateOverlay(ctx, base, os1, 5, 2345678, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateOverlay(ctx, base, os2, 20, 2345678, 0); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]uint64{os1: 10 << 30, os2: 20 << 30} {
		v := volDef(t, conn, path)
		if v.Capacity.Value != want || v.BackingStore == nil || v.BackingStore.Path != base || v.BackingStore.Format.Type != "qcow2" {
			t.Errorf("%s: capacity %d (want %d), backing %+v", path, v.Capacity.Value, want, v.BackingStore)
		}
	}
	if err := f.CreateOverlay(ctx, base, os1, 5, 2345678, 0); !errors.Is(err, storage.ErrExists) {
		t.Errorf("overlay over an existing file: %v, want storage.ErrExists", err)
	}
	if err := f.CreateOverlay(ctx, images+"/missing.qcow2", dir+"/os3.qcow2", 5, 1, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("overlay over a missing base: %v", err)
	}
	if err := f.CreateOverlay(ctx, root+"/nowhere/base.qcow2", dir+"/os3.qcow2", 5, 1, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("overlay over a base in a folder without a pool: %v", err)
	}
	if err := f.CreateDataDisk(ctx, data, 8, 2345678, 0); err != nil {
		t.Fatal(err)
	}
	if v := volDef(t, conn, data); v.Capacity.Value != 8<<30 || v.BackingStore != nil || v.Target.Format.Type != "qcow2" {
		t.Errorf("data disk: %d bytes, backing %+v, format %+v", v.Capacity.Value, v.BackingStore, v.Target.Format)
	}
	if err := f.CreateDataDisk(ctx, data, 8, 2345678, 0); !errors.Is(err, storage.ErrExists) {
		t.Errorf("second data disk: %v, want storage.ErrExists", err)
	}
	for path, want := range map[string]bool{data: true, os1: true, dir + "/seed.iso": false} {
		if ok, err := f.Exists(ctx, path); ok != want || err != nil {
			t.Errorf("Exists(%s): %v %v, want %v", path, ok, err, want)
		}
	}

	// No upload in the test driver: the volume made for it goes again.
	seed := filepath.Join(t.TempDir(), "seed.iso")
	os.WriteFile(seed, []byte("cloud-init"), 0o644)
	if err := f.Upload(ctx, seed, dir+"/seed.iso", 2345678, 0); err == nil || !link.IsCode(err, libvirt.ERR_NO_SUPPORT) {
		t.Errorf("upload through the test driver: %v, want libvirt's not supported", err)
	}
	if ok, _ := f.Exists(ctx, dir+"/seed.iso"); ok {
		t.Error("a failed upload left its file")
	}
	if err := f.Upload(ctx, seed+".missing", dir+"/seed.iso", 1, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("upload of a missing file: %v", err)
	}

	if err := f.Remove(ctx, os2); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, os2); err != nil {
		t.Errorf("removing a removed file: %v", err)
	}
	if ok, _ := f.Exists(ctx, os2); ok {
		t.Error("removed file still there")
	}

	if _, err := f.RemoveAllBut(ctx, dir, root+"/elsewhere/data.qcow2"); err == nil {
		t.Error("keep outside the folder: no error")
	}
	kept, err := f.RemoveAllBut(ctx, dir, data)
	if err != nil || !kept {
		t.Fatalf("RemoveAllBut keeping the data disk: %v %v", kept, err)
	}
	if ok, _ := f.Exists(ctx, data); !ok {
		t.Error("the kept data disk is gone")
	}
	if ok, _ := f.Exists(ctx, os1); ok {
		t.Error("the overlay is still there")
	}
	if poolDef(t, conn, dir) == nil {
		t.Error("the pool of a folder with a kept file is gone")
	}
	// keep that is not there: everything goes, and the pool with it.
	if kept, err := f.RemoveAllBut(ctx, dir, dir+"/other.qcow2"); kept || err != nil {
		t.Errorf("RemoveAllBut of a file not there: %v %v", kept, err)
	}
	if def := poolDef(t, conn, dir); def != nil {
		t.Errorf("pool %s is left", def.Name)
	}
	if _, err := conn.LookupStoragePoolByName(PoolName(dir)); !link.IsCode(err, libvirt.ERR_NO_STORAGE_POOL) {
		t.Errorf("pool %s is still defined: %v", PoolName(dir), err)
	}
	// The images stay.
	if ok, err := f.Exists(ctx, base); !ok || err != nil {
		t.Errorf("base image after the desktop's removal: %v %v", ok, err)
	}
}

func TestFilesCheckArguments(t *testing.T) {
	f, _ := testFiles(t)
	ctx := context.Background()
	for _, dir := range []string{"relative", "/", "/a/../b", "/a/"} {
		if err := f.MakeDir(ctx, dir, 1, 1); err == nil {
			t.Errorf("MakeDir(%q): no error", dir)
		}
		if _, err := f.RemoveAllBut(ctx, dir, ""); err == nil {
			t.Errorf("RemoveAllBut(%q): no error", dir)
		}
	}
	if err := f.MakeDir(ctx, "/bureau-test/x", -1, 0); err == nil {
		t.Error("MakeDir for uid -1: no error")
	}
	for _, path := range []string{"x.qcow2", "/", "/a/./b.qcow2"} {
		if _, err := f.Exists(ctx, path); err == nil {
			t.Errorf("Exists(%q): no error", path)
		}
		if err := f.Remove(ctx, path); err == nil {
			t.Errorf("Remove(%q): no error", path)
		}
		if err := f.CreateDataDisk(ctx, path, 1, 1, 1); err == nil {
			t.Errorf("CreateDataDisk(%q): no error", path)
		}
	}
	if err := f.CreateDataDisk(ctx, "/bureau-test/x/data.qcow2", 0, 1, 1); err == nil {
		t.Error("a data disk of 0 GiB: no error")
	}
}

func TestEnsureImageWaitsForACopyUnderWay(t *testing.T) {
	f, conn := testFiles(t)
	ctx := context.Background()
	// The local path and the host's are the same: here, a local temp
	// file, whose folder gets a pool on the (test) host.
	local := filepath.Join(t.TempDir(), "base.qcow2")
	os.WriteFile(local, qcow2Header(64<<20, 8192), 0o644)
	t.Cleanup(func() { removePool(conn, PoolName(filepath.Dir(local))) })

	// A copy of that path under way (as CopyImage marks it).
	key := f.link.URI() + "\x00" + local
	busy := make(chan struct{})
	copying.Store(key, busy)
	defer copying.Delete(key)
	l := NewHost(conn, f.link.URI())
	if err := l.CopyImage(ctx, local, local, nil, false, nil); err == nil || !strings.Contains(err.Error(), "under way") {
		t.Errorf("CopyImage while a copy is under way: %v, want it refused", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.EnsureImage(cctx, local, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("EnsureImage cancelled while waiting: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- f.EnsureImage(ctx, local, nil, nil) }()
	select {
	case err := <-done:
		t.Fatalf("EnsureImage did not wait for the copy under way: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	copying.Delete(key)
	close(busy)
	// Then it copies itself: the test driver has no upload.
	if err := <-done; !link.IsCode(err, libvirt.ERR_NO_SUPPORT) {
		t.Errorf("EnsureImage through the test driver: %v, want libvirt's not supported", err)
	}
	if _, busy := copying.Load(key); busy {
		t.Error("the copy is still marked under way")
	}
}

func TestQcow2XML(t *testing.T) {
	x, err := qcow2XML("os.qcow2", 12<<30, DesktopFile(1234567, 107), backing{"/var/lib/bureau/images/base.qcow2", "qcow2"})
	if err != nil {
		t.Fatal(err)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	if v.Type != "file" || v.Name != "os.qcow2" || v.Capacity.Unit != "bytes" || v.Capacity.Value != 12<<30 || v.Allocation.Value != 0 ||
		v.Target.Format.Type != "qcow2" || v.Target.Compat != "1.1" || len(v.Target.Features) != 1 || v.Target.Features[0].LazyRefcounts == nil {
		t.Errorf("overlay XML %s", x)
	}
	if p := v.Target.Permissions; p.Mode != "0600" || p.Owner != "1234567" || p.Group != "107" {
		t.Errorf("overlay permissions %+v", p)
	}
	if b := v.BackingStore; b == nil || b.Path != "/var/lib/bureau/images/base.qcow2" || b.Format == nil || b.Format.Type != "qcow2" {
		t.Errorf("overlay backing store %+v", b)
	}
	x, err = qcow2XML("data.qcow2", 8<<30, DesktopFile(1234567, 107), backing{})
	if err != nil {
		t.Fatal(err)
	}
	v = libvirtxml.StorageVolume{}
	v.Unmarshal(x)
	if v.BackingStore != nil || v.Capacity.Value != 8<<30 || v.Target.Permissions.Mode != "0600" {
		t.Errorf("data disk XML %s", x)
	}
	// A backing store without its format is refused (libvirt 9.0 would).
	if _, err := qcow2XML("os.qcow2", 1<<30, DesktopFile(1, 1), backing{path: "/b.qcow2"}); err == nil {
		t.Error("backing store without a format: no error")
	}
	x, _ = VolumeXML("seed.iso", 307200, DesktopFile(1234567, 107))
	v = libvirtxml.StorageVolume{}
	v.Unmarshal(x)
	if v.Capacity.Value != 307200 || v.Target.Format.Type != "raw" || v.Target.Permissions.Mode != "0600" || v.Target.Permissions.Owner != "1234567" {
		t.Errorf("seed volume XML %s", x)
	}
}

func TestDesktopPoolXMLAndPerms(t *testing.T) {
	x, err := poolXML(PoolName("/var/lib/bureau/desktops/d1"), "/var/lib/bureau/desktops/d1", desktopDir(1234567, 107))
	if err != nil {
		t.Fatal(err)
	}
	var p libvirtxml.StoragePool
	if err := p.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	got, ok := poolPerms(p.Target.Permissions)
	if !ok || got != (Perms{1234567, 107, 0o700}) || p.Target.Permissions.Mode != "0700" || p.Type != "dir" {
		t.Errorf("desktop pool XML %s: %+v %v", x, got, ok)
	}
	for _, bad := range []*libvirtxml.StoragePoolTargetPermissions{nil, {Mode: "0700"}, {Mode: "rwx", Owner: "0", Group: "0"}} {
		if _, ok := poolPerms(bad); ok {
			t.Errorf("permissions %+v read as complete", bad)
		}
	}
}
