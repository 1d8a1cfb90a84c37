// Package host checks that this machine has room for a desktop before
// bureau asks QEMU for it, so a request fails with a clear message instead
// of a VM dying half-started.
package host

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

// Capacity reads free memory and disk space.
type Capacity struct {
	MemInfo string // /proc/meminfo
	DataDir string // where desktops' disks live
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
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.DataDir, &st); err != nil {
		return fmt.Errorf("reading free disk space of %s: %w", c.DataDir, err)
	}
	free := int(st.Bavail * uint64(st.Bsize) >> 20)
	if free < diskMiB+DiskReserveMiB {
		return fmt.Errorf("%s has %d MiB free; this needs %d MiB plus %d MiB kept free: %w",
			c.DataDir, free, diskMiB, DiskReserveMiB, desktop.ErrCapacity)
	}
	return nil
}

func availableMiB(path string) (int, error) {
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
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				return 0, fmt.Errorf("MemAvailable: %w", err)
			}
			return kib / 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemAvailable in %s", path)
}
