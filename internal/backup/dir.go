package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// dirTarget is a Target in a local directory (a local disk or a mounted
// share): one file per object.
type dirTarget struct {
	root string
}

// NewDir returns a Target storing objects as files under path, which is
// created (0700) when missing.
func NewDir(path string) (Target, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("backup directory %q: not an absolute path", path)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("backup directory %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("backup directory %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("backup directory %s: not a directory", path)
	}
	return &dirTarget{root: filepath.Clean(path)}, nil
}

func (d *dirTarget) String() string { return "directory " + d.root }

// file returns the file of key, refusing keys that would leave the root.
func (d *dirTarget) file(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("%v in %s", err, d.root)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes data to a temporary file beside the object's, fsyncs it,
// renames it into place and fsyncs the directory.
func (d *dirTarget) Put(ctx context.Context, key string, data []byte) error {
	name, err := d.file(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s in %s: %w", key, d.root, err)
	}
	if err := d.mkdirs(filepath.Dir(name)); err != nil {
		return fmt.Errorf("put %s in %s: %w", key, d.root, err)
	}
	if err := writeAtomic(name, data); err != nil {
		return fmt.Errorf("put %s in %s: %w", key, d.root, err)
	}
	return nil
}

// mkdirs creates dir and its missing parents below the root, syncing the
// parent of each one it creates.
func (d *dirTarget) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if dir != d.root {
		if err := d.mkdirs(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func writeAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-"+filepath.Base(name)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(name))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Get reads the object's file.
func (d *dirTarget) Get(ctx context.Context, key string) ([]byte, error) {
	name, err := d.file(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", key, d.root, err)
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s in %s: %w", key, d.root, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", key, d.root, err)
	}
	return b, nil
}

// Exists reports whether the object's file is there.
func (d *dirTarget) Exists(ctx context.Context, key string) (bool, error) {
	name, err := d.file(key)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("stat %s in %s: %w", key, d.root, err)
	}
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("stat %s in %s: %w", key, d.root, err)
	}
	return fi.Mode().IsRegular(), nil
}

// List walks the directory of prefix and returns the keys of the regular
// files that start with prefix; temporary files are left out.
func (d *dirTarget) List(ctx context.Context, prefix string) ([]string, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%v in %s", err, d.root)
	}
	start := "."
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = prefix[:i]
	}
	var keys []string
	err := filepath.WalkDir(filepath.Join(d.root, filepath.FromSlash(start)), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %q in %s: %w", prefix, d.root, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes the object's file; a missing one is not an error.
func (d *dirTarget) Delete(ctx context.Context, key string) error {
	name, err := d.file(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s from %s: %w", key, d.root, err)
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s from %s: %w", key, d.root, err)
	}
	return nil
}
