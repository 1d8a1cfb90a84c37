package domains

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bureau/bureau/internal/desktop"
)

// pidDir is where libvirt's QEMU driver keeps each running domain's pid.
const pidDir = "/run/libvirt/qemu"

// ErrNoSwap says memory cannot be pushed out: the host has no swap.
var ErrNoSwap = errors.New("the host has no swap (make setup adds compressed swap in RAM, zram)")

// Reclaim pushes a VM's resident guest memory out to the host's swap
// (process_madvise MADV_PAGEOUT over QEMU's private anonymous mappings);
// the pages fault back in when the guest touches them. It is meant for a
// paused VM, whose pages nothing touches meanwhile. It returns the memory
// the QEMU process still holds on its own after, in KiB: pages KSM merged
// with other desktops' stay resident (a page shared is not paged out) but
// cost this desktop nothing. It works on the host bureau
// runs on, with cgroup v1 or v2, and needs no cgroup placement.
func (ds *Domains) Reclaim(ctx context.Context, name string) (int64, error) {
	if r, err := ds.link.On(ctx, name); err != nil {
		return 0, err
	} else if r.Host() != "" {
		// It works on QEMU's process through /proc: this machine's only.
		return 0, fmt.Errorf("reclaim %s: %w", name, desktop.ErrNotOnRemoteHost)
	}
	if !hasSwap() {
		return 0, ErrNoSwap
	}
	pid, err := qemuPID(name)
	if err != nil {
		return 0, err
	}
	ranges, err := anonRanges(pid)
	if err != nil {
		return 0, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, fmt.Errorf("reclaim %s: pidfd: %w", name, err)
	}
	defer unix.Close(pidfd)
	for _, r := range ranges {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := pageOut(pidfd, r); err != nil {
			return 0, fmt.Errorf("reclaim %s: %w", name, err)
		}
	}
	return privateKiB(pid)
}

// memRange is one mapping of a process: its start and length.
type memRange struct{ start, len uintptr }

// iovec is struct iovec over another process's addresses.
type iovec struct {
	base uintptr
	len  uint64
}

// pageOut advises the kernel to page out one range of the process, a
// chunk at a time: the call may stop short and says how far it got. A
// chunk no longer mapped (ENOMEM: one of QEMU's own heaps, freed since the
// maps were read, e.g. a VNC update buffer) is skipped.
func pageOut(pidfd int, r memRange) error {
	const chunk = 256 << 20
	for off := uintptr(0); off < r.len; off += chunk {
		v := iovec{base: r.start + off, len: uint64(min(chunk, r.len-off))}
		_, _, errno := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&v)), 1, unix.MADV_PAGEOUT, 0, 0)
		if errno != 0 && errno != unix.EINTR && errno != unix.EAGAIN && errno != unix.ENOMEM {
			return fmt.Errorf("process_madvise: %w", errno)
		}
	}
	return nil
}

func qemuPID(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(pidDir, name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", name, err)
	}
	return pid, nil
}

// anonRanges lists the process's private, writable, anonymous mappings of
// at least 1 MiB: the guest's RAM and QEMU's own heaps.
func anonRanges(pid int) ([]memRange, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []memRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := parseAnon(sc.Text()); ok {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// parseAnon reads one /proc/PID/maps line: "start-end perms offset dev
// inode [path]".
func parseAnon(line string) (memRange, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || len(f) > 6 || !strings.HasPrefix(f[1], "rw") || f[1][3] != 'p' || f[4] != "0" {
		return memRange{}, false
	}
	if len(f) == 6 && f[5] != "[heap]" {
		return memRange{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return memRange{}, false
	}
	a, err1 := strconv.ParseUint(lo, 16, 64)
	b, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || b-a < 1<<20 {
		return memRange{}, false
	}
	return memRange{uintptr(a), uintptr(b - a)}, true
}

// PrivateKiB is the resident memory only the VM's QEMU process holds, in
// KiB: what it costs the host beyond pages KSM shares with other VMs.
func (ds *Domains) PrivateKiB(name string) (int64, error) {
	pid, err := qemuPID(name)
	if err != nil {
		return 0, err
	}
	return privateKiB(pid)
}

// privateKiB is the resident memory only this process maps
// (Private_Clean + Private_Dirty of /proc/PID/smaps_rollup).
func privateKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	return parsePrivate(string(b))
}

func parsePrivate(rollup string) (int64, error) {
	var sum int64
	found := 0
	for _, l := range strings.Split(rollup, "\n") {
		for _, key := range []string{"Private_Clean:", "Private_Dirty:"} {
			if v, ok := strings.CutPrefix(l, key); ok {
				n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("smaps_rollup %q: %w", l, err)
				}
				sum += n
				found++
			}
		}
	}
	if found != 2 {
		return 0, errors.New("smaps_rollup has no Private_Clean and Private_Dirty")
	}
	return sum, nil
}

// hasSwap reports whether the host has any swap space turned on.
func hasSwap() bool {
	b, err := os.ReadFile("/proc/swaps")
	return err == nil && strings.Count(strings.TrimSpace(string(b)), "\n") > 0
}
