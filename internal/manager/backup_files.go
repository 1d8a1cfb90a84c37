package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/backup/extfs"
	"github.com/bureau/bureau/internal/desktop"
)

// How long an opened backup is kept after its last use, and how many are
// open at once.
const (
	backupFilesKeep = 10 * time.Minute
	backupFilesMax  = 2
)

// HomeRoot is where a desktop mounts its data disk: the root of the file
// system a backup holds.
const HomeRoot = "/home"

// BackupFile is a file, folder, link or other thing in a backup.
type BackupFile = extfs.Entry

// BackupFiles reads the files of backups without restoring them: a
// backup's disk is opened once into a cache of sparse files and read with
// extfs (debugfs), however many ask.
type BackupFiles struct {
	b     *Backups
	cache *extfs.Cache
}

// Files is what reads backups' files.
func (b *Backups) Files() *BackupFiles { return b.files }

// newBackupFiles reads b's backups, opening them in dir ("" = the
// system's temp dir, until setDir is called).
func newBackupFiles(b *Backups, dir string) *BackupFiles {
	return &BackupFiles{b: b, cache: extfs.NewCache(dir, backupFilesKeep, backupFilesMax, b.log)}
}

// setDir sets where opened backups are written: the data directory's
// backup-files (Backups.settle clears it when bureau starts).
func (f *BackupFiles) setDir(dataDir string) {
	if dataDir != "" {
		f.cache = extfs.NewCache(filepath.Join(dataDir, "backup-files"), backupFilesKeep, backupFilesMax, f.b.log)
	}
}

// fillDisk writes backup id's disk into the cache's sparse raw file.
func (f *BackupFiles) fillDisk(id string) func(ctx context.Context, disk extfs.Disk) error {
	b := f.b
	return func(ctx context.Context, disk extfs.Disk) error {
		bk, t, repo, m, err := b.openBackup(ctx, id, "opened")
		if errors.Is(err, backup.ErrNotFound) {
			return &desktop.ConflictError{Message: fmt.Sprintf("backup %s is no longer in target %s (its manifest is gone)", bk.ID, t.Name)}
		}
		if err != nil {
			return err
		}
		release, err := b.moveData(ctx, t.ID)
		if err != nil {
			return err
		}
		defer release()
		begun := time.Now()
		err = disk.Truncate(m.DiskBytes)
		if err == nil {
			err = repo.Restore(ctx, m, disk, nil)
		}
		if err != nil {
			return fmt.Errorf("open backup %s: %w", bk.ID, err)
		}
		b.log.Info("backup opened to read its files", "backup", bk.ID, "bytes", m.DiskBytes, "took", time.Since(begun).Round(time.Millisecond))
		return nil
	}
}

// withFiles runs fn on backup id's file system, opened (or kept open) for
// the call; p (a path of the desktop, under /home) becomes the file
// system's path, and its errors name p again.
func (f *BackupFiles) withFiles(ctx context.Context, id, p string, fn func(fsys *extfs.FS, inFS string) error) error {
	inFS, err := FSPath(p)
	if err != nil {
		return err
	}
	if err := f.b.on(); err != nil {
		return err
	}
	fsys, release, err := f.cache.Acquire(ctx, id, f.fillDisk(id))
	if err != nil {
		return err
	}
	defer release()
	err = fn(fsys, inFS)
	switch {
	case errors.Is(err, extfs.ErrNotFound):
		return fmt.Errorf("backup %s holds no %s: %w", id, p, desktop.ErrNotFound)
	case errors.Is(err, extfs.ErrBadPath):
		return &desktop.ValidationError{Field: "path", Message: strings.ReplaceAll(err.Error(), inFS, p)}
	}
	return err
}

// FSPath turns a path of the desktop (absolute, under /home) into the
// path in its data disk's file system.
func FSPath(p string) (string, error) {
	if p != HomeRoot && !strings.HasPrefix(p, HomeRoot+"/") {
		return "", &desktop.ValidationError{Field: "path", Message: fmt.Sprintf("%q is not under %s", p, HomeRoot)}
	}
	inFS := "/" + strings.TrimPrefix(strings.TrimPrefix(p, HomeRoot), "/")
	if err := extfs.CheckPath(inFS); err != nil {
		return "", &desktop.ValidationError{Field: "path", Message: err.Error()}
	}
	return path.Clean(inFS), nil
}

// FileStat describes path p (a symlink itself) in backup id.
func (f *BackupFiles) FileStat(ctx context.Context, id, p string) (*BackupFile, error) {
	var e *extfs.Entry
	err := f.withFiles(ctx, id, p, func(fsys *extfs.FS, inFS string) error {
		var err error
		e, err = fsys.Stat(ctx, inFS)
		return err
	})
	return e, err
}

// FileList lists folder p of backup id, sorted by name: the first limit
// and whether more were left out.
func (f *BackupFiles) FileList(ctx context.Context, id, p string, limit int) ([]BackupFile, bool, error) {
	var list []extfs.Entry
	var truncated bool
	err := f.withFiles(ctx, id, p, func(fsys *extfs.FS, inFS string) error {
		var err error
		list, truncated, err = fsys.List(ctx, inFS, limit)
		return err
	})
	return list, truncated, err
}

// FileRead writes file p of backup id to w.
func (f *BackupFiles) FileRead(ctx context.Context, id, p string, w io.Writer) error {
	return f.withFiles(ctx, id, p, func(fsys *extfs.FS, inFS string) error {
		return fsys.Read(ctx, inFS, w)
	})
}

// FileTar writes folder p of backup id to w as a tar of what it holds.
func (f *BackupFiles) FileTar(ctx context.Context, id, p string, w io.Writer) (extfs.TarCount, error) {
	var n extfs.TarCount
	err := f.withFiles(ctx, id, p, func(fsys *extfs.FS, inFS string) error {
		var err error
		n, err = fsys.Tar(ctx, inFS, w)
		return err
	})
	return n, err
}

// FilesRestored records on a desktop that files of a backup were put
// back into it.
type FilesRestored struct {
	BackupID  string
	DesktopID string
	Path, To  string
	Files     int
	Bytes     int64
	Actor     string
}

// NoteFilesRestored records the desktop's backup_files_restored event.
func (f *BackupFiles) NoteFilesRestored(ctx context.Context, r FilesRestored) {
	f.b.ops.event(ctx, r.DesktopID, "backup_files_restored", r.Actor, "%s from backup %s restored to %s (%d files, %d bytes)",
		r.Path, r.BackupID, r.To, r.Files, r.Bytes)
}
