package pools

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// source is the local image being copied.
type source struct {
	f       *os.File
	path    string
	size    int64  // bytes
	virtual int64  // the disk size a qcow2 header states, else size
	head    []byte // the first min(size, headerLen) bytes
	used    int64  // bytes it takes on disk (holes take none)
}

func openSource(path string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		f.Close()
		return nil, fmt.Errorf("image %s: not a regular file, or empty", path)
	}
	s := &source{f: f, path: path, size: st.Size(), head: make([]byte, min(st.Size(), headerLen))}
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(len(s.head))), s.head); err != nil {
		f.Close()
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	s.virtual = s.size
	if v, ok := qcow2Size(s.head); ok {
		s.virtual = v
	}
	s.used = s.size
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.used = sys.Blocks * 512
	}
	return s, nil
}

// qcow2Size is the virtual disk size a qcow2 header states.
func qcow2Size(head []byte) (int64, bool) {
	if len(head) < 32 || string(head[:4]) != "QFI\xfb" {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(head[24:32])), true
}

// spaceFor refuses a copy the host has no room for.
func spaceFor(p *libvirt.StoragePool, dir string, src *source) error {
	info, err := p.GetInfo()
	if err != nil {
		return link.HostErr("storage pool for "+dir, err)
	}
	if int64(info.Available) < src.used {
		return fmt.Errorf("not enough space on the host: %s needs %d MiB, %d MiB free in %s: %w",
			filepath.Base(src.path), src.used>>20, info.Available>>20, dir, syscall.ENOSPC)
	}
	return nil
}

// A copy's content: besides its size and header, a copy on a host is
// known by the sha256 of its bytes, kept beside it in a small file
// (sumName) written once the copy is whole. Two builds of one recipe can
// share a size and a header (a qcow2 header says where its tables are,
// not what the disk holds); an overlay made over one and run over the
// other reads garbage. A copy without that file (made before bureau kept
// it, or cut short just before) is read back whole once and hashed.

// sumName is the file holding the sha256 of the image name on a host.
func sumName(name string) string { return name + ".sha256" }

// verdict is what complete finds of a file on the host.
type verdict struct {
	ok  bool
	why string // why not ok
	// cut is a copy cut short: its header is still zeros (the header is
	// uploaded last), so no desktop ever used it as its base.
	cut bool
}

// complete compares the image name in pl with src: sizes, header, then
// content (its sum file, else its bytes, after which the sum file is
// written).
func (p Host) complete(pl *libvirt.StoragePool, vol *libvirt.StorageVol, name string, src *source) (verdict, error) {
	v, err := p.matches(vol, src)
	if err != nil || !v.ok {
		return v, err
	}
	want, err := src.sum()
	if err != nil {
		return verdict{}, err
	}
	got, err := p.readSum(pl, name)
	if err != nil {
		return verdict{}, err
	}
	if got == "" {
		if got, err = p.hashVolume(vol, src.size); err != nil {
			return verdict{}, fmt.Errorf("read the copy back: %w", err)
		}
		if got == want {
			if err := p.writeSum(pl, name, want); err != nil {
				return verdict{}, err
			}
		}
	}
	if got != want {
		return verdict{why: fmt.Sprintf("another build: sha256 %.16s, this host's %.16s", got, want)}, nil
	}
	return verdict{ok: true}, nil
}

// matches compares vol's sizes and header with src's.
func (p Host) matches(vol *libvirt.StorageVol, src *source) (verdict, error) {
	phys, err := vol.GetInfoFlags(libvirt.STORAGE_VOL_GET_PHYSICAL)
	if err != nil {
		return verdict{}, link.HostErr("volume size", err)
	}
	head, err := p.Download(vol, len(src.head))
	if err != nil {
		return verdict{}, err
	}
	sameHead := bytes.Equal(head, src.head)
	if !sameHead && allZero(head) {
		return verdict{why: "a copy cut short (its header is zeros)", cut: true}, nil
	}
	if int64(phys.Allocation) != src.size {
		return verdict{why: fmt.Sprintf("%d bytes, want %d", phys.Allocation, src.size)}, nil
	}
	if !sameHead {
		return verdict{why: "first bytes differ"}, nil
	}
	info, err := vol.GetInfo()
	if err != nil {
		return verdict{}, link.HostErr("volume size", err)
	}
	if int64(info.Capacity) != src.virtual {
		return verdict{why: fmt.Sprintf("virtual size %d, want %d", info.Capacity, src.virtual)}, nil
	}
	return verdict{ok: true}, nil
}

