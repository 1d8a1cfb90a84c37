package pools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"golang.org/x/sys/unix"
	"libvirt.org/go/libvirt"
)

// Download reads the first n bytes of vol.
func (p Host) Download(vol *libvirt.StorageVol, n int) ([]byte, error) {
	var b bytes.Buffer
	if err := p.downloadTo(vol, int64(n), &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// downloadTo writes the first n bytes of vol to w, through one stream.
func (p Host) downloadTo(vol *libvirt.StorageVol, n int64, w io.Writer) error {
	st, err := p.conn.NewStream(0)
	if err != nil {
		return link.HostErr("stream", err)
	}
	defer st.Free()
	if err := vol.Download(st, 0, uint64(n), 0); err != nil {
		st.Abort()
		return link.HostErr("download", err)
	}
	buf := make([]byte, min(n+1, 1<<20)) // one more: the host sends no more than n
	var got int64
	for {
		k, err := st.Recv(buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			st.Abort()
			return link.HostErr("download", err)
		}
		if got += int64(k); got > n {
			st.Abort()
			return fmt.Errorf("download: the host sent more than the %d bytes asked for", n)
		}
		w.Write(buf[:k]) // a bytes.Buffer or a hash: never fails
	}
	if err := st.Finish(); err != nil {
		return link.HostErr("download", err)
	}
	return nil
}

// Upload sends length bytes at offset of vol through one stream; failed
// tells why a callback stopped it.
func (p Host) Upload(vol *libvirt.StorageVol, offset, length int64, sparse bool,
	data libvirt.StreamSourceFunc, hole libvirt.StreamSourceHoleFunc, skip libvirt.StreamSourceSkipFunc, failed func() error) error {
	st, err := p.conn.NewStream(0)
	if err != nil {
		return link.HostErr("stream", err)
	}
	defer st.Free()
	var flags libvirt.StorageVolUploadFlags
	if sparse {
		flags = libvirt.STORAGE_VOL_UPLOAD_SPARSE_STREAM
	}
	if err := vol.Upload(st, uint64(offset), uint64(length), flags); err != nil {
		st.Abort()
		return link.HostErr("upload", err)
	}
	if sparse {
		err = st.SparseSendAll(data, hole, skip)
	} else {
		err = st.SendAll(data)
	}
	if err != nil {
		// SendAll aborted the stream if a callback failed, not always
		// when sending did; a second abort is harmless.
		st.Abort()
		if cause := failed(); cause != nil {
			return cause
		}
		return link.HostErr("upload", err)
	}
	if err := st.Finish(); err != nil {
		return link.HostErr("upload", err)
	}
	return nil
}

// SparseReader feeds an upload from a local file's [pos, end): for a
// sparse one, holes found with SEEK_DATA/SEEK_HOLE go as holes, the rest
// as data; for a plain one (data only), everything as data.
type SparseReader struct {
	ctx      context.Context
	f        *os.File
	pos, end int64
	buf      []byte
	moved    func(pos int64)
	err      error  // why a callback stopped the upload
	what     string // names the file in errors ("image" if "")
}

// NewSparseReader feeds an upload from f's [pos, end), telling moved how
// far it got; what names the file in errors ("image" if "").
func NewSparseReader(ctx context.Context, f *os.File, pos, end int64, moved func(pos int64), what string) *SparseReader {
	return &SparseReader{ctx: ctx, f: f, pos: pos, end: end, moved: moved, what: what}
}

// errorf is an error about the file being read.
func (r *SparseReader) errorf(format string, args ...any) error {
	what := r.what
	if what == "" {
		what = "image"
	}
	return r.fail(fmt.Errorf("%s: %w", what, fmt.Errorf(format, args...)))
}

func (r *SparseReader) fail(err error) error {
	r.err = err
	return err
}

// Failed is why a callback stopped the upload (nil if none did).
func (r *SparseReader) Failed() error { return r.err }

// Hole says whether the next section is data, and its length (data of
// length 0 at the end).
func (r *SparseReader) Hole(*libvirt.Stream) (bool, int64, error) {
	if r.ctx.Err() != nil {
		return false, 0, r.fail(context.Cause(r.ctx))
	}
	if r.pos >= r.end {
		return true, 0, nil
	}
	data, err := r.f.Seek(r.pos, unix.SEEK_DATA)
	if errors.Is(err, syscall.ENXIO) { // a hole to the end of the file
		if st, err := r.f.Stat(); err != nil || st.Size() < r.end {
			return false, 0, r.errorf("the file got shorter while being copied")
		}
		return false, r.end - r.pos, nil
	}
	if err != nil {
		return false, 0, r.errorf("%w", err)
	}
	if data > r.pos {
		return false, min(data, r.end) - r.pos, nil
	}
	h, err := r.f.Seek(r.pos, unix.SEEK_HOLE)
	if err != nil {
		return false, 0, r.errorf("%w", err)
	}
	return true, min(h, r.end) - r.pos, nil
}

// Skip passes a hole.
func (r *SparseReader) Skip(_ *libvirt.Stream, n int64) error {
	if n < 0 || r.pos+n > r.end {
		return r.errorf("hole of %d bytes at %d past the end %d", n, r.pos, r.end)
	}
	r.pos += n
	r.moved(r.pos)
	return nil
}

// Data reads the next n bytes (n is within the data section hole found).
func (r *SparseReader) Data(_ *libvirt.Stream, n int) ([]byte, error) {
	if r.ctx.Err() != nil {
		return nil, r.fail(context.Cause(r.ctx))
	}
	n = int(min(int64(n), r.end-r.pos))
	if n <= 0 {
		return nil, nil
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	k, err := r.f.ReadAt(r.buf[:n], r.pos)
	if k < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("the file got shorter while being copied")
		}
		return nil, r.errorf("%w", err)
	}
	r.pos += int64(k)
	r.moved(r.pos)
	return r.buf[:k], nil
}
