package extfs

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// TarCount is what a tar holds.
type TarCount struct {
	Files int   // regular files
	Bytes int64 // their bytes
}

// Tar writes the folder dir as an uncompressed tar to w: members relative
// to it, modes and times kept, symlinks as symlinks, other things (devices,
// sockets, fifos) left out. debugfs dumps the folder into a scratch folder
// first (removed after).
func (f *FS) Tar(ctx context.Context, dir string, w io.Writer) (TarCount, error) {
	d, err := f.Stat(ctx, dir)
	if err != nil {
		return TarCount{}, err
	}
	if d.Type != TypeDir {
		return TarCount{}, fmt.Errorf("%s is a %s, not a folder: %w", dir, d.Type, ErrBadPath)
	}
	scratch, err := os.MkdirTemp(f.tmp, "extfs-dump-")
	if err != nil {
		return TarCount{}, fmt.Errorf("scratch folder: %w", err)
	}
	defer os.RemoveAll(scratch)
	stderr, err := f.run(ctx, fmt.Sprintf("rdump %s %s", quote(dir), quote(scratch)), io.Discard)
	if err != nil {
		return TarCount{}, err
	}
	if err := failed(dir, stderr); err != nil {
		return TarCount{}, err
	}
	root := scratch
	if dir != "/" {
		root = filepath.Join(scratch, path.Base(dir))
	}
	return writeTar(ctx, root, w)
}

// writeTar writes what root holds as a tar, members relative to it.
func writeTar(ctx context.Context, root string, w io.Writer) (TarCount, error) {
	var n TarCount
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular(), info.IsDir():
		default:
			return nil
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		file, err := os.Open(p)
		if err != nil {
			return err
		}
		defer file.Close()
		c, err := io.Copy(tw, file)
		n.Files++
		n.Bytes += c
		return err
	})
	if err != nil {
		return n, fmt.Errorf("tar %s: %w", root, err)
	}
	if err := tw.Close(); err != nil {
		return n, fmt.Errorf("tar %s: %w", root, err)
	}
	return n, nil
}
