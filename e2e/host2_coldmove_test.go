//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"golang.org/x/sys/unix"
)

// TestHost2ColdMove moves a tiny hibernated domain with internal qcow2
// snapshots from host1 (the system libvirtd) to host2 and back, as a cold
// move does: CopyFile for each of its files, DefineOn, UndefineOn. It
// checks the copies (same bytes, same size, still sparse, the desktop's
// owner, 0600), the definition, snapshots and managed save image there
// (HasManagedSaveImage, and a start that restores the saved RAM), and
// that nothing is left where it was. Back, one disk goes host2 → host1
// addressed as a remote host ("one"), so the remote → remote pipe runs
// between two real libvirtds; and a cancelled copy leaves no file.
func TestHost2ColdMove(t *testing.T) {
	begun := time.Now()
	// Its own folder and ports (16533, ssh 16534).
	dir, uri, _ := ownHost2(t, "bureau-e2e-host2-cold", 16533, "qemu-img", "qemu-io", "ip")
	virsh1, virsh2 := virshOn("qemu:///system"), virshOn(uri)
	var random [3]byte
	rand.Read(random[:])
	id := hex.EncodeToString(random[:])
	name := "bureau-e2e-cold-" + id
	tapA, tapB := "bcold"+id+"a", "bcold"+id+"b"
	save1 := "/var/lib/libvirt/qemu/save/" + name + ".save"
	save2 := filepath.Join(dir, "lib/qemu/save", name+".save") // host2's, seen from here
	uid, gid := 0, 0
	if u, err := user.Lookup("libvirt-qemu"); err == nil { // QEMU's user on Debian
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}

	// The folders, the base and the OS disk (0x5a at 0, 0x77 at 2 MiB); the
	// cleanup also drops the managed save, the snapshots and the pools.
	disks, events := tinyDomainDisks(t, dir, uri, name, func(virsh func(...string) (string, error), folder string) {
		virsh("destroy", name)
		virsh("undefine", "--managed-save", "--snapshots-metadata", name)
		pool := coldPoolName(folder)
		virsh("pool-destroy", pool)
		virsh("pool-undefine", pool)
	}, save1, save2)
	folder, on2 := disks.folder, disks.on2
	osDisk, dataDisk, seed, tail := disks.osDisk, folder+"/data.qcow2", folder+"/seed.iso", folder+"/tail.raw"
	files := []string{osDisk, dataDisk, seed, tail}

	// The data disk: 4 GiB, metadata preallocated (a file of ~4 GiB,
	// mostly holes: as a guest's discards leave one), data at its start,
	// at 1 GiB and in its last MiB. The seed: 1 MiB, one hole. tail.raw:
	// 1 MiB of data, then a hole to 64 MiB.
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-o", "preallocation=metadata", dataDisk, "4G")
	run(t, "qemu-io", "-c", "write -P 0x3c 0 1M", "-c", "write -P 0x4d 1G 2M", "-c", "write -P 0x5e 4095M 1M", dataDisk)
	run(t, "truncate", "-s", "1M", seed)
	coldWriteTail(t, tail)

	xmlPath := filepath.Join(t.TempDir(), "domain.xml")
	os.WriteFile(xmlPath, []byte(migDomainXML(name, osDisk, dataDisk, seed, tapA)), 0o644)
	if out, err := virsh1("define", xmlPath); err != nil {
		t.Fatalf("define on host1: %v\n%s", err, out)
	}
	// Snapshots of the shut-off domain (internal, in both qcow2 disks):
	// s1, then 0x99 at 8 MiB in the data disk, then s2 (current).
	snap := func(s string) {
		t.Helper()
		if out, err := virsh1("snapshot-create-as", name, s, "--diskspec", "hdc,snapshot=no"); err != nil {
			t.Fatalf("snapshot %s: %v\n%s", s, err, out)
		}
	}
	snap("s1")
	run(t, "qemu-io", "-c", "write -P 0x99 8M 1M", dataDisk)
	snap("s2")
	// Running, then hibernated (managed save).
	if out, err := virsh1("start", name); err != nil {
		t.Fatalf("start on host1: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	if out, err := virsh1("managedsave", name); err != nil {
		t.Fatalf("managedsave on host1: %v\n%s", err, out)
	}
	t.Logf("set up in %s", time.Since(begun).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := hv.Open(ctx, "qemu:///system", slog.New(slog.NewTextHandler(events.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var where atomic.Value // for State, Start and Hibernate only
	where.Store("local")
	h.SetRemotes(link.Remotes{
		Where: func(d string) string {
			if d == name {
				return where.Load().(string)
			}
			return ""
		},
		// "one" is host1 again, addressed as a remote host.
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"two": uri, "one": "qemu:///system"}, nil
		},
	})
	go events.drain(h.Events())
	if st, err := h.State(ctx, name); err != nil || st != desktop.VMSaved {
		t.Fatalf("before: %s %v", st, err)
	}

	// copyFile runs CopyFile, logging its time and progress.
	copyFile := func(from, to, path string) {
		t.Helper()
		var reports []int64
		var total int64
		start := time.Now()
		err := h.CopyFile(ctx, from, to, path, uid, gid, func(done, all int64) { reports = append(reports, done); total = all })
		if err != nil {
			t.Fatal(err)
		}
		if len(reports) == 0 || reports[len(reports)-1] != total {
			t.Errorf("%s: progress %v of %d", path, reports, total)
		}
		t.Logf("CopyFile %s → %s %s (%d MiB): %s, %d progress reports", from, to, filepath.Base(path), total>>20,
			time.Since(start).Round(time.Millisecond), len(reports))
		// The owner now: QEMU's start relabels the read-only seed
		// (libvirt's DAC driver, which restores no read-only disk's owner).
		copied := path
		if to == "two" {
			copied = on2(path)
		}
		if st, err := os.Stat(copied); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != uid ||
			int(st.Sys().(*syscall.Stat_t).Gid) != gid || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want %d:%d 0600", copied, st.Sys(), err, uid, gid)
		}
	}
	// moveDomain runs DefineOn then UndefineOn.
	moveDomain := func(from, to, tap string) {
		t.Helper()
		var reports int
		start := time.Now()
		if err := h.DefineOn(ctx, name, from, to, tap, func(int64, int64) { reports++ }); err != nil {
			t.Fatal(err)
		}
		defined := time.Since(start)
		if err := h.UndefineOn(ctx, name, from); err != nil {
			t.Fatal(err)
		}
		t.Logf("DefineOn %s → %s: %s (%d progress reports); UndefineOn: %s", from, to, defined.Round(time.Millisecond),
			reports, (time.Since(start) - defined).Round(time.Millisecond))
	}
	// arrived checks the domain on the host it moved to (virsh there, its
	// files at dst, as tap, its save image at saveHere) and gone from the
	// other (files at src, saveThere).
	arrived := func(here string, virshHere, virshThere func(...string) (string, error), dst, src func(string) string, tap, other, saveHere, saveThere string) {
		t.Helper()
		for _, f := range files {
			coldCheckCopy(t, src(f), dst(f))
		}
		for file, reads := range map[string][]string{
			"os.qcow2":   {"read -P 0x5a 0 1M", "read -P 0x77 2M 1M", "read -P 0 3M 1M"},
			"data.qcow2": {"read -P 0x3c 0 1M", "read -P 0x99 8M 1M", "read -P 0x4d 1G 2M", "read -P 0x5e 4095M 1M", "read -P 0 2G 1M"},
		} {
			args := []string{"-r", "-U"}
			for _, r := range reads {
				args = append(args, "-c", r)
			}
			out, err := exec.Command("qemu-io", append(args, dst(folder+"/"+file))...).CombinedOutput()
			if err != nil || strings.Contains(string(out), "Pattern verification failed") {
				t.Errorf("%s on %s: %v\n%s", file, here, err, out)
			}
		}
		if out, err := exec.Command("qemu-img", "snapshot", "-l", "-U", dst(dataDisk)).CombinedOutput(); err != nil ||
			!strings.Contains(string(out), "s1") || !strings.Contains(string(out), "s2") {
			t.Errorf("qcow2 snapshots in data.qcow2 on %s: %v\n%s", here, err, out)
		}
		if out, err := virshThere("dominfo", name); err == nil {
			t.Errorf("still defined where it left:\n%s", out)
		}
		if _, err := os.Stat(saveThere); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the save image is still where it left: %v", err)
		}
		if info, _ := virshHere("dominfo", name); !strings.Contains(info, "Managed save:   yes") || !strings.Contains(info, "Persistent:     yes") {
			t.Errorf("on %s:\n%s", here, info)
		}
		if st, err := os.Stat(saveHere); err != nil || st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("save image on %s: %v %v", here, st, err)
		}
		for what, args := range map[string][]string{
			"definition":      {"dumpxml", "--inactive", name},
			"save image":      {"managedsave-dumpxml", name},
			"snapshot s1":     {"snapshot-dumpxml", name, "s1"},
			"snapshot s2":     {"snapshot-dumpxml", name, "s2"},
			"snapshot parent": {"snapshot-parent", name, "s2"},
			"current":         {"snapshot-current", "--name", name},
		} {
			out, err := virshHere(args...)
			switch {
			case err != nil:
				t.Errorf("%s on %s: %v %s", what, here, err, out)
			case what == "snapshot parent" && strings.TrimSpace(out) != "s1", what == "current" && strings.TrimSpace(out) != "s2":
				t.Errorf("%s on %s: %q", what, here, out)
			case strings.HasPrefix(what, "snapshot p") || what == "current":
			case !strings.Contains(out, "dev='"+tap+"'") || strings.Contains(out, "dev='"+other+"'"):
				t.Errorf("%s on %s does not name tap %s:\n%s", what, here, tap, out)
			}
		}
	}
	// restored starts the domain where it is and checks QEMU restored it.
	restored := func(here string, virshHere func(...string) (string, error), tap string) {
		t.Helper()
		if st, err := h.State(ctx, name); err != nil || st != desktop.VMSaved {
			t.Errorf("State on %s: %s %v", here, st, err)
		}
		start := time.Now()
		if err := h.Start(ctx, name); err != nil {
			t.Fatalf("start on %s: %v", here, err)
		}
		t.Logf("started on %s in %s", here, time.Since(start).Round(time.Millisecond))
		if out, _ := virshHere("domstate", "--reason", name); strings.TrimSpace(out) != "running (restored)" {
			t.Errorf("on %s: %q, want running (restored)", here, out)
		}
		if out, err := exec.Command("ip", "link", "show", tap).CombinedOutput(); err != nil {
			t.Errorf("tap %s: %v %s", tap, err, out)
		}
	}

	// host1 → host2.
	saveDir2 := filepath.Join(dir, "lib/qemu/save")
	before, err := os.Stat(saveDir2)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := h.Files(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if err := f2.MakeDir(ctx, folder, uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		copyFile("local", "two", f)
	}
	if err := h.CopyFile(ctx, "local", "two", osDisk, uid, gid, nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("copy onto a file: %v", err)
	}
	moveDomain("local", "two", tapB)
	where.Store("two")
	arrived("host2", virsh2, virsh1, on2, func(p string) string { return p }, tapB, tapA, save2, save1)
	if after, err := os.Stat(saveDir2); err != nil || after.Mode() != before.Mode() ||
		after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid {
		t.Errorf("host2's save dir changed: %v → %v (%v)", before.Mode(), after, err)
	}
	if out, _ := virsh2("pool-list", "--all", "--name"); strings.Contains(out, coldPoolName("/var/lib/libvirt/qemu/save")) {
		t.Errorf("the save dir's pool is left on host2:\n%s", out)
	}
	restored("host2", virsh2, tapB)
	if err := h.UndefineOn(ctx, name, "two"); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("undefine a running domain: %v", err)
	}
	if err := h.Hibernate(ctx, name); err != nil {
		t.Fatal(err)
	}

	// host2 → host1: the caller removes the files the move left first.
	for _, f := range files {
		os.Remove(f)
	}
	// A copy cancelled: no file left. 256 MiB of data, so that progress
	// (every 250 ms) comes before the end.
	big := folder + "/big.raw"
	coldWriteData(t, on2(big), 256<<20)
	cctx, ccancel := context.WithCancel(ctx)
	var reports int
	err = h.CopyFile(cctx, "two", "local", big, uid, gid, func(done, total int64) {
		if reports++; done < total {
			ccancel()
		}
	})
	ccancel()
	switch {
	case reports <= 1 && err == nil:
		t.Log("the big copy ended before a progress report: not cancelled")
	case !errors.Is(err, context.Canceled):
		t.Errorf("cancelled copy: %v", err)
	default:
		t.Logf("cancelled copy: %v", err)
		if _, err := os.Stat(big); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a cancelled copy left a file: %v", err)
		}
	}
	os.Remove(big)
	os.Remove(on2(big))
	// data.qcow2 host2 → "one" (host1 through its pools and streams: the
	// pipe); the others host2 → local.
	f1, err := h.Files(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if err := f1.MakeDir(ctx, folder, uid, gid); err != nil {
		t.Fatal(err)
	}
	copyFile("two", "one", dataDisk)
	for _, f := range []string{osDisk, seed, tail} {
		copyFile("two", "local", f)
	}
	moveDomain("two", "local", tapA)
	where.Store("local")
	arrived("host1", virsh1, virsh2, func(p string) string { return p }, on2, tapA, tapB, save1, save2)
	restored("host1", virsh1, tapA)
	virsh1("destroy", name)

	for _, ev := range events.delivered() {
		t.Logf("delivered: %s %s", ev.State, ev.Reason)
	}
	t.Logf("TestHost2ColdMove took %s", time.Since(begun).Round(time.Millisecond))
}

