package backup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
)

// QemuImg is the qemu-img binary RestoreDisk runs.
var QemuImg = "qemu-img"

// RestoreDisk writes the disk of backup m as a new qcow2 image at path,
// which must not exist: the cells are restored (see Repo.Restore) into a
// sparse raw file beside it, which qemu-img converts (all-zero areas stay
// unallocated) and which is then removed. On an error nothing is left at
// path. progress is as for Repo.Restore.
func RestoreDisk(ctx context.Context, r *Repo, m *Manifest, path string, progress func(Progress)) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("restore backup %s to %s: the file already exists", m.ID, path)
	}
	raw := path + ".restoring.raw"
	f, err := os.OpenFile(raw, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore backup %s: %w", m.ID, err)
	}
	defer os.Remove(raw)
	err = f.Truncate(m.DiskBytes)
	if err == nil {
		err = r.Restore(ctx, m, f, progress)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, QemuImg, "convert", "-q", "-f", "raw", "-O", "qcow2", "-o", "lazy_refcounts=on", raw, path)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(path)
		return fmt.Errorf("restore backup %s: qemu-img convert to %s: %w: %s", m.ID, path, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}