// readSum is the sum file of the image name in pl ("" when there is none
// or it holds no sum).
func (p Host) readSum(pl *libvirt.StoragePool, name string) (string, error) {
	vol, err := LookupVolume(pl, sumName(name))
	if err != nil || vol == nil {
		return "", err
	}
	defer vol.Free()
	b, err := p.Download(vol, 2*sha256.Size+1)
	if err != nil {
		return "", err
	}
	sum := strings.TrimSpace(string(b))
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != 2*sha256.Size {
		return "", nil
	}
	return sum, nil
}

// writeSum writes the sum file of the image name in pl.
func (p Host) writeSum(pl *libvirt.StoragePool, name, sum string) error {
	if err := p.removeVolume(pl, sumName(name)); err != nil {
		return err
	}
	body := []byte(sum + "\n")
	x, err := VolumeXML(sumName(name), int64(len(body)), imageFile)
	if err != nil {
		return err
	}
	vol, err := pl.StorageVolCreateXML(x, 0)
	if err != nil {
		return link.HostErr("create "+sumName(name), err)
	}
	defer vol.Free()
	sent := false
	data := func(*libvirt.Stream, int) ([]byte, error) {
		if sent {
			return nil, nil
		}
		sent = true
		return body, nil
	}
	if err := p.Upload(vol, 0, int64(len(body)), false, data, nil, nil, func() error { return nil }); err != nil {
		vol.Delete(0)
		return fmt.Errorf("write %s: %w", sumName(name), err)
	}
	return nil
}

// removeVolume removes the file name from pl (none there is fine).
func (p Host) removeVolume(pl *libvirt.StoragePool, name string) error {
	vol, err := LookupVolume(pl, name)
	if err != nil || vol == nil {
		return err
	}
	defer vol.Free()
	if err := vol.Delete(0); err != nil {
		return link.HostErr("remove "+name, err)
	}
	return nil
}

// hashVolume reads vol's size bytes back from the host and hashes them.
func (p Host) hashVolume(vol *libvirt.StorageVol, size int64) (string, error) {
	h := sha256.New()
	if err := p.downloadTo(vol, size, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return len(b) > 0
}

// sums caches the sha256 of local images: by path, size, change time and
// inode (a rebuilt image is a new file renamed over the old).
var sums sync.Map

// sum is the sha256 of the local image, hashed once per file version.
func (s *source) sum() (string, error) {
	st, err := s.f.Stat()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", s.path, err)
	}
	var key string
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		key = fmt.Sprintf("%s\x00%d\x00%d\x00%d.%d", s.path, st.Size(), sys.Ino, sys.Ctim.Sec, sys.Ctim.Nsec)
	} else {
		key = fmt.Sprintf("%s\x00%d\x00%d", s.path, st.Size(), st.ModTime().UnixNano())
	}
	if v, ok := sums.Load(key); ok {
		return v.(string), nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(s.f, 0, s.size)); err != nil {
		return "", fmt.Errorf("image %s: %w", s.path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sums.Store(key, sum)
	return sum, nil
}

// Progress spaces a copy's reports.
type Progress struct {
	fn    CopyProgress
	total int64
	mu    sync.Mutex
	last  time.Time
}

func NewProgress(fn CopyProgress, total int64) *Progress {
	return &Progress{fn: fn, total: total, last: time.Now()}
}

// At reports done bytes if the last report is progressEvery old.
func (p *Progress) At(done int64) {
	if p.fn == nil || done >= p.total {
		return // the end is reported once, by End
	}
	p.mu.Lock()
	now := time.Now()
	due := now.Sub(p.last) >= progressEvery
	if due {
		p.last = now
	}
	p.mu.Unlock()
	if due {
		p.fn(done, p.total)
	}
}

// End reports the copy done.
func (p *Progress) End() {
	if p.fn != nil {
		p.fn(p.total, p.total)
	}
}
