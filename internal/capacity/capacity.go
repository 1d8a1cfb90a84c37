// Package capacity checks that this machine has room for a desktop before
// bureau asks QEMU for it, so a request fails with a clear message instead
// of a VM dying half-started.
package capacity

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
)

// Reserves kept free for the host itself.
const (
	MemoryReserveMiB = 512
	DiskReserveMiB   = 2048
)

// DefaultSaveDir is where libvirt's qemu driver writes hibernation
// (managed save) images.
const DefaultSaveDir = "/var/lib/libvirt/qemu/save"

// SaveOverheadMiB is what a save image holds beyond the guest's RAM
// (device state, video memory), generously.
const SaveOverheadMiB = 64

// Capacity reads free memory and disk space.
type Capacity struct {
	MemInfo string // /proc/meminfo
	DataDir string // where desktops' disks live
	SaveDir string // where hibernated RAM goes (DefaultSaveDir)
}

// Check refuses a desktop needing memMiB of RAM and diskMiB of new disk
// space when the host lacks them (beyond its reserves).
func (c Capacity) Check(memMiB, diskMiB int) error {
	if memMiB > 0 {
		avail, err := availableMiB(c.MemInfo)
		if err != nil {
			return fmt.Errorf("reading free memory: %w", err)
		}
		if avail < memMiB+MemoryReserveMiB {
			return fmt.Errorf("the host has %d MiB of memory available; this desktop needs %d MiB plus %d MiB kept for the host: %w",
				avail, memMiB, MemoryReserveMiB, desktop.ErrCapacity)
		}
	}
	free, err := freeMiB(c.DataDir)
	if err != nil {
		return err
	}
	if free < diskMiB+DiskReserveMiB {
		return fmt.Errorf("%s has %d MiB free; this needs %d MiB plus %d MiB kept free: %w",
			c.DataDir, free, diskMiB, DiskReserveMiB, desktop.ErrCapacity)
	}
	return nil
}

// CheckSave refuses to hibernate a desktop with memMiB of RAM when the save
// directory could not hold all of it (the most a save image takes), so a
// hibernation never fills the host's disk halfway through.
func (c Capacity) CheckSave(memMiB int) error {
	dir := c.SaveDir
	if dir == "" {
		dir = DefaultSaveDir
	}
	free, err := freeMiB(dir)
	if err != nil {
		return err
	}
	if need := memMiB + SaveOverheadMiB; free < need {
		return fmt.Errorf("%s has %d MiB free; hibernating this desktop can take up to %d MiB (its RAM): %w",
			dir, free, need, desktop.ErrCapacity)
	}
	return nil
}

func freeMiB(dir string) (int, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("reading free disk space of %s: %w", dir, err)
	}
	return int(st.Bavail * uint64(st.Bsize) >> 20), nil
}

// AvailableMemoryMiB is the memory the host can still give (MemAvailable).
func (c Capacity) AvailableMemoryMiB() (int, error) { return availableMiB(c.MemInfo) }

// MemoryMiB is the host's RAM (MemTotal) and what it can still give
// (MemAvailable).
func (c Capacity) MemoryMiB() (total, available int64, err error) {
	t, err := meminfoMiB(c.MemInfo, "MemTotal")
	if err != nil {
		return 0, 0, err
	}
	a, err := availableMiB(c.MemInfo)
	return int64(t), int64(a), err
}

func availableMiB(path string) (int, error) { return meminfoMiB(path, "MemAvailable") }

// meminfoMiB reads one field of /proc/meminfo (or path) in MiB.
func meminfoMiB(path, key string) (int, error) {
	if path == "" {
		path = "/proc/meminfo"
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				return 0, fmt.Errorf("%s: %w", key, err)
			}
			return kib / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, path)
}
