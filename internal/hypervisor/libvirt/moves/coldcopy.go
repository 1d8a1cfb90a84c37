package moves

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
)

// CopyFile copies the regular file path on host from to the same path on
// host to ("" or "local": bureau's own host; any other name a
// remote host, through Remote), for a cold move: a desktop that is not
// running. Holes stay holes, so a 16 GiB qcow2 with 200 MiB used moves
// about 200 MiB; the copy is 0600, owned by uid:gid.
//
// The destination's folder must exist: made here by the caller, on a
// remote host by Files.MakeDir, whose storage pool the copy goes through
// (as does the source's, on a remote host). A file already at the
// destination is an error wrapping os.ErrExist; a copy that fails or is
// cancelled leaves none (one cut short by bureau itself dying stays, and
// is then that error). progress, if not nil, gets done of total bytes
// (the source's size; holes count as done) at most every 250 ms and once
// at the end, from the goroutine moving the data: it must return quickly.
// A copy that moves no data for a minute is ended.
//
// local → remote is a sparse upload stream; remote → local a sparse
// download stream into a new file; remote → remote both at once with a
// bounded pipe between them (nothing staged here). Call it on bureau's
// own connection.
func (m *Moves) CopyFile(ctx context.Context, from, to, path string, uid, gid int, progress func(done, total int64)) error {
	dir, _, err := pools.SplitRemote(path)
	if err != nil {
		return err
	}
	from, to = link.HostName(from), link.HostName(to)
	if uid < 0 || gid < 0 {
		return fmt.Errorf("copy %s: owner %d:%d", path, uid, gid)
	}
	if from == to {
		return fmt.Errorf("copy %s from host %s to itself: nothing to move", path, from)
	}
	folder := func(p pools.Host) (string, error) {
		pl, err := p.DesktopPool(dir)
		if err != nil {
			return "", err
		}
		defer pl.Free()
		name, err := pl.GetName()
		if err != nil {
			return "", link.HostErr("pool name", err)
		}
		return name, nil
	}
	src, err := m.fileEnd(ctx, from, folder)
	if err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	dst, err := m.fileEnd(ctx, to, folder)
	if err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	if err := copyBetween(ctx, src, dst, path, pools.DesktopFile(uid, gid), progress); err != nil {
		return fmt.Errorf("copy %s from host %s to host %s: %w", path, from, to, err)
	}
	return nil
}

// fileEnd is one host's side of a copy: this machine's file system, or a
// remote host's storage pool whose target is the file's folder (its
// files are the pool's volumes).
type fileEnd struct {
	host string      // its name, in errors
	p    *pools.Host // nil: this machine, by plain file I/O
	pool string      // on a remote host, the pool's name
}

// fileEnd is host's side of a copy of a file in the folder whose pool
// folder finds on a remote host.
func (m *Moves) fileEnd(ctx context.Context, host string, folder func(pools.Host) (string, error)) (fileEnd, error) {
	if host == "local" {
		return fileEnd{host: host}, nil
	}
	p, err := m.hostPools(ctx, host)
	if err != nil {
		return fileEnd{}, err
	}
	name, err := link.Call(ctx, func() (string, error) { return folder(*p) })
	if err != nil {
		return fileEnd{}, fmt.Errorf("host %s: %w", host, err)
	}
	return fileEnd{host: host, p: p, pool: name}, nil
}

// hostPools is the storage-pool code on a remote host's connection.
func (m *Moves) hostPools(ctx context.Context, host string) (*pools.Host, error) {
	r, err := m.link.Remote(ctx, host)
	if err != nil {
		return nil, err
	}
	conn, err := r.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	p := pools.NewHost(conn, r.URI())
	return &p, nil
}

// copyBetween copies path from src to dst (not both this machine), the
// copy with owner's owner and mode.
func copyBetween(ctx context.Context, src, dst fileEnd, path string, owner pools.Perms, progress pools.CopyProgress) error {
	if err := dst.absent(ctx, path); err != nil {
		return fmt.Errorf("host %s: %w", dst.host, err)
	}
	size, err := src.size(ctx, path)
	if err != nil {
		return fmt.Errorf("host %s: %w", src.host, err)
	}
	prog := pools.NewProgress(progress, size)
	err = pools.RunCopy(ctx, prog.At, func(ctx context.Context, moved func(int64)) error {
		switch {
		case src.p == nil:
			return localToRemote(ctx, path, size, dst, owner, moved)
		case dst.p == nil:
			return remoteToLocal(ctx, src, path, size, owner, moved)
		}
		return remoteToRemote(ctx, src, dst, path, size, owner, moved)
	})
	if err != nil {
		return err
	}
	prog.End()
	return nil
}

// size is the size of the regular file path.
func (e fileEnd) size(ctx context.Context, path string) (int64, error) {
	if e.p == nil {
		st, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		if !st.Mode().IsRegular() {
			return 0, fmt.Errorf("%s: not a regular file", path)
		}
		return st.Size(), nil
	}
	return link.Call(ctx, func() (int64, error) {
		return withVolume(e, path, func(vol *libvirt.StorageVol) (int64, error) {
			info, err := vol.GetInfoFlags(libvirt.STORAGE_VOL_GET_PHYSICAL)
			if err != nil {
				return 0, link.HostErr("size of "+path, err)
			}
			return int64(info.Allocation), nil // the file's size, with GET_PHYSICAL
		})
	})
}

// absent fails, wrapping os.ErrExist, if path is there.
func (e fileEnd) absent(ctx context.Context, path string) error {
	if e.p == nil {
		_, err := os.Lstat(path)
		if err == nil {
			return fmt.Errorf("%s is already there: %w", path, os.ErrExist)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	_, err := link.Call(ctx, func() (struct{}, error) {
		return withVolume(e, path, func(*libvirt.StorageVol) (struct{}, error) {
			return struct{}{}, fmt.Errorf("%s is already there: %w", path, os.ErrExist)
		})
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// withVolume runs fn on the volume of path in the remote end's pool
// (refreshed first: QEMU and libvirt wrote files there); none there is
// an error wrapping os.ErrNotExist.
func withVolume[T any](e fileEnd, path string, fn func(*libvirt.StorageVol) (T, error)) (T, error) {
	var zero T
	_, name, err := pools.SplitRemote(path)
	if err != nil {
		return zero, err
	}
	pl, err := e.p.Conn().LookupStoragePoolByName(e.pool)
	if err != nil {
		return zero, link.HostErr("storage pool "+e.pool, err)
	}
	defer pl.Free()
	pools.Refresh(pl)
	vol, err := pools.LookupVolume(pl, name)
	if err != nil {
		return zero, err
	}
	if vol == nil {
		return zero, fmt.Errorf("%s: %w", path, os.ErrNotExist)
	}
	defer vol.Free()
	return fn(vol)
}
