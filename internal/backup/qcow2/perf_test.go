package qcow2

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// TestLargeImageSpeed maps a 2 GiB image with ~200 MiB written and checks
// every cell for changes; it logs the time (about 1 s is the budget).
func TestLargeImageSpeed(t *testing.T) {
	p := newImage(t, "2G")
	var cmds []string
	for i := range 100 { // 2 MiB every 20 MiB
		cmds = append(cmds, fmt.Sprintf("write -P %d %d 2M", i+1, int64(i)*20<<20))
	}
	qio(t, p, cmds...)
	snapshot(t, p, "m1")
	qio(t, p, "write -P 0xee 0 1M", "write -P 0xee 1500M 1M")
	snapshot(t, p, "m2")

	start := time.Now()
	s, err := NewSource(p, "m2", "m1", cell)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changed := changedSet(s)
	elapsed := time.Since(start)
	t.Logf("NewSource + Changed over %d cells: %v", s.Cells(), elapsed)
	if want := set(0, 1500); !maps.Equal(changed, want) {
		t.Errorf("changed = %v, want cells 0 and 1500", slices.Sorted(maps.Keys(changed)))
	}
	if elapsed > time.Second {
		t.Logf("warning: slower than the 1 s budget")
	}
}
