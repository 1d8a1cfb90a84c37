// Package hostfiles is a desktop's files on bureau's own host: what a
// remote host's storage pools do for desktops there (the manager's
// HostFiles, StoppedDisks and FileSizes), done here with the file system
// and qemu-img, and the few files only bureau's own host keeps (the
// manager's LocalFiles: templates' and spares' records, scratch files).
//
// The methods take a context as the remote side's do; the file system's
// own calls are quick and are not cancelled by it (qemu-img's are).
package hostfiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Disks makes and works on disk files here (storage.Disks: qemu-img).
type Disks interface {
	CreateOverlay(ctx context.Context, base, path string, sizeGiB int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB int) error
	Snapshot(ctx context.Context, path, name string) error
	RevertSnapshot(ctx context.Context, path, name string) error
	DeleteSnapshot(ctx context.Context, path, name string) error
	Resize(ctx context.Context, path string, sizeGiB int) error
}

// Local is bureau's own host's files. A desktop's folder is 0700 and its
// files 0600, owned by the desktop's QEMU user, as a remote host's pool
// makes them.
type Local struct {
	disks Disks
}

// New is bureau's own host's files, its disk files made by disks.
func New(disks Disks) *Local { return &Local{disks: disks} }

// EnsureImage has nothing to copy: base images are on bureau's own host
// already, at path. No progress is reported.
func (l *Local) EnsureImage(context.Context, string, func(context.Context, string) error, func(done, total int64)) error {
	return nil
}

// MakeDir makes dir (and its parents) 0700, owned by uid:gid; an existing
// folder is given that owner and mode.
func (l *Local) MakeDir(_ context.Context, dir string, uid, gid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return own(dir, uid, gid, 0o700)
}

// Exists says whether anything is at path.
func (l *Local) Exists(_ context.Context, path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// CreateOverlay makes path a qcow2 over base (at least sizeGiB), and
// CreateDataDisk an empty qcow2 of sizeGiB, both 0600 uid:gid; neither
// replaces an existing file (storage.ErrExists). A file that cannot be
// given to uid:gid is removed again.
func (l *Local) CreateOverlay(ctx context.Context, base, path string, sizeGiB, uid, gid int) error {
	if err := l.disks.CreateOverlay(ctx, base, path, sizeGiB); err != nil {
		return err
	}
	return ownNew(path, uid, gid)
}

func (l *Local) CreateDataDisk(ctx context.Context, path string, sizeGiB, uid, gid int) error {
	if err := l.disks.CreateDataDisk(ctx, path, sizeGiB); err != nil {
		return err
	}
	return ownNew(path, uid, gid)
}

// Upload copies the file local to path, 0600 uid:gid, replacing any file
// there. The copy is complete before it takes path's place: a failed
// upload leaves what was there.
func (l *Local) Upload(_ context.Context, local, path string, uid, gid int) error {
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".upload"
	if err := copyTo(tmp, src); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("upload %s to %s: %w", filepath.Base(local), path, err)
	}
	if err := own(tmp, uid, gid, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// copyTo writes what src holds to a new file at path.
func copyTo(path string, src io.Reader) error {
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// Remove removes one file or empty folder (none there is fine).
func (l *Local) Remove(_ context.Context, path string) error { return remove(path) }

func remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// RemoveAllBut removes everything in dir but keep ("" for nothing; else a
// path in dir), and dir itself when keep is not there; it says whether
// keep was there. What stays (keep and dir) is given back to root, so no
// QEMU can open a deleted desktop's kept data disk (best effort: the
// folder is 0700 either way). A dir that is not there holds nothing.
func (l *Local) RemoveAllBut(_ context.Context, dir, keep string) (kept bool, err error) {
	if keep != "" && filepath.Dir(filepath.Clean(keep)) != filepath.Clean(dir) {
		return false, fmt.Errorf("keep %s: not in %s", keep, dir)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if keep != "" && p == filepath.Clean(keep) {
			kept = true
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return false, err
		}
	}
	if kept {
		disown(dir)
		return true, nil
	}
	return false, remove(dir)
}

// own gives path to uid:gid with mode.
func own(path string, uid, gid int, mode fs.FileMode) error {
	if err := os.Chown(path, uid, gid); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// ownNew gives a file just made to uid:gid, 0600, or removes it.
func ownNew(path string, uid, gid int) error {
	if err := own(path, uid, gid, 0o600); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// disown gives dir and everything in it to root. Best effort.
func disown(dir string) {
	filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err == nil {
			os.Lchown(path, 0, 0)
		}
		return nil
	})
}
