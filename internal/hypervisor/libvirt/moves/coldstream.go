package moves

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
)

// The three ways CopyFile's bytes go (coldcopy.go). Each runs its
// libvirt calls directly, bounded by runCopy, and removes its partial
// file when it fails.

// localToRemote uploads the local file path into a new volume of dst.
func localToRemote(ctx context.Context, path string, size int64, dst fileEnd, owner pools.Perms, moved func(int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != size {
		return fmt.Errorf("host local: %s changed while being copied", path)
	}
	r := pools.NewSparseReader(ctx, f, 0, size, moved, path)
	err = dst.fill(path, size, owner, func(vol *libvirt.StorageVol) error {
		return dst.p.Upload(vol, 0, size, true, r.Data, r.Hole, r.Skip, r.Failed)
	})
	return blame(err, r.Failed(), dst.host)
}

// blame names the host an error of a transfer came from: not when one of
// its own callbacks failed (this machine's file, ctx, a stall: their
// errors say so), else there.
func blame(err, mine error, there string) error {
	if err == nil || mine != nil {
		return err
	}
	return fmt.Errorf("host %s: %w", there, err)
}

// remoteToLocal downloads path from src into a new local file, written
// where the host sends data and skipped over its holes, then truncated to
// size (the end of a file can be a hole the stream need not send) and
// given owner, and synced: the caller may drop the source next.
func remoteToLocal(ctx context.Context, src fileEnd, path string, size int64, owner pools.Perms, moved func(int64)) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("host local: %s is already there: %w", path, os.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("host local: %w", cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	w := &sparseWriter{ctx: ctx, f: f, size: size, moved: moved, from: src.host}
	if err := src.download(path, w.data, w.hole, w.failed); err != nil {
		return blame(err, w.failed(), src.host)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	if err := f.Chown(owner.UID, owner.GID); err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	if err := f.Chmod(owner.Mode); err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("host local: %w", err)
	}
	return nil
}

// remoteToRemote downloads path from src and uploads it to a new volume
// of dst at once, through a chunkPipe.
func remoteToRemote(ctx context.Context, src, dst fileEnd, path string, size int64, owner pools.Perms, moved func(int64)) error {
	var piped error // the pipe's own failure: the download's, or ctx's
	err := dst.fill(path, size, owner, func(vol *libvirt.StorageVol) error {
		pipe := newChunkPipe(ctx, size, moved)
		down := make(chan error, 1)
		go func() {
			err := blame(src.download(path, pipe.put, pipe.putHole, pipe.written), pipe.written(), src.host)
			pipe.close(err)
			down <- err
		}()
		err := dst.p.Upload(vol, 0, size, true, pipe.take, pipe.next, pipe.skip, pipe.failed)
		// A failed upload ends the download at its next chunk (not waited
		// for: a host that stalled may not send one soon).
		pipe.abandon()
		if err != nil {
			piped = pipe.failed()
			return err
		}
		return <-down // nil: the upload saw the end, which comes after it
	})
	return blame(err, piped, dst.host)
}

// fill creates the volume for path in the remote end's pool, size bytes
// with owner, has send fill it, and checks it has that size. On any
// failure the volume is removed.
//
// libvirt 9.0 writes a sparse upload's hole by seeking past it and
// truncating the file there (its fdstream): a hole in the middle shortens
// the file until the data after it comes, and one at the end leaves it at
// its size if it is sent, which pools.SparseReader and chunkPipe do (libvirt's
// sparse download sends it too; chunkPipe pads a download that does not).
// The size check catches any other end.
func (e fileEnd) fill(path string, size int64, owner pools.Perms, send func(*libvirt.StorageVol) error) (err error) {
	_, name, err := pools.SplitRemote(path)
	if err != nil {
		return err
	}
	pl, err := e.p.Conn().LookupStoragePoolByName(e.pool)
	if err != nil {
		return link.HostErr("storage pool "+e.pool, err)
	}
	defer pl.Free()
	x, err := pools.VolumeXML(name, size, owner)
	if err != nil {
		return err
	}
	vol, err := pl.StorageVolCreateXML(x, 0)
	if link.IsCode(err, libvirt.ERR_STORAGE_VOL_EXIST) {
		return fmt.Errorf("%s is already there: %w", path, os.ErrExist)
	}
	if err != nil {
		return link.HostErr("create "+path, err)
	}
	defer vol.Free()
	defer func() {
		if err != nil {
			if derr := vol.Delete(0); derr != nil {
				err = fmt.Errorf("%w (and the partial %s was not removed: %v)", err, path, link.Message(derr))
			}
		}
	}()
	if size > 0 {
		if err := send(vol); err != nil {
			return err
		}
	}
	info, err := vol.GetInfoFlags(libvirt.STORAGE_VOL_GET_PHYSICAL)
	if err != nil {
		return link.HostErr("size of the copy", err)
	}
	if int64(info.Allocation) != size {
		return fmt.Errorf("the copy of %s has %d bytes, not %d", path, info.Allocation, size)
	}
	return nil
}

// download streams path from the remote end, sparse: data to data, holes
// to hole. failed says why a callback stopped it.
func (e fileEnd) download(path string, data libvirt.StreamSinkFunc, hole libvirt.StreamSinkHoleFunc, failed func() error) error {
	_, err := withVolume(e, path, func(vol *libvirt.StorageVol) (struct{}, error) {
		st, err := e.p.Conn().NewStream(0)
		if err != nil {
			return struct{}{}, link.HostErr("stream", err)
		}
		defer st.Free()
		if err := vol.Download(st, 0, 0, libvirt.STORAGE_VOL_DOWNLOAD_SPARSE_STREAM); err != nil {
			st.Abort()
			return struct{}{}, link.HostErr("download "+path, err)
		}
		if err := st.SparseRecvAll(data, hole); err != nil {
			st.Abort() // a second abort is harmless
			if cause := failed(); cause != nil {
				return struct{}{}, cause
			}
			return struct{}{}, link.HostErr("download "+path, err)
		}
		if err := st.Finish(); err != nil {
			return struct{}{}, link.HostErr("download "+path, err)
		}
		return struct{}{}, nil
	})
	return err
}

// head is the first n bytes of path (fewer if it is shorter).
func (e fileEnd) head(ctx context.Context, path string, n int) ([]byte, error) {
	if e.p == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b := make([]byte, n)
		k, err := io.ReadFull(f, b)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		return b[:k], nil
	}
	return link.Call(ctx, func() ([]byte, error) {
		return withVolume(e, path, func(vol *libvirt.StorageVol) ([]byte, error) { return e.p.Download(vol, n) })
	})
}

// sparseWriter is a download's sink into a local file: data written where
// it goes, holes skipped.
type sparseWriter struct {
	ctx       context.Context
	f         *os.File
	pos, size int64
	moved     func(pos int64)
	from      string // the host sending it
	err       error  // why a callback stopped the download
}

func (w *sparseWriter) fail(err error) error {
	w.err = err
	return err
}

// failed is why a callback stopped the download (nil if none did).
func (w *sparseWriter) failed() error { return w.err }

func (w *sparseWriter) data(_ *libvirt.Stream, b []byte) (int, error) {
	if w.ctx.Err() != nil {
		return 0, w.fail(context.Cause(w.ctx))
	}
	if w.pos+int64(len(b)) > w.size {
		return 0, w.fail(fmt.Errorf("host %s sent more than the file's %d bytes", w.from, w.size))
	}
	n, err := w.f.WriteAt(b, w.pos)
	if err != nil {
		return 0, w.fail(err)
	}
	w.pos += int64(n)
	w.moved(w.pos)
	return n, nil
}

func (w *sparseWriter) hole(_ *libvirt.Stream, n int64) error {
	if w.ctx.Err() != nil {
		return w.fail(context.Cause(w.ctx))
	}
	if n < 0 || w.pos+n > w.size {
		return w.fail(fmt.Errorf("host %s sent a hole of %d bytes at %d, past the file's %d bytes", w.from, n, w.pos, w.size))
	}
	w.pos += n
	w.moved(w.pos)
	return nil
}
