package libvirt

import "testing"

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
