package pools

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// complete says whether vol is a complete copy of src, and if not why.
func (p Host) complete(vol *libvirt.StorageVol, src *source) (bool, string, error) {
	phys, err := vol.GetInfoFlags(libvirt.STORAGE_VOL_GET_PHYSICAL)
	if err != nil {
		return false, "", link.HostErr("volume size", err)
	}
	if int64(phys.Allocation) != src.size {
		return false, fmt.Sprintf("%d bytes, want %d", phys.Allocation, src.size), nil
	}
	info, err := vol.GetInfo()
	if err != nil {
		return false, "", link.HostErr("volume size", err)
	}
	if int64(info.Capacity) != src.virtual {
		return false, fmt.Sprintf("virtual size %d, want %d", info.Capacity, src.virtual), nil
	}
	head, err := p.Download(vol, len(src.head))
	if err != nil {
		return false, "", err
	}
	if !bytes.Equal(head, src.head) {
		return false, "first bytes differ", nil
	}
	return true, "", nil
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
