//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
)

// TestHost2ImageCopy copies base images to host2 (scripts/host2.sh, whose
// /var/lib/bureau/images is its own DIR/images) through libvirt's
// storage-pool API (docs/research/multi-host.md §4): the copy is
// byte-identical, sparse, 0644 root, reported as it goes, seen by
// ImageOnHost, and absent from host1's images folder; a cancelled copy
// leaves nothing that looks complete. It also times the real base image
// if this machine has one.
func TestHost2ImageCopy(t *testing.T) {
	// Its own folder and ports (16515, ssh 16516).
	dir, uri, _ := ownHost2(t, "bureau-e2e-host2-img", 16515, "qemu-img", "qemu-io")
	var begun time.Time
	virsh := virshOn(uri)

	const remoteDir = "/var/lib/bureau/images"
	host2Images := filepath.Join(dir, "images")
	var made []string // names of volumes this test made on host2
	// Runs before host2 stops (cleanups run last first): the volumes,
	// then host2's pool for its images folder (the folder stays).
	t.Cleanup(func() {
		pool := imagesPool(t, virsh, remoteDir)
		for _, name := range made {
			for _, name := range []string{name, name + ".sha256"} {
				if pool != "" {
					virsh("vol-delete", "--pool", pool, name)
				}
				os.Remove(filepath.Join(host2Images, name))
			}
		}
		if pool != "" {
			virsh("pool-destroy", pool)
			if out, err := virsh("pool-undefine", pool); err != nil {
				t.Errorf("undefine host2's pool %s: %v %s", pool, err, out)
			}
		}
	})

	// The keepalive DialHost sets runs on libvirt's event loop, which
	// Open registers (bureau serve opens the local host first); the
	// in-process test driver keeps this test off the system libvirtd.
	ctx := context.Background()
	local, err := hv.Open(ctx, "test:///default", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	dialed, err := hv.DialHost(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	link := dialed.(*hv.HostLink)

	// A 64 MiB qcow2 image with 4 MiB written: mostly holes.
	src := filepath.Join(t.TempDir(), "src.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", src, "64M")
	run(t, "qemu-io", "-c", "write -P 0x5a 1M 4M", src)
	srcInfo, _ := os.Stat(src)

	name := "e2e-copy.qcow2"
	remote := remoteDir + "/" + name
	host1File := filepath.Join(remoteDir, name)
	if exists(host1File) {
		t.Fatalf("%s already exists on host1", host1File)
	}
	made = append(made, name)
	var reports progressLog
	begun = time.Now()
	if err := link.CopyImage(ctx, src, remote, reports.add); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begun)
	t.Logf("copied %s (%d KiB, %d KiB on disk) to host2 in %s; progress %v", filepath.Base(src), srcInfo.Size()>>10,
		onDisk(srcInfo)>>10, took.Round(time.Millisecond), reports.get())
	reports.check(t, srcInfo.Size())

	copied := filepath.Join(host2Images, name)
	st, err := os.Stat(copied)
	if err != nil {
		t.Fatalf("the copy is not in host2's images folder: %v", err)
	}
	if exists(host1File) {
		t.Errorf("%s appeared on host1: host2's images folder is not its own", host1File)
	}
	if sum(t, copied) != sum(t, src) {
		t.Errorf("sha256 of the copy differs from the source's")
	}
	sys := st.Sys().(*syscall.Stat_t)
	if st.Mode().Perm() != 0o644 || sys.Uid != 0 || sys.Gid != 0 {
		t.Errorf("the copy is %v %d:%d, want 0644 root:root", st.Mode().Perm(), sys.Uid, sys.Gid)
	}
	if onDisk(st) > onDisk(srcInfo)+(1<<20) {
		t.Errorf("the copy takes %d KiB on disk, the source %d KiB: holes were written", onDisk(st)>>10, onDisk(srcInfo)>>10)
	}
	if out, err := exec.Command("qemu-img", "compare", "-f", "qcow2", "-F", "qcow2", src, copied).CombinedOutput(); err != nil {
		t.Errorf("qemu-img compare: %v %s", err, out)
	}
	if pool := imagesPool(t, virsh, remoteDir); pool == "" {
		t.Error("no pool for host2's images folder")
	} else {
		info, _ := virsh("pool-info", pool)
		t.Logf("host2's pool for %s:\n%s", remoteDir, info)
		if !regexp.MustCompile(`State:\s+running`).MatchString(info) || !regexp.MustCompile(`Autostart:\s+yes`).MatchString(info) {
			t.Errorf("pool %s is not running with autostart", pool)
		}
	}

	check := func(path string, want bool) {
		t.Helper()
		begun := time.Now()
		ok, err := link.ImageOnHost(ctx, src, path)
		if err != nil || ok != want {
			t.Errorf("ImageOnHost(%s): %v %v, want %v", path, ok, err, want)
		}
		t.Logf("ImageOnHost(%s) = %v in %s", path, ok, time.Since(begun).Round(time.Millisecond))
	}
	check(remote, true)
	check(remoteDir+"/e2e-missing.qcow2", false)

	// A second copy finds the complete one and keeps it.
	reports = progressLog{}
	before := st.ModTime()
	begun = time.Now()
	if err := link.CopyImage(ctx, src, remote, reports.add); err != nil {
		t.Fatal(err)
	}
	t.Logf("copy again: kept the complete copy in %s", time.Since(begun).Round(time.Millisecond))
	reports.check(t, srcInfo.Size())
	if st, _ := os.Stat(copied); !st.ModTime().Equal(before) {
		t.Errorf("the complete copy was written again")
	}

	// A file of that name that is not a complete copy (here: one whose
	// header was lost) is not the image, and a copy replaces it.
	f, _ := os.OpenFile(copied, os.O_WRONLY, 0)
	f.WriteAt(make([]byte, 4096), 0)
	f.Close()
	check(remote, false)
	if err := link.CopyImage(ctx, src, remote, nil); err != nil {
		t.Fatal(err)
	}
	check(remote, true)
	if sum(t, copied) != sum(t, src) {
		t.Errorf("sha256 of the replaced copy differs from the source's")
	}

	if b, err := os.ReadFile(copied + ".sha256"); err != nil || strings.TrimSpace(string(b)) != sum(t, src) {
		t.Errorf("host2's sum file beside the copy: %q %v, want %s", b, err, sum(t, src))
	}
	// A copy without its sum file (made before bureau kept one) is read
	// back whole once, found to be the image, and given one.
	os.Remove(copied + ".sha256")
	check(remote, true)
	if b, _ := os.ReadFile(copied + ".sha256"); strings.TrimSpace(string(b)) != sum(t, src) {
		t.Errorf("the sum file after reading the copy back: %q", b)
	}

	// The image rebuilt here: the same size and header, other bytes past
	// them (64 KiB in the middle of its data). Host2's copy is another
	// build, not the image (an overlay made over it would read garbage
	// over this one), and a copy replaces it.
	rebuilt := src + ".rebuilt"
	run(t, "cp", src, rebuilt)
	if g, err := os.OpenFile(rebuilt, os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		g.WriteAt(bytes.Repeat([]byte{0xa5}, 64<<10), srcInfo.Size()/2)
		g.Close()
	}
	if err := os.Rename(rebuilt, src); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(src); st.Size() != srcInfo.Size() || !bytes.Equal(mustHead(t, src), mustHead(t, copied)) {
		t.Fatal("the rebuild changed the size or the header")
	}
	check(remote, false)
	if err := link.CopyImage(ctx, src, remote, nil); err != nil {
		t.Fatal(err)
	}
	check(remote, true)
	if sum(t, copied) != sum(t, src) {
		t.Errorf("sha256 of the copy that replaced another build differs from the source's")
	}

	// Cancelled mid-way (from the progress callback): while the body is
	// on its way the file's header is zeros, not a qcow2 image; after the
	// cancel the volume is gone.
	big := filepath.Join(t.TempDir(), "big.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", big, "1G")
	run(t, "qemu-io", "-c", "write -P 0x33 0 768M", big)
	bigInfo, _ := os.Stat(big)
	cancelName := "e2e-cancel.qcow2"
	made = append(made, cancelName)
	cancelled := filepath.Join(host2Images, cancelName)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var at int64
	var header []byte
	var headerErr error
	begun = time.Now()
	err = link.CopyImage(cctx, big, remoteDir+"/"+cancelName, func(done, total int64) {
		if done < total && at == 0 {
			at = done
			header, headerErr = readHead(cancelled, 4096)
			cancel()
		}
	})
	t.Logf("cancelled copy: %v after %s, at %d of %d MiB", err, time.Since(begun).Round(time.Millisecond), at>>20, bigInfo.Size()>>20)
	if at == 0 {
		t.Fatalf("the %d MiB copy reported no progress before its end (%v): too fast to cancel mid-way", bigInfo.Size()>>20, err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled copy: %v, want context.Canceled", err)
	}
	if headerErr != nil || !bytes.Equal(header, make([]byte, 4096)) {
		t.Errorf("header of the copy under way: %v %q…, want zeros", headerErr, header[:min(len(header), 8)])
	}
	if _, err := os.Stat(cancelled); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the cancel, %s: %v, want it removed", cancelled, err)
	}
	if ok, err := link.ImageOnHost(ctx, big, remoteDir+"/"+cancelName); ok || err != nil {
		t.Errorf("ImageOnHost of the cancelled copy: %v %v", ok, err)
	}
	// The same path copies fine afterwards (nothing left "under way").
	begun = time.Now()
	if err := link.CopyImage(ctx, big, remoteDir+"/"+cancelName, nil); err != nil {
		t.Fatal(err)
	}
	took = time.Since(begun)
	t.Logf("%d MiB of data (%d MiB file) copied in %s: %.0f MiB/s", onDisk(bigInfo)>>20, bigInfo.Size()>>20, took.Round(time.Millisecond),
		float64(bigInfo.Size())/(1<<20)/took.Seconds())
	if sum(t, cancelled) != sum(t, big) {
		t.Errorf("sha256 of %s differs from the source's", cancelled)
	}

	// A host that stops answering mid-copy (its libvirtd SIGSTOPped):
	// libvirt's keepalive ends the copy; the partial file cannot be
	// removed meanwhile, but its header is zeros, so it does not pass
	// for the image, and the next copy replaces it.
	pid := strings.TrimSpace(host2File(t, filepath.Join(dir, "libvirtd.pid")))
	signal := func(sig string) {
		if out, err := exec.Command("kill", "-"+sig, pid).CombinedOutput(); err != nil {
			t.Errorf("kill -%s %s: %v %s", sig, pid, err, out)
		}
	}
	stopName := "e2e-stopped.qcow2"
	made = append(made, stopName)
	stopped := false
	t.Cleanup(func() {
		if stopped {
			signal("CONT")
		}
	})
	begun = time.Now()
	var stoppedAt time.Time
	err = link.CopyImage(ctx, big, remoteDir+"/"+stopName, func(done, total int64) {
		if done < total && !stopped {
			stopped, stoppedAt = true, time.Now()
			signal("STOP")
		}
	})
	if !stopped {
		t.Fatalf("the copy reported no progress before its end (%v)", err)
	}
	t.Logf("copy to a host that stopped answering: %v, %s after it stopped", err, time.Since(stoppedAt).Round(100*time.Millisecond))
	if err == nil {
		t.Error("a copy to a host that stopped answering succeeded")
	}
	signal("CONT")
	stopped = false
	if head, err := readHead(filepath.Join(host2Images, stopName), 4096); err == nil && !bytes.Equal(head, make([]byte, 4096)) {
		t.Errorf("the partial copy's header is not zeros: %q…", head[:8])
	} else {
		t.Logf("the partial copy left behind: %v (header zeros: %v)", err, err == nil)
	}
	if err := link.CopyImage(ctx, src, remote, nil); err == nil || !strings.Contains(err.Error(), "connection") {
		t.Errorf("copy on the lost link: %v, want the lost connection", err)
	}
	redialed, err := hv.DialHost(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer redialed.Close()
	link = redialed.(*hv.HostLink)
	if ok, err := link.ImageOnHost(ctx, big, remoteDir+"/"+stopName); ok || err != nil {
		t.Errorf("ImageOnHost of the partial copy: %v %v", ok, err)
	}
	if err := link.CopyImage(ctx, big, remoteDir+"/"+stopName, nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := link.ImageOnHost(ctx, big, remoteDir+"/"+stopName); !ok || err != nil {
		t.Errorf("ImageOnHost after copying again: %v %v", ok, err)
	}
	if err := os.Remove(filepath.Join(host2Images, cancelName)); err != nil { // room for the base image
		t.Error(err)
	}

	// The real base image, if this machine has one: how long a host's
	// first desktop waits for it.
	base := "/var/lib/bureau/images/debian-12-desktop.qcow2"
	baseInfo, err := os.Stat(base)
	if err != nil {
		t.Logf("no %s here: not timed", base)
		return
	}
	baseName := "e2e-" + filepath.Base(base)
	made = append(made, baseName)
	reports = progressLog{}
	begun = time.Now()
	if err := link.CopyImage(ctx, base, remoteDir+"/"+baseName, reports.add); err != nil {
		t.Fatal(err)
	}
	took = time.Since(begun)
	t.Logf("base image %s: %d MiB (%d MiB on disk) copied to host2 in %s: %.0f MiB/s; %d progress reports",
		filepath.Base(base), baseInfo.Size()>>20, onDisk(baseInfo)>>20, took.Round(time.Millisecond),
		float64(baseInfo.Size())/(1<<20)/took.Seconds(), len(reports.get()))
	reports.check(t, baseInfo.Size())
	if ok, err := link.ImageOnHost(ctx, base, remoteDir+"/"+baseName); !ok || err != nil {
		t.Errorf("ImageOnHost of the base image: %v %v", ok, err)
	}
	if sum(t, filepath.Join(host2Images, baseName)) != sum(t, base) {
		t.Errorf("sha256 of the base image's copy differs")
	}
}

// imagesPool is the name of host2's pool whose target is dir ("" if none).
func imagesPool(t *testing.T, virsh func(...string) (string, error), dir string) string {
	out, err := virsh("pool-list", "--all", "--name")
	if err != nil {
		t.Logf("pool-list on host2: %v %s", err, out)
		return ""
	}
	for _, name := range strings.Fields(out) {
		if x, err := virsh("pool-dumpxml", name); err == nil && strings.Contains(x, "<path>"+dir+"</path>") {
			return name
		}
	}
	return ""
}

// progressLog records a copy's progress reports.
type progressLog struct {
	mu   sync.Mutex
	at   []time.Time
	done [][2]int64
}

func (p *progressLog) add(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, time.Now())
	p.done = append(p.done, [2]int64{done, total})
}

func (p *progressLog) get() [][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][2]int64(nil), p.done...)
}

// check: reports came, never went back, were spaced (at most ~4 a
// second), and the last one is the end.
func (p *progressLog) check(t *testing.T, total int64) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.done) == 0 {
		t.Error("no progress reported")
		return
	}
	if last := p.done[len(p.done)-1]; last != [2]int64{total, total} {
		t.Errorf("last progress %v, want %d of %d", last, total, total)
	}
	for i := 1; i < len(p.done); i++ {
		if p.done[i][0] < p.done[i-1][0] || p.done[i][1] != total {
			t.Errorf("progress went %v then %v", p.done[i-1], p.done[i])
		}
		// The last report (the end) may follow closely.
		if i < len(p.done)-1 && p.at[i].Sub(p.at[i-1]) < 200*time.Millisecond {
			t.Errorf("progress reports %s apart", p.at[i].Sub(p.at[i-1]))
		}
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = io.ReadFull(f, b)
	return b, err
}

// onDisk is the bytes a file takes on disk.
func onDisk(st os.FileInfo) int64 { return st.Sys().(*syscall.Stat_t).Blocks * 512 }

func mustHead(t *testing.T, path string) []byte {
	t.Helper()
	h, err := readHead(path, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
