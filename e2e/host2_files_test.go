//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/storage"
)

// pools.Files is the manager's HostFiles.
var _ manager.HostFiles = (*pools.Files)(nil)

// TestHost2Files makes and removes a remote desktop's files on host2
// (scripts/host2.sh: its /var/lib/bureau/{images,desktops} are its own
// DIR/images and DIR/desktops) through pools.Files, the storage-pool side of
// manager.HostFiles: the base image copied once, the desktop's folder
// 0700 owned by its QEMU user (and given back to it when changed), the
// overlay over the base, the data disk (never replaced), the seed ISO
// readable by that user, and the removals, with a stale vnc.sock in the
// folder as QEMU leaves it.
func TestHost2Files(t *testing.T) {
	// Its own folder and ports (16519, ssh 16520).
	dir, uri, _ := ownHost2(t, "bureau-e2e-host2-files", 16519, "setpriv", "qemu-img", "qemu-io")
	virsh := virshOn(uri)
	// onHost2 runs a command in host2's mount namespace, where paths
	// resolve as on a remote host; as uid:gid unless uid is 0.
	pid := strings.TrimSpace(host2File(t, filepath.Join(dir, "libvirtd.pid")))
	onHost2 := func(uid, gid int, args ...string) ([]byte, error) {
		cmd := []string{"--target", pid, "--mount", "--"}
		if uid != 0 {
			cmd = append(cmd, "setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups")
		}
		var stderr bytes.Buffer
		c := exec.Command("nsenter", append(cmd, args...)...)
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			return out, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out, nil
	}

	const (
		imagesDir = "/var/lib/bureau/images"
		deskDir   = "/var/lib/bureau/desktops/e2etest-files"
		uid       = 1234567
	)
	gid := 0
	if g, err := user.LookupGroup("kvm"); err == nil {
		gid, _ = strconv.Atoi(g.Gid)
	}
	host2Images, host2Desk := filepath.Join(dir, "images"), filepath.Join(dir, "desktops", "e2etest-files")
	base := imagesDir + "/e2e-files-base.qcow2"
	// The local image is at the path it gets on the host: host1's own
	// images folder.
	if exists(base) {
		t.Fatalf("%s already exists on host1", base)
	}
	// Runs before host2 stops (cleanups run last first), also on failure.
	t.Cleanup(func() {
		os.Remove(base)
		for _, target := range []string{deskDir, imagesDir} {
			if pool := imagesPool(t, virsh, target); pool != "" {
				if target == imagesDir {
					virsh("vol-delete", "--pool", pool, filepath.Base(base))
					virsh("vol-delete", "--pool", pool, filepath.Base(base)+".sha256")
				}
				virsh("pool-destroy", pool)
				if out, err := virsh("pool-undefine", pool); err != nil {
					t.Errorf("undefine host2's pool %s for %s: %v %s", pool, target, err, out)
				}
			}
		}
		os.Remove(filepath.Join(host2Images, filepath.Base(base)))
		os.Remove(filepath.Join(host2Images, filepath.Base(base)+".sha256"))
		os.RemoveAll(host2Desk)
	})

	ctx := context.Background()
	h, err := hv.Open(ctx, uri, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.SetRemotes(link.Remotes{
		Where: func(string) string { return "" },
		Hosts: func(context.Context) (map[string]string, error) { return map[string]string{"two": uri}, nil },
	})
	f, err := h.Files(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	timed := func(what string, fn func() error) error {
		t.Helper()
		begun := time.Now()
		err := fn()
		t.Logf("%s: %v in %s", what, err, time.Since(begun).Round(100*time.Microsecond))
		return err
	}

	// EnsureImage: a 64 MiB qcow2 with 4 MiB written.
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", base, "64M")
	run(t, "qemu-io", "-c", "write -P 0x5a 1M 4M", base)
	var reports progressLog
	if err := timed("EnsureImage (copy)", func() error { return f.EnsureImage(ctx, base, nil, reports.add) }); err != nil {
		t.Fatal(err)
	}
	baseInfo, _ := os.Stat(base)
	reports.check(t, baseInfo.Size())
	copied := filepath.Join(host2Images, filepath.Base(base))
	if st, err := os.Stat(copied); err != nil {
		t.Fatalf("the base image is not in host2's images folder: %v", err)
	} else if sum(t, copied) != sum(t, base) {
		t.Error("sha256 of host2's copy differs")
	} else if mode, u, g := filesOwner(st); mode != 0o644 || u != 0 || g != 0 {
		t.Errorf("host2's copy: %v %d:%d, want 0644 root", mode, u, g)
	}
	if b, err := os.ReadFile(copied + ".sha256"); err != nil || strings.TrimSpace(string(b)) != sum(t, base) {
		t.Errorf("host two's sum file beside the copy: %q %v, want %s", b, err, sum(t, base))
	}
	mtime := filesModTime(t, copied)
	reports = progressLog{}
	asked := 0
	never := func(context.Context, string) error { asked++; return errors.New("desktops there use it") }
	if err := timed("EnsureImage (there)", func() error { return f.EnsureImage(ctx, base, never, reports.add) }); err != nil {
		t.Fatal(err)
	}
	reports.check(t, baseInfo.Size())
	if !filesModTime(t, copied).Equal(mtime) || asked != 0 {
		t.Errorf("the complete copy was written again, or replace asked (%d)", asked)
	}

	// The image rebuilt here: the same size and header, other bytes past
	// them. Host two's copy is another build: refused, it stays as it
	// is; allowed, it is replaced by this one.
	rebuilt, first := base+".rebuilt", base+".first"
	defer os.Remove(rebuilt)
	defer os.Remove(first)
	run(t, "cp", base, rebuilt)
	run(t, "cp", base, first)
	if g, err := os.OpenFile(rebuilt, os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		g.WriteAt(bytes.Repeat([]byte{0xa5}, 4096), baseInfo.Size()-8192)
		g.Close()
	}
	if err := os.Rename(rebuilt, base); err != nil {
		t.Fatal(err)
	}
	before := sum(t, copied)
	var why string
	err = f.EnsureImage(ctx, base, func(_ context.Context, w string) error { why = w; return errors.New("desktops there use it") }, nil)
	if err == nil || !strings.Contains(err.Error(), "desktops there use it") || !strings.Contains(why, "another build") || sum(t, copied) != before {
		t.Errorf("another build, replace refused: %v (why %q); host two's copy changed: %v", err, why, sum(t, copied) != before)
	}
	t.Logf("another build on host two, replace refused: %v", err)
	if err := timed("EnsureImage (another build, replaced)", func() error {
		return f.EnsureImage(ctx, base, func(context.Context, string) error { return nil }, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if sum(t, copied) != sum(t, base) {
		t.Error("host two's copy is not the rebuilt image after the replace")
	}
	// And back to the first build, which the rest of this test reads.
	if err := os.Rename(first, base); err != nil {
		t.Fatal(err)
	}
	if err := f.EnsureImage(ctx, base, func(context.Context, string) error { return nil }, nil); err != nil || sum(t, copied) != sum(t, base) {
		t.Fatalf("back to the first build on host two: %v", err)
	}

	// MakeDir: 0700, the QEMU user's; given back to it when changed.
	poolsBefore, _ := virsh("pool-list", "--all", "--name")
	if err := timed("MakeDir", func() error { return f.MakeDir(ctx, deskDir, uid, gid) }); err != nil {
		t.Fatal(err)
	}
	filesCheckOwner(t, host2Desk, os.ModeDir|0o700, uid, gid)
	os.Chmod(host2Desk, 0o755)
	os.Chown(host2Desk, 0, 0)
	if err := timed("MakeDir (folder changed)", func() error { return f.MakeDir(ctx, deskDir, uid, gid) }); err != nil {
		t.Fatal(err)
	}
	filesCheckOwner(t, host2Desk, os.ModeDir|0o700, uid, gid)
	if err := timed("MakeDir (as it is)", func() error { return f.MakeDir(ctx, deskDir, uid, gid) }); err != nil {
		t.Fatal(err)
	}
	pool := imagesPool(t, virsh, deskDir)
	if info, _ := virsh("pool-info", pool); !strings.Contains(info, "running") || !strings.Contains(info, "Autostart:      yes") {
		t.Errorf("pool %s for %s:\n%s", pool, deskDir, info)
	}
	if after, _ := virsh("pool-list", "--all", "--name"); len(strings.Fields(after)) != len(strings.Fields(poolsBefore))+1 {
		t.Errorf("pools before MakeDir:\n%s\nafter three:\n%s", poolsBefore, after)
	}

	// CreateOverlay: over the base, at least 1 GiB, the user's, 0600; its
	// chain reads as the QEMU user on host2.
	osDisk, dataDisk, seed := deskDir+"/os.qcow2", deskDir+"/data.qcow2", deskDir+"/seed.iso"
	if err := timed("CreateOverlay", func() error { return f.CreateOverlay(ctx, base, osDisk, 1, uid, gid) }); err != nil {
		t.Fatal(err)
	}
	info := filesImageInfo(t, filepath.Join(host2Desk, "os.qcow2"))
	if info.Format != "qcow2" || info.BackingFile != base || info.BackingFormat != "qcow2" || info.VirtualSize != 1<<30 || !info.Specific.Data.LazyRefcounts {
		t.Errorf("overlay: %+v", info)
	}
	filesCheckOwner(t, filepath.Join(host2Desk, "os.qcow2"), 0o600, uid, gid)
	if out, err := onHost2(uid, gid, "qemu-io", "-r", "-c", "read -P 0x5a 1M 4M", "-c", "read -P 0 8M 1M", osDisk); err != nil || !bytes.Contains(out, []byte("read 4194304/4194304")) {
		t.Errorf("reading the overlay as uid %d on host2: %v\n%s", uid, err, out)
	}
	if err := f.CreateOverlay(ctx, base, osDisk, 1, uid, gid); !errors.Is(err, storage.ErrExists) {
		t.Errorf("second overlay: %v, want storage.ErrExists", err)
	}

	// CreateDataDisk, never replaced.
	if err := timed("CreateDataDisk", func() error { return f.CreateDataDisk(ctx, dataDisk, 2, uid, gid) }); err != nil {
		t.Fatal(err)
	}
	info = filesImageInfo(t, filepath.Join(host2Desk, "data.qcow2"))
	if info.Format != "qcow2" || info.BackingFile != "" || info.VirtualSize != 2<<30 || !info.Specific.Data.LazyRefcounts {
		t.Errorf("data disk: %+v", info)
	}
	filesCheckOwner(t, filepath.Join(host2Desk, "data.qcow2"), 0o600, uid, gid)
	mtime = filesModTime(t, filepath.Join(host2Desk, "data.qcow2"))
	err = f.CreateDataDisk(ctx, dataDisk, 2, uid, gid)
	t.Logf("second data disk: %v", err)
	if !errors.Is(err, storage.ErrExists) {
		t.Errorf("second data disk: %v, want storage.ErrExists", err)
	}
	if !filesModTime(t, filepath.Join(host2Desk, "data.qcow2")).Equal(mtime) {
		t.Error("the data disk was written again")
	}

	// A stopped desktop's snapshots and disk growth, through libvirt.
	checkStoppedDisks(t, f, osDisk, dataDisk, host2Desk, uid, gid, virsh, timed)

	// Upload: 300 KiB, byte for byte, readable by the QEMU user; again
	// with other bytes: replaced.
	for i := range 2 {
		local := filepath.Join(t.TempDir(), "seed.iso")
		want := make([]byte, 300<<10)
		rand.Read(want)
		os.WriteFile(local, want, 0o600)
		if err := timed("Upload 300 KiB", func() error { return f.Upload(ctx, local, seed, uid, gid) }); err != nil {
			t.Fatal(err)
		}
		got, err := onHost2(uid, gid, "cat", seed)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("upload %d: %d bytes read as uid %d on host2 (%v), want the %d uploaded", i+1, len(got), uid, err, len(want))
		}
		filesCheckOwner(t, filepath.Join(host2Desk, "seed.iso"), 0o600, uid, gid)
	}

	// A stale vnc.sock, as QEMU leaves it when it exits: libvirt does
	// not list it.
	sock := filepath.Join(host2Desk, "vnc.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	os.Chown(sock, uid, gid)

	for path, want := range map[string]bool{osDisk: true, dataDisk: true, seed: true, deskDir + "/missing.qcow2": false,
		deskDir + "/vnc.sock": false, "/var/lib/bureau/desktops/e2etest-none/data.qcow2": false} {
		var ok bool
		if err := timed("Exists "+strings.TrimPrefix(path, "/var/lib/bureau/"), func() (err error) { ok, err = f.Exists(ctx, path); return }); err != nil || ok != want {
			t.Errorf("Exists(%s): %v %v, want %v", path, ok, err, want)
		}
	}
	if err := f.Remove(ctx, osDisk); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, osDisk); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if exists(filepath.Join(host2Desk, "os.qcow2")) {
		t.Error("Remove left the overlay")
	}
	if err := f.CreateOverlay(ctx, base, osDisk, 1, uid, gid); err != nil {
		t.Fatal(err)
	}

	// RemoveAllBut the data disk: it stays, with the folder and pool.
	var kept bool
	if err := timed("RemoveAllBut the data disk", func() (err error) { kept, err = f.RemoveAllBut(ctx, deskDir, dataDisk); return }); err != nil || !kept {
		t.Fatalf("RemoveAllBut keeping the data disk: %v %v", kept, err)
	}
	left := filesNames(t, host2Desk)
	if left != "data.qcow2 vnc.sock" {
		t.Errorf("left in the folder: %s, want the data disk (and vnc.sock)", left)
	}
	if imagesPool(t, virsh, deskDir) != pool {
		t.Errorf("the pool of the folder with the data disk is gone")
	}

	// RemoveAllBut nothing, with the socket there: without Sweep, the
	// files libvirt lists go and the error names what is left.
	_, err = f.RemoveAllBut(ctx, deskDir, "")
	t.Logf("RemoveAllBut with vnc.sock left, no Sweep: %v", err)
	if !errors.Is(err, pools.ErrUnlisted) || !strings.Contains(err.Error(), deskDir) || !strings.Contains(err.Error(), "vnc.sock") {
		t.Errorf("RemoveAllBut with a socket left: %v, want ErrUnlisted naming the folder", err)
	}
	if left := filesNames(t, host2Desk); left != "vnc.sock" {
		t.Errorf("left in the folder: %q, want vnc.sock only", left)
	}
	if info, _ := virsh("pool-info", pool); !strings.Contains(info, "running") {
		t.Errorf("pool %s after the failed removal:\n%s", pool, info)
	}
	// With Sweep (what SSH to a host would do): all gone.
	swept := ""
	f.Sweep = func(ctx context.Context, dir string) error {
		swept = dir
		_, err := onHost2(0, 0, "find", dir, "-maxdepth", "1", "(", "-type", "s", "-o", "-type", "p", ")", "-delete")
		return err
	}
	if err := timed("RemoveAllBut nothing (with Sweep)", func() (err error) { kept, err = f.RemoveAllBut(ctx, deskDir, ""); return }); err != nil || kept {
		t.Fatalf("RemoveAllBut with Sweep: %v %v", kept, err)
	}
	if swept != deskDir {
		t.Errorf("Sweep was given %q", swept)
	}
	if _, err := os.Stat(host2Desk); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder on host2: %v, want it removed", err)
	}
	if p := imagesPool(t, virsh, deskDir); p != "" {
		t.Errorf("pool %s is left", p)
	}
	// Once more: nothing there is fine.
	if kept, err := f.RemoveAllBut(ctx, deskDir, ""); kept || err != nil {
		t.Errorf("RemoveAllBut of a removed folder: %v %v", kept, err)
	}
	// The base image stays.
	if ok, err := f.Exists(ctx, base); !ok || err != nil {
		t.Errorf("the base image after the desktop's removal: %v %v", ok, err)
	}
}

// filesImgInfo is what qemu-img info says of an image.
type filesImgInfo struct {
	Format        string `json:"format"`
	VirtualSize   int64  `json:"virtual-size"`
	BackingFile   string `json:"backing-filename"`
	BackingFormat string `json:"backing-filename-format"`
	Specific      struct {
		Data struct {
			LazyRefcounts bool `json:"lazy-refcounts"`
		} `json:"data"`
	} `json:"format-specific"`
}

func filesImageInfo(t *testing.T, path string) filesImgInfo {
	t.Helper()
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", path).Output()
	if err != nil {
		t.Fatalf("qemu-img info %s: %v", path, err)
	}
	var info filesImgInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func filesOwner(st os.FileInfo) (os.FileMode, int, int) {
	sys := st.Sys().(*syscall.Stat_t)
	return st.Mode() & (os.ModeDir | os.ModePerm), int(sys.Uid), int(sys.Gid)
}

func filesCheckOwner(t *testing.T, path string, mode os.FileMode, uid, gid int) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if m, u, g := filesOwner(st); m != mode || u != uid || g != gid {
		t.Errorf("%s: %v %d:%d, want %v %d:%d", path, m, u, g, mode, uid, gid)
	}
}

func filesModTime(t *testing.T, path string) time.Time {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime()
}

// filesNames lists a folder's entries, sorted, space-separated.
func filesNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return strings.Join(out, " ")
}
