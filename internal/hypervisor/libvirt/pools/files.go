package pools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/storage"
	"libvirt.org/go/libvirt"
)

// Files makes and removes a remote desktop's files on its host through
// the host's storage pools (manager.HostFiles): every folder is the
// target of a dir pool, every file a volume in it. Paths are the same as
// on bureau's own host. Base images are 0644 root in 0755 root folders
// (CopyImage); a desktop's folder is 0700 and its files 0600, owned by
// the desktop's QEMU user, as domains/ownership.go makes them locally.
type Files struct {
	link *link.Conn // the host's connection (reconnected as needed)

	// Sweep, if set, removes what dir holds that a storage pool does not
	// list: unix sockets (QEMU leaves its vnc.sock when it exits), FIFOs
	// and the like. RemoveAllBut calls it when the folder cannot be
	// removed otherwise; without it, RemoveAllBut fails with ErrUnlisted.
	// (libvirt has no call that removes such files; SSH to the host does.)
	Sweep func(ctx context.Context, dir string) error
}

// Storage is the file side of the remote hosts a connection routes
// domains to.
type Storage struct {
	link *link.Conn
}

// NewStorage is the file side of the remote hosts c routes domains to.
func NewStorage(c *link.Conn) *Storage { return &Storage{link: c} }

// Files is the file side of a remote host s routes domains to
// (link.Conn.SetRemotes).
func (s *Storage) Files(ctx context.Context, host string) (*Files, error) {
	r, err := s.link.Remote(ctx, host)
	if err != nil {
		return nil, err
	}
	return &Files{link: r}, nil
}

// pools is the storage-pool code on the host's current connection.
func (f *Files) pools(ctx context.Context) (Host, error) {
	conn, err := f.link.Connect(ctx)
	if err != nil {
		return Host{}, err
	}
	return Host{conn: conn, uri: f.link.URI()}, nil
}

// EnsureImage copies the local base image at path to the same path on the
// host unless a complete copy is there (CopyImage; a copy of that path
// under way is waited for). replace is asked before another image at
// that path (another build of it) is replaced.
func (f *Files) EnsureImage(ctx context.Context, path string, replace func(ctx context.Context, why string) error, progress func(done, total int64)) error {
	p, err := f.pools(ctx)
	if err != nil {
		return err
	}
	return p.CopyImage(ctx, path, path, progress, true, replace)
}

// MakeDir makes dir on the host, mode 0700, owned by uid:gid: the target
// of a dir pool (defined, built, started, autostarted). An existing pool
// for dir is kept, and its folder given that owner and mode if it has
// others.
func (f *Files) MakeDir(ctx context.Context, dir string, uid, gid int) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	if uid < 0 || gid < 0 {
		return fmt.Errorf("folder %s: owner %d:%d", dir, uid, gid)
	}
	p, err := f.pools(ctx)
	if err != nil {
		return err
	}
	_, err = p.ensurePool(ctx, dir, desktopDir(uid, gid), true)
	return err
}

// Exists says whether path is on the host: a file its folder's pool lists
// (regular files and folders; not unix sockets or FIFOs, which libvirt
// skips). A folder without a pool holds nothing here.
func (f *Files) Exists(ctx context.Context, path string) (bool, error) {
	_, ok, err := atVolume(ctx, f, path, func(*libvirt.StorageVol) (struct{}, error) { return struct{}{}, nil })
	if err != nil {
		return false, fmt.Errorf("look for %s on the host: %w", path, err)
	}
	return ok, nil
}

// atVolume runs fn on the volume of the file at path on the host, in its
// folder's pool (refreshed first: files made outside libvirt show); found
// is false, and fn is not run, when the folder has no pool or the pool no
// such file.
func atVolume[T any](ctx context.Context, f *Files, path string, fn func(*libvirt.StorageVol) (T, error)) (v T, found bool, err error) {
	dir, name, err := SplitRemote(path)
	if err != nil {
		return v, false, err
	}
	p, err := f.pools(ctx)
	if err != nil {
		return v, false, err
	}
	type result struct {
		v     T
		found bool
	}
	r, err := link.Call(ctx, func() (result, error) {
		pl, err := p.openPool(dir)
		if err != nil || pl == nil {
			return result{}, err
		}
		defer pl.Free()
		Refresh(pl)
		vol, err := LookupVolume(pl, name)
		if err != nil || vol == nil {
			return result{}, err
		}
		defer vol.Free()
		v, err := fn(vol)
		return result{v, true}, err
	})
	return r.v, r.found, err
}

// CreateOverlay makes path a qcow2 over base (which must be on the host,
// in its folder's pool: EnsureImage), of base's virtual size or sizeGiB
// GiB if larger, 0600 uid:gid. path's folder must have a pool (MakeDir).
// An existing file at path is an error wrapping storage.ErrExists.
func (f *Files) CreateOverlay(ctx context.Context, base, path string, sizeGiB, uid, gid int) error {
	baseDir, baseName, err := SplitRemote(base)
	if err != nil {
		return err
	}
	return f.create(ctx, path, sizeGiB, uid, gid, func(p Host) (int64, backing, error) {
		bp, err := p.openPool(baseDir)
		if err != nil {
			return 0, backing{}, err
		}
		if bp == nil {
			return 0, backing{}, fmt.Errorf("base image %s: no storage pool on the host for %s (EnsureImage copies it there): %w", base, baseDir, os.ErrNotExist)
		}
		defer bp.Free()
		Refresh(bp)
		vol, err := LookupVolume(bp, baseName)
		if err != nil {
			return 0, backing{}, err
		}
		if vol == nil {
			return 0, backing{}, fmt.Errorf("base image %s is not on the host: %w", base, os.ErrNotExist)
		}
		defer vol.Free()
		info, err := vol.GetInfo()
		if err != nil {
			return 0, backing{}, link.HostErr("base image "+base, err)
		}
		format, err := volumeFormat(vol)
		if err != nil {
			return 0, backing{}, fmt.Errorf("base image %s: %w", base, err)
		}
		return max(int64(info.Capacity), int64(sizeGiB)<<30), backing{path: base, format: format}, nil
	})
}