// coldCheckCopy compares a copy with its source: the same size and
// bytes, and holes where the source has them (no more blocks than it,
// beyond some filesystem slack). Only the data of each is read: their
// holes read as zeros.
func coldCheckCopy(t *testing.T, src, dst string) {
	t.Helper()
	s, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ss, _ := s.Stat()
	ds, _ := d.Stat()
	sb, db := ss.Sys().(*syscall.Stat_t).Blocks, ds.Sys().(*syscall.Stat_t).Blocks
	t.Logf("  %s: %d bytes, %d KiB allocated (source %d KiB)", dst, ds.Size(), db/2, sb/2)
	if ds.Size() != ss.Size() {
		t.Errorf("%s: %d bytes, source %d", dst, ds.Size(), ss.Size())
	}
	if db*512 > sb*512+1<<20 {
		t.Errorf("%s: %d KiB allocated, source %d KiB: not sparse", dst, db/2, sb/2)
	}
	for _, f := range []*os.File{s, d} {
		for _, r := range coldDataRanges(t, f, ss.Size()) {
			a, b := make([]byte, r[1]-r[0]), make([]byte, r[1]-r[0])
			s.ReadAt(a, r[0])
			d.ReadAt(b, r[0])
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from %s in [%d, %d)", dst, src, r[0], r[1])
				return
			}
		}
	}
}

// coldDataRanges lists the data sections of f's first size bytes.
func coldDataRanges(t *testing.T, f *os.File, size int64) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for pos := int64(0); pos < size; {
		data, err := f.Seek(pos, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hole, err := f.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		hole = min(hole, size)
		for p := data; p < hole; p += 64 << 20 {
			out = append(out, [2]int64{p, min(p+64<<20, hole)})
		}
		pos = hole
	}
	return out
}

// coldWriteTail writes 1 MiB of data then a hole to 64 MiB.
func coldWriteTail(t *testing.T, path string) {
	t.Helper()
	coldWriteData(t, path, 1<<20)
	if err := os.Truncate(path, 64<<20); err != nil {
		t.Fatal(err)
	}
}

// coldWriteData writes n bytes of data (not zeros) to path.
func coldWriteData(t *testing.T, path string, n int) {
	t.Helper()
	b := make([]byte, 1<<20)
	rand.Read(b)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off := 0; off < n; off += len(b) {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// coldPoolName is the storage pool bureau makes for dir (pool.go).
func coldPoolName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "bureau-" + hex.EncodeToString(sum[:4])
}
