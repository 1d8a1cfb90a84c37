package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"libvirt.org/go/libvirt"
)

// Base images reach a host through libvirt's storage-pool API
// (docs/research/multi-host.md §4; pool.go): a dir pool whose target is
// the image's folder, a raw volume of the file's size, and an upload
// stream.
//
// libvirt cannot rename a volume, so the copy is never made under another
// name: the volume is created under its final name, the body (everything
// after the first headerLen bytes) is uploaded first with a sparse stream,
// and the header last, in a second stream, once the body is on the host.
// Until then the file's first bytes are zeros (libvirt creates the volume
// as a sparse file): neither a qcow2 image for QEMU nor a match for
// ImageOnHost's header check, so a copy cut short never looks complete.
// Uploading to a temporary volume and copying it with
// StorageVolCreateXMLFrom would write every byte twice on the host (and
// for a volume libvirt probes as qcow2 it runs qemu-img convert, which
// rewrites the image rather than copying its bytes); that copy would not
// be atomic either.

// CopyProgress is what copying one image to a host reports as it goes:
// done of total bytes (the local file's size; holes count as copied).
type CopyProgress func(done, total int64)

const (
	// headerLen is the part of an image uploaded last and compared by
	// ImageOnHost (a qcow2 header and its extensions).
	headerLen = 4096
	// progressEvery spaces progress reports.
	progressEvery = 250 * time.Millisecond
	// abortGrace is how long a cancelled copy waits for the host to
	// answer the abort before CopyImage returns (libvirt's keepalive, 5 s
	// × 3, ends a call to a host that does not answer).
	abortGrace = 20 * time.Second
)

// copyStall ends a copy that moved no data for that long (a host that
// answers keepalives but not the stream). A variable for tests.
var copyStall = DefaultCallTimeout

// copying holds the copies under way: by host URI and path, a channel
// closed when the copy ends.
var copying sync.Map

// storage is the link's storage-pool code.
func (l *HostLink) storage() pools { return pools{conn: l.conn, uri: l.uri} }

// CopyImage makes remotePath on the host a copy of the local file
// localPath (a base image; its bytes as they are) through a dir storage
// pool whose target is remotePath's folder: an existing pool with that
// target (started and set to autostart if it is not), else a new one
// named "bureau-" and a hash of the folder, defined, built (which makes the
// folder, or sets an existing one to mode 0755, owner root) and started.
// The file gets mode 0644, owner root.
//
// A complete copy already there is kept (progress reports it done); any
// other file at remotePath (a copy cut short) is replaced. progress, if
// not nil, is called at most every 250 ms while data moves and once at the
// end with done == total, from the goroutine moving the data: it must
// return quickly. Cancelling ctx aborts the stream and removes the
// partial volume; a copy that moves no data for a minute is ended too. A
// second copy to the same path on the same host while one runs is refused.
func (l *HostLink) CopyImage(ctx context.Context, localPath, remotePath string, progress CopyProgress) error {
	if why := l.closed.Load(); why != nil {
		return errors.New(*why)
	}
	return l.storage().copyImage(ctx, localPath, remotePath, progress, false)
}

// ImageOnHost says whether remotePath on the host is a complete copy of
// the local file localPath: the same file size, the same virtual size
// (libvirt reads the qcow2 header on the host) and the same first 4 KiB.
// It finds or makes the folder's pool as CopyImage does, and refreshes it,
// so files put there outside libvirt count too.
func (l *HostLink) ImageOnHost(ctx context.Context, localPath, remotePath string) (bool, error) {
	if why := l.closed.Load(); why != nil {
		return false, errors.New(*why)
	}
	return l.storage().imageOnHost(ctx, localPath, remotePath)
}

// imagePool finds or makes the pool of a base images' folder.
func (p pools) imagePool(ctx context.Context, dir string) (string, error) {
	return p.ensurePool(ctx, dir, imageDir, false)
}

