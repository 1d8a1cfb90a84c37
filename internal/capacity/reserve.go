package capacity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Reserve is a file of allocated blocks kept in the data directory so that
// bureau can still write its own state (the SQLite database, which lives
// there by default) when desktops' disks have filled the file system:
// released on the first write that fails for space, made again once there
// is room.
type Reserve struct {
	Path string
	Size int64
}

// Ensure makes the reserve when it is missing and the file system has room
// for it beyond the disk reserve new desktops keep free.
func (r Reserve) Ensure() error {
	if _, err := os.Stat(r.Path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	free, err := freeMiB(filepath.Dir(r.Path))
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	if int64(free)<<20 < r.Size+DiskReserveMiB<<20 {
		return nil // not yet: the disk is still (nearly) full
	}
	tmp := r.Path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, r.Size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("reserve %d bytes in %s: %w", r.Size, r.Path, err)
	}
	return os.Rename(tmp, r.Path)
}

// Release frees the reserve's space and says whether there was any.
func (r Reserve) Release() (bool, error) {
	err := os.Remove(r.Path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
