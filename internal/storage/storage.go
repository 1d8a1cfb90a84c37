// Package storage makes and inspects a desktop's disk files with qemu-img:
// the copy-on-write OS overlay over a shared base image and the separate,
// persistent data disk.
package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Disks runs qemu-img. The zero value uses qemu-img from PATH.
type Disks struct {
	QemuImg string
}

// ErrExists means a disk file is already there and was left untouched.
var ErrExists = errors.New("disk file already exists")

// Info describes a disk file.
type Info struct {
	Format      string `json:"format"`
	VirtualSize int64  `json:"virtual-size"`
	ActualSize  int64  `json:"actual-size"`
	BackingFile string `json:"backing-filename"`
}

const gib = int64(1) << 30

// CreateOverlay makes path a qcow2 overlay over base, at least sizeGiB large
// (the guest grows its root filesystem into the extra space).
func (d Disks) CreateOverlay(ctx context.Context, base, path string, sizeGiB int) error {
	info, err := d.Info(ctx, base)
	if err != nil {
		return fmt.Errorf("base image: %w", err)
	}
	size := max(info.VirtualSize, int64(sizeGiB)*gib)
	return d.create(ctx, path, "-b", base, "-F", info.Format, path, strconv.FormatInt(size, 10))
}

// CreateDataDisk makes an empty qcow2 of sizeGiB at path. It never replaces an
// existing file: that would destroy a user's data.
func (d Disks) CreateDataDisk(ctx context.Context, path string, sizeGiB int) error {
	return d.create(ctx, path, path, fmt.Sprintf("%dG", sizeGiB))
}

func (d Disks) create(ctx context.Context, path string, args ...string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	args = append([]string{"create", "-q", "-f", "qcow2", "-o", "lazy_refcounts=on"}, args...)
	if _, err := d.run(ctx, args...); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// Info reads a disk file's format and sizes.
func (d Disks) Info(ctx context.Context, path string) (*Info, error) {
	out, err := d.run(ctx, "info", "--output=json", "-U", path)
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("qemu-img info %s: %w", path, err)
	}
	return &info, nil
}

// Check verifies a qcow2 file's consistency.
func (d Disks) Check(ctx context.Context, path string) error {
	_, err := d.run(ctx, "check", "-q", "-U", path)
	return err
}

func (d Disks) run(ctx context.Context, args ...string) ([]byte, error) {
	return d.runFor(ctx, 2*time.Minute, args...)
}

// runFor runs qemu-img with a deadline of at most limit.
func (d Disks) runFor(ctx context.Context, limit time.Duration, args ...string) ([]byte, error) {
	bin := d.QemuImg
	if bin == "" {
		bin = "qemu-img"
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		return nil, fmt.Errorf("qemu-img %s: %w: %s", args[0], errors.Join(err, classify(msg)), msg)
	}
	return out, nil
}

// classify turns what qemu-img printed into a typed error callers can test
// with errors.Is (nil when nothing is recognised): qemu-img has no exit
// codes for these, so its messages are read here, in one place.
func classify(stderr []byte) error {
	switch {
	case bytes.Contains(stderr, []byte("No space left on device")):
		return syscall.ENOSPC
	case bytes.Contains(stderr, []byte("snapshot not found")), bytes.Contains(stderr, []byte("Can't find the snapshot")),
		bytes.Contains(stderr, []byte("Could not find snapshot")):
		return desktop.ErrNoSnapshot
	}
	return nil
}
