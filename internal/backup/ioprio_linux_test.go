package backup

import (
	"syscall"
	"testing"
)

// TestReadIdle: the reading runs at idle I/O priority, and the caller's
// thread keeps its own.
func TestReadIdle(t *testing.T) {
	prio := func() int {
		p, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_GET, 1, 0, 0)
		if errno != 0 {
			t.Fatalf("ioprio_get: %v", errno)
		}
		return int(p)
	}
	var inside int
	if err := readIdle(func() error { inside = prio(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside>>13 != 3 {
		t.Errorf("the reading thread's I/O class is %d, want 3 (idle)", inside>>13)
	}
}