// CreateDataDisk makes path an empty qcow2 of sizeGiB GiB, 0600 uid:gid.
// path's folder must have a pool (MakeDir). An existing file at path is
// an error wrapping storage.ErrExists: it is a user's data.
func (f *Files) CreateDataDisk(ctx context.Context, path string, sizeGiB, uid, gid int) error {
	if sizeGiB <= 0 {
		return fmt.Errorf("data disk %s: size %d GiB", path, sizeGiB)
	}
	return f.create(ctx, path, sizeGiB, uid, gid, func(Host) (int64, backing, error) {
		return int64(sizeGiB) << 30, backing{}, nil
	})
}

// create makes the qcow2 volume path of the size and backing that size
// finds, unless a file is there.
func (f *Files) create(ctx context.Context, path string, sizeGiB, uid, gid int, size func(Host) (int64, backing, error)) error {
	dir, name, err := SplitRemote(path)
	if err != nil {
		return err
	}
	if sizeGiB < 0 || uid < 0 || gid < 0 {
		return fmt.Errorf("%s: size %d GiB, owner %d:%d", path, sizeGiB, uid, gid)
	}
	p, err := f.pools(ctx)
	if err != nil {
		return err
	}
	_, err = link.Call(ctx, func() (bool, error) {
		pl, err := p.DesktopPool(dir)
		if err != nil {
			return false, err
		}
		defer pl.Free()
		if vol, err := LookupVolume(pl, name); err != nil {
			return false, err
		} else if vol != nil {
			vol.Free()
			return false, storage.ErrExists
		}
		n, back, err := size(p)
		if err != nil {
			return false, err
		}
		x, err := qcow2XML(name, n, DesktopFile(uid, gid), back)
		if err != nil {
			return false, err
		}
		vol, err := pl.StorageVolCreateXML(x, 0)
		if link.IsCode(err, libvirt.ERR_STORAGE_VOL_EXIST) {
			return false, storage.ErrExists
		}
		if err != nil {
			return false, link.HostErr("create", err)
		}
		vol.Free()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s on the host: %w", path, err)
	}
	return nil
}

// Upload copies the local file to path on the host (a small file: the
// cloud-init seed ISO; no progress), 0600 uid:gid, replacing any file of
// that name. The seed's cdrom is relabel='no' in the domain
// (domains.DomainXML): libvirt does not give it to the QEMU user at start,
// so it is made the QEMU user's here, as domains.GiveFiles does locally.
// path's folder must have a pool (MakeDir). A failed upload leaves no file.
func (f *Files) Upload(ctx context.Context, local, path string, uid, gid int) error {
	dir, name, err := SplitRemote(path)
	if err != nil {
		return err
	}
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("upload %s: not a regular file", local)
	}
	p, err := f.pools(ctx)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, link.DefaultCallTimeout)
		defer cancel()
	}
	_, err = link.Call(ctx, func() (bool, error) {
		pl, err := p.DesktopPool(dir)
		if err != nil {
			return false, err
		}
		defer pl.Free()
		if old, err := LookupVolume(pl, name); err != nil {
			return false, err
		} else if old != nil {
			err := old.Delete(0)
			old.Free()
			if err != nil {
				return false, link.HostErr("replace "+name, err)
			}
		}
		x, err := VolumeXML(name, st.Size(), DesktopFile(uid, gid))
		if err != nil {
			return false, err
		}
		vol, err := pl.StorageVolCreateXML(x, 0)
		if err != nil {
			return false, link.HostErr("create", err)
		}
		defer vol.Free()
		if st.Size() == 0 {
			return true, nil
		}
		// Not sparse: every byte goes (a seed ISO is small).
		r := &SparseReader{ctx: ctx, f: src, end: st.Size(), moved: func(int64) {}, what: local}
		if err := p.Upload(vol, 0, st.Size(), false, r.Data, nil, nil, r.Failed); err != nil {
			if derr := vol.Delete(0); derr != nil {
				err = fmt.Errorf("%w (and the partial file was not removed: %v)", err, link.Message(derr))
			}
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("upload %s to %s on the host: %w", filepath.Base(local), path, err)
	}
	return nil
}

// DesktopPool is the refreshed pool of a desktop's folder dir, which
// MakeDir made; the caller frees it.
func (p Host) DesktopPool(dir string) (*libvirt.StoragePool, error) {
	pl, err := p.openPool(dir)
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return nil, fmt.Errorf("no storage pool on the host for %s (MakeDir makes it)", dir)
	}
	Refresh(pl)
	return pl, nil
}
