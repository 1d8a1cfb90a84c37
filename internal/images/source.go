package images

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// openSource opens the file an import by path names. Symlinks on the way
// are resolved once, here; what the path reaches must be a regular file
// (a device or a FIFO is not an image, and a FIFO would block) outside
// bureau's data directory, which holds desktops' disks and the database.
// The returned file is the one that was checked: it is opened without
// following links and compared with the checked inode.
func (s *Service) openSource(path string) (*os.File, error) {
	bad := func(msg string) error { return &desktop.ValidationError{Field: "path", Message: msg} }
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, bad(err.Error())
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, bad(err.Error())
	}
	if s.DataDir != "" {
		if data, err := filepath.EvalSymlinks(s.DataDir); err == nil && within(real, data) {
			return nil, bad(fmt.Sprintf("%s is inside bureau's data directory %s, which holds desktops' disks and the database", real, data))
		}
	}
	st, err := os.Lstat(real)
	if err != nil {
		return nil, bad(err.Error())
	}
	if !st.Mode().IsRegular() {
		return nil, bad(fmt.Sprintf("%s is a %s, not a regular file", real, fileKind(st.Mode())))
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, bad(err.Error())
	}
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		f.Close()
		return nil, bad(real + " changed while it was being opened")
	}
	return f, nil
}

// within says whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// copyIn copies an import's source into dst, a file only bureau writes:
// the checks and qemu-img then read a copy nobody can change under them.
// All-zero blocks become holes, so a sparse raw disk stays sparse.
func (s *Service) copyIn(ctx context.Context, src *os.File, dst string, progress ProgressFunc) error {
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if err := ensureSpace(s.Dir, st.Size()+(256<<20)); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	sw := &sparseWriter{f: out}
	cw := &countingWriter{w: sw, phase: "copy", total: st.Size(), start: time.Now(), progress: progress}
	in := &ctxReader{ctx: ctx, r: io.NewSectionReader(src, 0, st.Size())}
	if _, err := io.CopyBuffer(cw, in, make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("copy %s: %w", src.Name(), err)
	}
	if err := out.Truncate(sw.n); err != nil {
		return err
	}
	return out.Close()
}

type sparseWriter struct {
	f *os.File
	n int64
}

func (w *sparseWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != 0 {
			n, err := w.f.Write(p)
			w.n += int64(n)
			return n, err
		}
	}
	if _, err := w.f.Seek(int64(len(p)), io.SeekCurrent); err != nil {
		return 0, err
	}
	w.n += int64(len(p))
	return len(p), nil
}

// ctxReader stops a long copy when the import is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
