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
