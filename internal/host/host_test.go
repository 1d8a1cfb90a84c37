package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "meminfo")
	os.WriteFile(mem, []byte("MemTotal:       24000000 kB\nMemAvailable:    3145728 kB\n"), 0o644) // 3 GiB
	c := Capacity{MemInfo: mem, DataDir: dir}
	if err := c.Check(2048, 0); err != nil {
		t.Errorf("2 GiB on a host with 3 GiB free: %v", err)
	}
	err := c.Check(4096, 0)
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "3072 MiB of memory available") {
		t.Errorf("4 GiB on a host with 3 GiB free: %v", err)
	}
	if err := c.Check(0, 1<<40); !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("a petabyte of disk: %v", err)
	}
	os.WriteFile(mem, []byte("MemTotal: 1 kB\n"), 0o644)
	if err := c.Check(1, 0); err == nil || errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("unreadable meminfo: %v", err)
	}
}
