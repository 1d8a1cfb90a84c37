package manager

import (
	"context"

	"github.com/bureau/bureau/internal/desktop"
)

// StoppedDisks works on the disk files of a desktop whose VM is off: their
// internal snapshots and their size. On bureau's own host qemu-img does it
// (hostfiles.Local over Disks); on a remote host, that host's libvirtd
// (Site.Disks).
type StoppedDisks interface {
	Snapshot(ctx context.Context, path, name string) error
	RevertSnapshot(ctx context.Context, path, name string) error
	// DeleteSnapshot of a snapshot the file does not hold may succeed or
	// fail with desktop.ErrNoSnapshot.
	DeleteSnapshot(ctx context.Context, path, name string) error
	Resize(ctx context.Context, path string, sizeGiB int) error
}

// FileSizes measures a desktop's files on its host.
type FileSizes interface {
	// Allocated is the bytes the file at path takes on the host's disk
	// (0 when it is not there).
	Allocated(ctx context.Context, path string) (int64, error)
}

// stoppedDisks is what works on d's disk files while its VM is off, on
// whichever host they are.
func (h *desktopHosts) stoppedDisks(ctx context.Context, d *desktop.Desktop) (StoppedDisks, error) {
	files, err := h.filesOf(ctx, d)
	if err != nil {
		return nil, err
	}
	if files.Disks == nil {
		return nil, localOnly(d, "work on its disks while it is stopped")
	}
	return files.Disks, nil
}
