package hostfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// What follows only bureau's own host keeps: templates' and spares'
// records, a warm create's SSH keys, a spare's seed kept in place, scratch
// files. Folders and files made here are root's (bureau's).

// MkdirAll makes dir and its parents with mode (an existing folder is
// kept as it is).
func (l *Local) MkdirAll(_ context.Context, dir string, mode fs.FileMode) error {
	return os.MkdirAll(dir, mode)
}

// ReadDir lists the names in dir, in order (none when dir is not there).
func (l *Local) ReadDir(_ context.Context, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// ReadFile reads a small file whole.
func (l *Local) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(path)
}

// WriteFile writes a small file whole, made with mode if it is new.
func (l *Local) WriteFile(_ context.Context, path string, b []byte, mode fs.FileMode) error {
	return os.WriteFile(path, b, mode)
}

// Rename moves from to to, replacing what is there, at once.
func (l *Local) Rename(_ context.Context, from, to string) error {
	return os.Rename(from, to)
}

// Chmod sets path's mode.
func (l *Local) Chmod(_ context.Context, path string, mode fs.FileMode) error {
	return os.Chmod(path, mode)
}

// Disown gives dir and everything in it to root. Best effort.
func (l *Local) Disown(_ context.Context, dir string) { disown(dir) }

// Grow appends n zero bytes to the file at path (sparse: they take no
// space).
func (l *Local) Grow(_ context.Context, path string, n int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, st.Size()+n)
}

// Overwrite writes b over the start of the file at path, in place (a
// process that has it open keeps reading it), and zeroes the rest; the
// file keeps its size, so b must fit in it.
func (l *Local) Overwrite(_ context.Context, path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if int64(len(b)) > st.Size() {
		return fmt.Errorf("%d bytes are larger than %s (%d)", len(b), path, st.Size())
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if _, err := f.WriteAt(make([]byte, st.Size()-int64(len(b))), int64(len(b))); err != nil {
		return err
	}
	return f.Close()
}

// TempFile makes an empty file of its own in the system's temporary
// folder, its name from pattern as os.CreateTemp makes it; the caller
// removes it.
func (l *Local) TempFile(_ context.Context, pattern string) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
