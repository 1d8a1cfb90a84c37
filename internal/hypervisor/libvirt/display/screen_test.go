package display

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// readQEMUFile reads only a regular file with one link that the desktop's
// QEMU user owns: a QEMU taken over by its guest must not make bureau read
// another file through a symlink or a hard link.
func TestReadQEMUFileRefusesOtherFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another user")
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "own.png")
	os.WriteFile(own, []byte("png"), 0o600)
	os.Chown(own, 123456, 123456)
	if b, err := readQEMUFile(own, 1<<20); err != nil || string(b) != "png" {
		t.Fatalf("QEMU's own file: %q %v", b, err)
	}
	if _, err := readQEMUFile(own, 2); err == nil {
		t.Error("a file over the limit was read")
	}
	rootFile := filepath.Join(dir, "root")
	os.WriteFile(rootFile, []byte("secret"), 0o600)
	link := filepath.Join(dir, "link.png")
	os.Symlink(rootFile, link)
	hard := filepath.Join(dir, "hard.png")
	os.Link(own, hard)
	fifo := filepath.Join(dir, "fifo.png")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	os.Chown(fifo, 123456, 123456)
	for name, p := range map[string]string{"root's file": rootFile, "a symlink": link, "a hard link": hard, "a FIFO": fifo} {
		if b, err := readQEMUFile(p, 1<<20); err == nil {
			t.Errorf("%s was read: %q", name, b)
		}
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
