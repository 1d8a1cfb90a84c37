package domains

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestParseAnon: only private, writable, anonymous mappings of 1 MiB or
// more (the guest's RAM, QEMU's heaps) are pushed out; files, shared
// memory and small mappings are left alone.
func TestParseAnon(t *testing.T) {
	for line, want := range map[string]bool{
		"7f9f2fe00000-7f9fafe00000 rw-p 00000000 00:00 0 ":                                 true, // guest RAM
		"7f9f2fe00000-7f9fafe00000 rw-p 00000000 00:00 0":                                  true,
		"5581c2a4d000-5581c4a4d000 rw-p 00000000 00:00 0                          [heap]":  true,
		"7f9f2fe00000-7f9f2fe80000 rw-p 00000000 00:00 0":                                  false, // 512 KiB
		"7f9f2fe00000-7f9fafe00000 rw-s 00000000 00:05 1234   /memfd:ram (deleted)":        false,
		"7f9f2fe00000-7f9fafe00000 r--p 00000000 fe:01 5678   /usr/bin/qemu-system-x86_64": false,
		"7f9f2fe00000-7f9fafe00000 rw-p 00001000 fe:01 5678   /usr/lib/libc.so.6":          false,
		"7ffc2fe00000-7ffc30000000 rw-p 00000000 00:00 0                          [stack]": false,
		"garbage": false,
	} {
		if _, got := parseAnon(line); got != want {
			t.Errorf("%q: %t, want %t", line, got, want)
		}
	}
	r, _ := parseAnon("7f9f2fe00000-7f9fafe00000 rw-p 00000000 00:00 0")
	if r.start != 0x7f9f2fe00000 || r.len != 2<<30 {
		t.Errorf("range %#x+%#x", r.start, r.len)
	}
}

func TestParsePrivate(t *testing.T) {
	rollup := `55d0c4a00000-7ffd1b5fe000 ---p 00000000 00:00 0                          [rollup]
Rss:              401876 kB
Pss:              150123 kB
Shared_Clean:      10240 kB
Shared_Dirty:     330000 kB
Private_Clean:      2048 kB
Private_Dirty:     59588 kB
Swap:            1500000 kB
`
	if got, err := parsePrivate(rollup); err != nil || got != 61636 {
		t.Errorf("parsePrivate = %d, %v; want 61636", got, err)
	}
	if _, err := parsePrivate("Rss: 1 kB\n"); err == nil {
		t.Error("a rollup without private lines parsed")
	}
}

// A range unmapped since the maps were read (one of QEMU's heaps freed
// meanwhile) is skipped, not a failed reclaim; a mapped one is paged out.
func TestPageOutSkipsARangeNoLongerMapped(t *testing.T) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	b, err := unix.Mmap(-1, 0, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = byte(i)
	}
	r := memRange{uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))}
	if err := pageOut(pidfd, r); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
			t.Skipf("process_madvise here: %v", err)
		}
		t.Fatalf("a mapped range: %v", err)
	}
	if b[4096] != byte(4096%256) {
		t.Fatal("paged-out memory changed")
	}
	if err := unix.Munmap(b); err != nil {
		t.Fatal(err)
	}
	if err := pageOut(pidfd, r); err != nil {
		t.Fatalf("a range unmapped since: %v, want it skipped", err)
	}
}
