package storage

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
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

// CopySnapshot writes dst as a copy of src as it was at snapshot name. With
// a backing file (the base image src itself is an overlay of) dst is an
// overlay that holds only what differs from it; without, a standalone copy.
// src may be in use by a running VM: a snapshot's data never changes. dst
// must not exist yet.
func (d Disks) CopySnapshot(ctx context.Context, src, name, dst, backing string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s: %w", dst, ErrExists)
	}
	args := []string{"convert", "-U", "-O", "qcow2", "-o", "lazy_refcounts=on", "-l", "snapshot.name=" + name}
	if backing != "" {
		info, err := d.Info(ctx, backing)
		if err != nil {
			return fmt.Errorf("backing image: %w", err)
		}
		args = append(args, "-B", backing, "-F", info.Format)
	}
	if _, err := d.runFor(ctx, 30*time.Minute, append(args, src, dst)...); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// Copy writes dst as a standalone qcow2 copy of src. dst must not exist.
func (d Disks) Copy(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s: %w", dst, ErrExists)
	}
	if _, err := d.runFor(ctx, 30*time.Minute, "convert", "-O", "qcow2", "-o", "lazy_refcounts=on", src, dst); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}
