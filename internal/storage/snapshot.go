package storage

import (
	"context"
	"fmt"
	"strconv"
)

// Snapshot takes an internal snapshot of a disk file that no VM has open.
func (d Disks) Snapshot(ctx context.Context, path, name string) error {
	_, err := d.run(ctx, "snapshot", "-c", name, path)
	return err
}

// RevertSnapshot returns a disk file that no VM has open to a snapshot.
func (d Disks) RevertSnapshot(ctx context.Context, path, name string) error {
	_, err := d.run(ctx, "snapshot", "-a", name, path)
	return err
}

// DeleteSnapshot removes an internal snapshot from a disk file no VM has open.
func (d Disks) DeleteSnapshot(ctx context.Context, path, name string) error {
	_, err := d.run(ctx, "snapshot", "-d", name, path)
	return err
}

// Resize grows a disk file no VM has open to sizeGiB. Shrinking is refused:
// it would cut off the end of a filesystem.
func (d Disks) Resize(ctx context.Context, path string, sizeGiB int) error {
	info, err := d.Info(ctx, path)
	if err != nil {
		return err
	}
	size := int64(sizeGiB) * gib
	if size < info.VirtualSize {
		return fmt.Errorf("%s is %d bytes; shrinking to %d is refused", path, info.VirtualSize, size)
	}
	_, err = d.run(ctx, "resize", "-q", path, strconv.FormatInt(size, 10))
	return err
}
