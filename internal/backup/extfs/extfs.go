// Package extfs reads the ext file system of a raw disk image without
// mounting it: e2fsprogs' debugfs, read-only, at the byte offset of the
// image's first partition (MBR or GPT) or at 0 when it has no table.
package extfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound: the file system holds no such path.
var ErrNotFound = errors.New("no such file in the file system")

// ErrBadPath: a path extfs refuses (not absolute, a "..", a control
// character or a double quote).
var ErrBadPath = errors.New("path refused")

// Types of Entry.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// Entry is a file, folder, link or other thing in the file system.
type Entry struct {
	Name       string
	Type       string
	Size       int64
	Mode       fs.FileMode // permission bits (and setuid, setgid, sticky)
	ModTime    time.Time
	LinkTarget string // symlinks only

	inode uint64
}

// FS is an ext file system in a raw disk image.
type FS struct {
	image  string
	offset int64
	// debugfs is the program run ("debugfs" from PATH unless set).
	debugfs string
	// tmp is where Tar dumps folders ("" = the system's temp dir).
	tmp string
}

// Open finds the file system in the raw disk image at image; tmp is where
// Tar dumps folders ("" = the system's temp dir).
func Open(ctx context.Context, image, tmp string) (*FS, error) {
	off, err := locate(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", image, err)
	}
	prog, err := exec.LookPath("debugfs")
	if err != nil {
		return nil, fmt.Errorf("reading a backup's files needs e2fsprogs' debugfs: %w", err)
	}
	return &FS{image: image, offset: off, debugfs: prog, tmp: tmp}, nil
}

// Offset is the byte offset of the file system in the image.
func (f *FS) Offset() int64 { return f.offset }

// CheckPath refuses what extfs does not pass to debugfs.
func CheckPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not absolute: %w", p, ErrBadPath)
	case strings.ContainsRune(p, '"'):
		return fmt.Errorf("%q holds a double quote: %w", p, ErrBadPath)
	case len(p) > 4096:
		return fmt.Errorf("path longer than 4096 bytes: %w", ErrBadPath)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q holds a control character: %w", p, ErrBadPath)
		}
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q holds ..: %w", p, ErrBadPath)
		}
	}
	return nil
}

// quote makes a checked path one debugfs argument.
func quote(p string) string { return `"` + p + `"` }

// source is debugfs's name for the file system: the image at its offset.
func (f *FS) source() string { return f.image + "?offset=" + strconv.FormatInt(f.offset, 10) }

// run runs debugfs with one request, stdout to out; it returns stderr
// without debugfs's banner.
func (f *FS) run(ctx context.Context, request string, out io.Writer) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, f.debugfs, "-R", request, f.source())
	cmd.Stdout = out
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := trimBanner(stderr.String())
	if err != nil {
		return msg, fmt.Errorf("debugfs %s: %w: %s", request, err, msg)
	}
	return msg, nil
}

// runFile runs debugfs on a command file (many requests in one process).
func (f *FS) runFile(ctx context.Context, cmds string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, f.debugfs, "-f", "-", f.source())
	cmd.Stdin = strings.NewReader(cmds)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("debugfs: %w: %s", err, trimBanner(stderr.String()))
	}
	return stdout.String(), nil
}

func trimBanner(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "debugfs ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "; ")
}

// failed turns what debugfs said on stderr into an error (nil: none).
func failed(p, stderr string) error {
	switch {
	case stderr == "":
		return nil
	case strings.Contains(stderr, "File not found"):
		return fmt.Errorf("%s: %w", p, ErrNotFound)
	}
	return fmt.Errorf("%s: debugfs: %s", p, stderr)
}

// Stat describes p (a symlink itself, not what it points to).
func (f *FS) Stat(ctx context.Context, p string) (*Entry, error) {
	if err := CheckPath(p); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	stderr, err := f.run(ctx, "stat "+quote(p), &out)
	if err != nil {
		return nil, err
	}
	if err := failed(p, stderr); err != nil {
		return nil, err
	}
	e, err := parseStat(out.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	e.Name = path.Base(p)
	if err := f.slowLink(ctx, e); err != nil {
		return nil, err
	}
	return e, nil
}

// slowLink reads the target of a symlink too long to be kept in its inode.
func (f *FS) slowLink(ctx context.Context, e *Entry) error {
	if e.Type != TypeSymlink || e.LinkTarget != "" || e.Size == 0 {
		return nil
	}
	var out bytes.Buffer
	if _, err := f.run(ctx, fmt.Sprintf("cat <%d>", e.inode), &out); err != nil {
		return err
	}
	e.LinkTarget = out.String()
	return nil
}

// Read writes the bytes of the regular file p to w.
func (f *FS) Read(ctx context.Context, p string, w io.Writer) error {
	e, err := f.Stat(ctx, p)
	if err != nil {
		return err
	}
	if e.Type != TypeFile {
		return fmt.Errorf("%s is a %s, not a file: %w", p, e.Type, ErrBadPath)
	}
	cw := &countWriter{w: w}
	stderr, err := f.run(ctx, fmt.Sprintf("cat <%d>", e.inode), cw)
	if err != nil {
		return err
	}
	if err := failed(p, stderr); err != nil {
		return err
	}
	if cw.n != e.Size {
		return fmt.Errorf("%s: read %d bytes of %d", p, cw.n, e.Size)
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
