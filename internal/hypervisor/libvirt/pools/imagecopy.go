package pools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
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
var copyStall = link.DefaultCallTimeout

// copying holds the copies under way: by host URI and path, a channel
// closed when the copy ends.
var copying sync.Map

// imagePool finds or makes the pool of a base images' folder.
func (p Host) imagePool(ctx context.Context, dir string) (string, error) {
	return p.ensurePool(ctx, dir, imageDir, false)
}

// Replace is asked before a copy removes a file at its path on the host
// that is a whole image, not the copy (why says how it differs): another
// build of the image, maybe the base of desktops on that host. An error
// keeps the file, and the copy fails with it.
type Replace func(ctx context.Context, why string) error

// CopyImage is HostLink.CopyImage (package libvirt) on this host. With
// wait, a copy to the same path under way is waited for (then found
// complete) rather than refused. replace, if not nil, is asked before a
// whole image of another content at remotePath is replaced (a copy cut
// short is replaced without asking).
func (p Host) CopyImage(ctx context.Context, localPath, remotePath string, progress CopyProgress, wait bool, replace Replace) (err error) {
	dir, name, err := SplitRemote(remotePath)
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
	prog := NewProgress(progress, src.size)

	pool, err := p.imagePool(ctx, dir)
	if err != nil {
		return err
	}
	// A complete copy stays; anything else of that name goes. The pool
	// is refreshed first, so files made outside libvirt are seen.
	there, err := p.found(ctx, pool, name, src)
	if err != nil {
		return fmt.Errorf("copy %s to the host: %w", remotePath, err)
	}
	if there.ok {
		prog.End()
		return nil
	}
	if there.why != "" && !there.cut && replace != nil {
		if err := replace(ctx, there.why); err != nil {
			return fmt.Errorf("copy %s to the host: the file there is another image (%s): %w", remotePath, there.why, err)
		}
	}
	_, err = link.Call(ctx, func() (struct{}, error) {
		return onPool(p, pool, func(pl *libvirt.StoragePool) (struct{}, error) {
			// The sum file goes first: a copy is whole only with it.
			if err := p.removeVolume(pl, sumName(name)); err != nil {
				return struct{}{}, err
			}
			if there.why != "" {
				if err := p.removeVolume(pl, name); err != nil {
					return struct{}{}, fmt.Errorf("the other %s: %w", remotePath, err)
				}
				Refresh(pl)
			}
			return struct{}{}, spaceFor(pl, dir, src)
		})
	})
	if err != nil {
		return fmt.Errorf("copy %s to the host: %w", remotePath, err)
	}

	// RunCopy: no overall deadline but ctx and the stall watchdog. The
	// copy is released before its result is handed over: whoever gets it
	// may look at (or start) the next copy at once.
	released = true
	err = RunCopy(ctx, prog.At, func(ctx context.Context, moved func(int64)) error {
		err := p.transfer(ctx, pool, name, src, moved)
		release()
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s on the host: %w", localPath, remotePath, err)
	}
	prog.End()
	return nil
}

// ImageOnHost is HostLink.ImageOnHost (package libvirt) on this host.
func (p Host) ImageOnHost(ctx context.Context, localPath, remotePath string) (bool, error) {
	dir, name, err := SplitRemote(remotePath)
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
	ok, err := link.Call(ctx, func() (bool, error) {
		return p.WithPool(pool, func(pl *libvirt.StoragePool) (bool, error) {
			Refresh(pl)
			vol, err := LookupVolume(pl, name)
			if err != nil || vol == nil {
				return false, err
			}
			defer vol.Free()
			v, err := p.complete(pl, vol, name, src)
			return v.ok, err
		})
	})
	if err != nil {
		return false, fmt.Errorf("check %s on the host: %w", remotePath, err)
	}
	return ok, nil
}

// found compares the file name in pool (refreshed first: files made
// outside libvirt show) with src; its why is "" when there is none.
func (p Host) found(ctx context.Context, pool, name string, src *source) (verdict, error) {
	return link.Call(ctx, func() (verdict, error) {
		return onPool(p, pool, func(pl *libvirt.StoragePool) (verdict, error) {
			Refresh(pl)
			vol, err := LookupVolume(pl, name)
			if err != nil || vol == nil {
				return verdict{}, err
			}
			defer vol.Free()
			return p.complete(pl, vol, name, src)
		})
	})
}

// transfer creates the volume name in pool and uploads src into it: the
// body with a sparse stream, then the header. On any failure the stream
// is aborted and the volume removed.
func (p Host) transfer(ctx context.Context, pool, name string, src *source, moved func(int64)) (err error) {
	pl, err := p.conn.LookupStoragePoolByName(pool)
	if err != nil {
		return link.HostErr("storage pool "+pool, err)
	}
	defer pl.Free()
	x, err := VolumeXML(name, src.size, imageFile)
	if err != nil {
		return err
	}
	vol, err := pl.StorageVolCreateXML(x, 0)
	if err != nil {
		return link.HostErr("create the volume", err)
	}
	defer vol.Free()
	defer func() {
		if err != nil {
			// Not bounded: this goroutine is already past its caller's
			// wait if the host does not answer.
			if derr := vol.Delete(0); derr != nil {
				err = fmt.Errorf("%w (and the partial volume was not removed: %v)", err, link.Message(derr))
			}
		}
	}()
	hl := int64(len(src.head))
	if src.size > hl {
		r := &SparseReader{ctx: ctx, f: src.f, pos: hl, end: src.size, moved: func(pos int64) { moved(pos - hl) }}
		if err := p.Upload(vol, hl, src.size-hl, true, r.Data, r.Hole, r.Skip, r.Failed); err != nil {
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
	if err := p.Upload(vol, 0, hl, false, header, nil, nil, func() error { return context.Cause(ctx) }); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	moved(src.size)
	Refresh(pl)
	v, err := p.matches(vol, src)
	if err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if !v.ok {
		return fmt.Errorf("the copy on the host is not complete: %s", v.why)
	}
	sum, err := src.sum()
	if err != nil {
		return err
	}
	if err := p.writeSum(pl, name, sum); err != nil {
		return err
	}
	return nil
}

// RunCopy runs a transfer with no overall deadline but ctx's and
// copyStall's watchdog (reset by moved), as CopyImage does. The transfer
// owns every libvirt object it uses and removes its partial file itself,
// so returning early (a host that does not answer the abort) leaves
// nothing in use here.
func RunCopy(ctx context.Context, at func(int64), transfer func(ctx context.Context, moved func(int64)) error) error {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(copyStall, func() { cancel(fmt.Errorf("the copy stalled: no data moved for %s", copyStall)) })
	defer watchdog.Stop()
	moved := func(done int64) {
		watchdog.Reset(copyStall)
		at(done)
	}
	result := make(chan error, 1)
	go func() { result <- transfer(cctx, moved) }()
	select {
	case err := <-result:
		return err
	case <-cctx.Done():
	}
	select {
	case err := <-result:
		return err
	case <-time.After(abortGrace):
		return fmt.Errorf("%w; the host has not answered the abort yet, its partial file is removed when it does", context.Cause(cctx))
	}
}
