package backup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/bureau/bureau/internal/storage"
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
	defer os.Remove(raw)
	if err := restoreRaw(ctx, r, m, raw, m.DiskBytes, progress); err != nil {
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

// RestoreOver writes the disk of backup m over the qcow2 image at path, in
// place: its internal snapshots stay (their clusters are copy-on-write),
// so a snapshot taken just before keeps what the disk held. The disk must
// be at least as large as m's (a larger one keeps its size, and reads as
// zeros past m's end). The cells are restored into a sparse raw file
// beside path, first, so a target that fails leaves path untouched; only
// then does qemu-img write it over path (all of it: areas m has no cells
// for become zeros). An error from that last step can leave path half
// written. progress is as for Repo.Restore.
func RestoreOver(ctx context.Context, r *Repo, m *Manifest, path string, progress func(Progress)) error {
	info, err := storage.Disks{QemuImg: QemuImg}.Info(ctx, path)
	if err != nil {
		return fmt.Errorf("restore backup %s over %s: %w", m.ID, path, err)
	}
	size := info.VirtualSize
	if size < m.DiskBytes {
		return fmt.Errorf("restore backup %s over %s: the disk holds %d bytes, the backup %d", m.ID, path, size, m.DiskBytes)
	}
	raw := path + ".restoring.raw"
	os.Remove(raw) // one a restore cut short left
	defer os.Remove(raw)
	if err := restoreRaw(ctx, r, m, raw, size, progress); err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, QemuImg, "convert", "-q", "-n", "-f", "raw", "-O", "qcow2", raw, path)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restore backup %s: qemu-img convert over %s: %w: %s", m.ID, path, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// restoreRaw writes the disk of backup m into a new sparse raw file of
// size bytes at raw (see Repo.Restore), which the caller removes.
func restoreRaw(ctx context.Context, r *Repo, m *Manifest, raw string, size int64, progress func(Progress)) error {
	f, err := os.OpenFile(raw, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore backup %s: %w", m.ID, err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = r.Restore(ctx, m, f, progress)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
