package pools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// ErrUnlisted means a folder on a host was not removed: it holds files
// its storage pool does not list, which libvirt cannot remove.
var ErrUnlisted = errors.New("it holds files libvirt does not list, nor remove (unix sockets such as QEMU's vnc.sock, FIFOs)")

// notEmpty is strerror(ENOTEMPTY) as libvirt prints it.
const notEmpty = "Directory not empty"

// Remove removes the file path on the host (none there, or no pool for
// its folder, is fine).
func (f *Files) Remove(ctx context.Context, path string) error {
	_, _, err := atVolume(ctx, f, path, func(vol *libvirt.StorageVol) (struct{}, error) {
		if err := vol.Delete(0); err != nil && !link.IsCode(err, libvirt.ERR_NO_STORAGE_VOL) {
			return struct{}{}, link.HostErr("remove", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return fmt.Errorf("remove %s on the host: %w", path, err)
	}
	return nil
}

// RemoveAllBut removes every file in dir on the host but keep ("" for
// none; else a path in dir), then, unless keep was there, dir itself and
// its pool (stopped, deleted, undefined). It says whether keep was there.
//
// libvirt lists, and so removes, only regular files, block devices and
// folders: a unix socket (QEMU leaves its vnc.sock when it exits, and
// libvirt 9.0 skips sockets and FIFOs on refresh) keeps the folder from
// being removed. Sweep, if set, is then asked to remove such files and
// the folder's removal is tried again; otherwise, or if it still fails,
// the error wraps ErrUnlisted and the pool is left running, with the
// files that were listed removed. When keep is there, such files stay
// with it (QEMU replaces a stale vnc.sock when it starts).
func (f *Files) RemoveAllBut(ctx context.Context, dir, keep string) (kept bool, err error) {
	if err := checkDir(dir); err != nil {
		return false, err
	}
	keepName := ""
	if keep != "" {
		kd, kn, err := SplitRemote(keep)
		if err != nil {
			return false, err
		}
		if kd != dir {
			return false, fmt.Errorf("keep %s: not in %s", keep, dir)
		}
		keepName = kn
	}
	p, err := f.pools(ctx)
	if err != nil {
		return false, err
	}
	kept, err = p.removeAllBut(ctx, dir, keepName)
	if errors.Is(err, ErrUnlisted) && f.Sweep != nil {
		if serr := f.Sweep(ctx, dir); serr != nil {
			return false, fmt.Errorf("%w; removing them: %v", err, serr)
		}
		kept, err = p.removeAllBut(ctx, dir, keepName)
	}
	return kept, err
}

// removeAllBut is RemoveAllBut without Sweep.
func (p Host) removeAllBut(ctx context.Context, dir, keepName string) (bool, error) {
	var name string // the pool's, "" if dir has none
	kept, err := link.Call(ctx, func() (bool, error) {
		pl, err := p.openPool(dir)
		if err != nil || pl == nil {
			return false, err
		}
		defer pl.Free()
		if name, err = pl.GetName(); err != nil {
			return false, link.HostErr("pool name", err)
		}
		Refresh(pl)
		vols, err := pl.ListAllStorageVolumes(0)
		if err != nil {
			return false, link.HostErr("list "+dir, err)
		}
		defer func() {
			for i := range vols {
				vols[i].Free()
			}
		}()
		kept := false
		for i := range vols {
			n, err := vols[i].GetName()
			if err != nil {
				return false, link.HostErr("volume name", err)
			}
			if keepName != "" && n == keepName {
				kept = true
				continue
			}
			if err := vols[i].Delete(0); err != nil && !link.IsCode(err, libvirt.ERR_NO_STORAGE_VOL) {
				return false, link.HostErr("remove "+n, err)
			}
		}
		return kept, nil
	})
	if err != nil {
		return false, fmt.Errorf("empty %s on the host: %w", dir, err)
	}
	if kept || name == "" {
		return kept, nil
	}
	poolMu.Lock()
	defer poolMu.Unlock()
	_, err = link.Call(ctx, func() (bool, error) { return false, p.deletePool(name, dir) })
	if err != nil {
		return false, fmt.Errorf("remove the folder %s on the host: %w", dir, err)
	}
	return false, nil
}

// deletePool stops the pool, removes its (empty) folder and undefines it.
// A folder that is not empty (what is left libvirt does not list) is
// kept, with its pool running again.
func (p Host) deletePool(name, dir string) error {
	pl, err := p.conn.LookupStoragePoolByName(name)
	if err != nil {
		return link.HostErr("storage pool "+name, err)
	}
	defer pl.Free()
	// A transient pool would be gone once stopped, its folder kept.
	if persistent, err := pl.IsPersistent(); err == nil && !persistent {
		x, err := pl.GetXMLDesc(0)
		if err != nil {
			return link.HostErr("read pool "+name, err)
		}
		def, err := p.conn.StoragePoolDefineXML(x, 0)
		if err != nil {
			return link.HostErr("make pool "+name+" persistent", err)
		}
		def.Free()
	}
	if active, err := pl.IsActive(); err != nil {
		return link.HostErr("pool "+name, err)
	} else if active {
		if err := pl.Destroy(); err != nil {
			return link.HostErr("stop pool "+name, err)
		}
	}
	if err := pl.Delete(libvirt.STORAGE_POOL_DELETE_NORMAL); err != nil {
		var lerr libvirt.Error
		unlisted := errors.As(err, &lerr) && strings.Contains(lerr.Message, notEmpty)
		if serr := pl.Create(0); serr != nil {
			err = fmt.Errorf("%w (and pool %s did not start again: %v)", link.HostErr("remove", err), name, link.Message(serr))
		} else {
			err = link.HostErr("remove", err)
		}
		if unlisted {
			return fmt.Errorf("%w: %w", ErrUnlisted, err)
		}
		return err
	}
	if err := pl.Undefine(); err != nil {
		return link.HostErr("undefine pool "+name+" (its folder is removed)", err)
	}
	return nil
}
