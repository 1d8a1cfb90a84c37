package hostfiles

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// Snapshot, RevertSnapshot, DeleteSnapshot and Resize work on the disk
// files of a desktop whose VM is off, with qemu-img (Disks).
func (l *Local) Snapshot(ctx context.Context, path, name string) error {
	return l.disks.Snapshot(ctx, path, name)
}

func (l *Local) RevertSnapshot(ctx context.Context, path, name string) error {
	return l.disks.RevertSnapshot(ctx, path, name)
}

func (l *Local) DeleteSnapshot(ctx context.Context, path, name string) error {
	return l.disks.DeleteSnapshot(ctx, path, name)
}

func (l *Local) Resize(ctx context.Context, path string, sizeGiB int) error {
	return l.disks.Resize(ctx, path, sizeGiB)
}

// Allocated is the bytes the file at path takes on disk, not its apparent
// size (0 when it is not there).
func (l *Local) Allocated(_ context.Context, path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return blocks(fi), nil
}
