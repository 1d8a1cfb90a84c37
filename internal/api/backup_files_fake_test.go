package api

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/backup/extfs"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

// fakeBackupTree is what every complete backup of the fake holds.
var fakeBackupTree = map[string]manager.BackupFile{
	"/home":                  {Type: extfs.TypeDir, Size: 4096, Mode: 0o755},
	"/home/agent":            {Type: extfs.TypeDir, Size: 4096, Mode: 0o750},
	"/home/agent/notes.txt":  {Type: extfs.TypeFile, Size: 12, Mode: 0o644},
	"/home/agent/latest":     {Type: extfs.TypeSymlink, Size: 9, Mode: 0o777, LinkTarget: "notes.txt"},
	"/home/agent/fifo":       {Type: extfs.TypeOther, Mode: 0o600},
	"/home/agent/src":        {Type: extfs.TypeDir, Size: 4096, Mode: 0o755},
	"/home/agent/src/a.go":   {Type: extfs.TypeFile, Size: 10, Mode: 0o600},
	"/home/agent/src/b c.md": {Type: extfs.TypeFile, Size: 3, Mode: 0o644},
}

var fakeBackupData = map[string]string{
	"/home/agent/notes.txt":  "hello notes\n",
	"/home/agent/src/a.go":   "package a\n",
	"/home/agent/src/b c.md": "# b",
}

var fakeBackupTime = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// openFiles is what opening a backup checks: it exists and is complete.
func (f *fakeBackups) openFiles(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.get(id)
	if err != nil {
		return err
	}
	if b.State != desktop.BackupComplete {
		return &desktop.ConflictError{Message: fmt.Sprintf("backup %s is %s: only a complete backup can be opened", id, b.State)}
	}
	f.filesOpened++
	return nil
}

func (f *fakeBackups) FileStat(_ context.Context, id, p string) (*manager.BackupFile, error) {
	if err := f.openFiles(id); err != nil {
		return nil, err
	}
	e, ok := fakeBackupTree[p]
	if !ok {
		return nil, fmt.Errorf("backup %s holds no %s: %w", id, p, desktop.ErrNotFound)
	}
	e.Name, e.ModTime = path.Base(p), fakeBackupTime
	return &e, nil
}

func (f *fakeBackups) FileList(ctx context.Context, id, p string, limit int) ([]manager.BackupFile, bool, error) {
	if _, err := f.FileStat(ctx, id, p); err != nil {
		return nil, false, err
	}
	var list []manager.BackupFile
	for q, e := range fakeBackupTree {
		if path.Dir(q) == p && q != p {
			e.Name, e.ModTime = path.Base(q), fakeBackupTime
			list = append(list, e)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	truncated := len(list) > limit
	if truncated {
		list = list[:limit]
	}
	return list, truncated, nil
}

func (f *fakeBackups) FileRead(ctx context.Context, id, p string, w io.Writer) error {
	if _, err := f.FileStat(ctx, id, p); err != nil {
		return err
	}
	_, err := io.WriteString(w, fakeBackupData[p])
	return err
}

func (f *fakeBackups) FileTar(ctx context.Context, id, p string, w io.Writer) (extfs.TarCount, error) {
	if _, err := f.FileStat(ctx, id, p); err != nil {
		return extfs.TarCount{}, err
	}
	var names []string
	for q := range fakeBackupTree {
		if strings.HasPrefix(q, p+"/") {
			names = append(names, q)
		}
	}
	sort.Strings(names)
	var n extfs.TarCount
	tw := tar.NewWriter(w)
	for _, q := range names {
		e := fakeBackupTree[q]
		h := &tar.Header{Name: strings.TrimPrefix(q, p+"/"), Mode: int64(e.Mode & fs.ModePerm), ModTime: fakeBackupTime}
		switch e.Type {
		case extfs.TypeDir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case extfs.TypeSymlink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.LinkTarget
		case extfs.TypeFile:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(fakeBackupData[q]))
		default:
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return n, err
		}
		if e.Type == extfs.TypeFile {
			io.WriteString(tw, fakeBackupData[q])
			n.Files++
			n.Bytes += h.Size
		}
	}
	return n, tw.Close()
}

func (f *fakeBackups) NoteFilesRestored(_ context.Context, r manager.FilesRestored) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filesRestored = append(f.filesRestored, r)
}