// copyImage is CopyImage. With wait, a copy to the same path under way is
// waited for (then found complete) rather than refused.
func (p pools) copyImage(ctx context.Context, localPath, remotePath string, progress CopyProgress, wait bool) (err error) {
	dir, name, err := splitRemote(remotePath)
	if err != nil {
		return err
	}
	src, err := openSource(localPath)
	if err != nil {
		return err
	}
	defer src.f.Close()
	key := p.uri + "\x00" + remotePath
	mine := make(chan struct{})
	for {
		other, busy := copying.LoadOrStore(key, mine)
		if !busy {
			break
		}
		if !wait {
			return fmt.Errorf("copy %s to the host: a copy to that path is already under way", remotePath)
		}
		select {
		case <-other.(chan struct{}):
		case <-ctx.Done():
			return fmt.Errorf("copy %s to the host: waiting for the copy already under way: %w", remotePath, context.Cause(ctx))
		}
	}
	release := func() {
		copying.Delete(key)
		close(mine)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	prog := newProgress(progress, src.size)

	pool, err := p.imagePool(ctx, dir)
	if err != nil {
		return err
	}
	// A complete copy stays; anything else of that name goes. The pool
	// is refreshed first, so files made outside libvirt are seen.
	done, err := call(ctx, func() (bool, error) {
		return p.withPool(pool, func(pl *libvirt.StoragePool) (bool, error) {
			refresh(pl)
			vol, err := lookupVolume(pl, name)
			if err != nil {
				return false, err
			}
			if vol == nil {
				return false, spaceFor(pl, dir, src)
			}
			defer vol.Free()
			if ok, _, err := p.complete(vol, src); err != nil {
				return false, err
			} else if ok {
				return true, nil
			}
			if err := vol.Delete(0); err != nil {
				return false, hostErr("remove the incomplete "+remotePath, err)
			}
			refresh(pl)
			return false, spaceFor(pl, dir, src)
		})
	})
	if err != nil {
		return fmt.Errorf("copy %s to the host: %w", remotePath, err)
	}
	if done {
		prog.end()
		return nil
	}

	// runCopy: no overall deadline but ctx and the stall watchdog. The
	// copy is released before its result is handed over: whoever gets it
	// may look at (or start) the next copy at once.
	released = true
	err = runCopy(ctx, prog.at, func(ctx context.Context, moved func(int64)) error {
		err := p.transfer(ctx, pool, name, src, moved)
		release()
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s on the host: %w", localPath, remotePath, err)
	}
	prog.end()
	return nil
}

// imageOnHost is ImageOnHost.
func (p pools) imageOnHost(ctx context.Context, localPath, remotePath string) (bool, error) {
	dir, name, err := splitRemote(remotePath)
	if err != nil {
		return false, err
	}
	src, err := openSource(localPath)
	if err != nil {
		return false, err
	}
	defer src.f.Close()
	pool, err := p.imagePool(ctx, dir)
	if err != nil {
		return false, err
	}
	ok, err := call(ctx, func() (bool, error) {
		return p.withPool(pool, func(pl *libvirt.StoragePool) (bool, error) {
			refresh(pl)
			vol, err := lookupVolume(pl, name)
			if err != nil || vol == nil {
				return false, err
			}
			defer vol.Free()
			ok, _, err := p.complete(vol, src)
			return ok, err
		})
	})
	if err != nil {
		return false, fmt.Errorf("check %s on the host: %w", remotePath, err)
	}
	return ok, nil
}

// transfer creates the volume name in pool and uploads src into it: the
// body with a sparse stream, then the header. On any failure the stream
// is aborted and the volume removed.
func (p pools) transfer(ctx context.Context, pool, name string, src *source, moved func(int64)) (err error) {
	pl, err := p.conn.LookupStoragePoolByName(pool)
	if err != nil {
		return hostErr("storage pool "+pool, err)
	}
	defer pl.Free()
	x, err := volumeXML(name, src.size, imageFile)
	if err != nil {
		return err
	}
	vol, err := pl.StorageVolCreateXML(x, 0)
	if err != nil {
		return hostErr("create the volume", err)
	}
	defer vol.Free()
	defer func() {
		if err != nil {
			// Not bounded: this goroutine is already past its caller's
			// wait if the host does not answer.
			if derr := vol.Delete(0); derr != nil {
				err = fmt.Errorf("%w (and the partial volume was not removed: %v)", err, message(derr))
			}
		}
	}()
	hl := int64(len(src.head))
	if src.size > hl {
		r := &sparseReader{ctx: ctx, f: src.f, pos: hl, end: src.size, moved: func(pos int64) { moved(pos - hl) }}
		if err := p.upload(vol, hl, src.size-hl, true, r.data, r.hole, r.skip, r.failed); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	sent := false
	header := func(*libvirt.Stream, int) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		if sent {
			return nil, nil
		}
		sent = true
		return src.head, nil
	}
	// Not sparse: a hole in a sparse upload truncates the file there.
	if err := p.upload(vol, 0, hl, false, header, nil, nil, func() error { return context.Cause(ctx) }); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	moved(src.size)
	refresh(pl)
	ok, why, err := p.complete(vol, src)
	if err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if !ok {
		return fmt.Errorf("the copy on the host is not complete: %s", why)
	}
	return nil
}
