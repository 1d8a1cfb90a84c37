package backup

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RestoreDisk makes a qcow2 whose content is the backed-up disk.
func TestRestoreDisk(t *testing.T) {
	if _, err := exec.LookPath(QemuImg); err != nil {
		t.Fatalf("qemu-img is needed (apt-get install qemu-utils, or scripts/host-setup.sh): %v", err)
	}
	ctx := context.Background()
	r, _, _ := newDirRepo(t)
	data := disk(10, 4096)
	m, _, err := r.Backup(ctx, &fakeSource{data: data, cellSize: CellSize}, nil, meta("q"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "data.qcow2")
	if err := RestoreDisk(ctx, r, m, path, nil); err != nil {
		t.Fatal(err)
	}
	if err := RestoreDisk(ctx, r, m, path, nil); err == nil {
		t.Error("an existing file was overwritten")
	}
	raw := filepath.Join(dir, "back.raw")
	if out, err := exec.Command(QemuImg, "convert", "-f", "qcow2", "-O", "raw", path, raw).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert: %v: %s", err, out)
	}
	if got, err := os.ReadFile(raw); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the qcow2 holds other content (%d bytes, %v)", len(got), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.restoring.raw")); len(left) != 0 {
		t.Errorf("left over: %v", left)
	}
}
