// Package pools reaches a host's files through libvirt's storage pools:
// finding and making pools and volumes (pool.go, poolxml.go), streaming
// volumes (poolstream.go), copying a base image to a host (imagecopy.go,
// poolimage.go), a remote desktop's files (Files: files.go; a stopped
// desktop's disks, filesdisk.go; removal, filesremove.go) and measuring a
// host's disk (disk.go).
package pools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// Files reach a host through libvirt's storage-pool API
// (docs/research/multi-host.md §4): one dir pool per folder, whose target
// is that folder, and one volume per file (volume names have no '/').
// Host is that code on one libvirt connection, shared by HostLink (base
// images, for the hosts registry; package libvirt), Files (a remote
// desktop's files) and cold moves (package moves). Its methods make
// libvirt's C calls directly: callers bound them with link.Call, or (a
// copy's transfer) with their context and a stall watchdog.
type Host struct {
	conn *libvirt.Connect
	uri  string // the host's libvirt URI: names it among copies under way
}

// NewHost is the storage-pool code on conn, the connection to uri.
func NewHost(conn *libvirt.Connect, uri string) Host { return Host{conn: conn, uri: uri} }

// Conn is the host's libvirt connection.
func (p Host) Conn() *libvirt.Connect { return p.conn }

// URI is the host's libvirt URI.
func (p Host) URI() string { return p.uri }

// poolMu serialises finding, making and removing pools.
var poolMu sync.Mutex

// PoolName is the name of the pool made for dir.
func PoolName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "bureau-" + hex.EncodeToString(sum[:4])
}

// ensurePool finds the pool whose target is dir, starting it and setting
// it to autostart if needed, or defines, builds and starts one whose
// folder gets want. With fix, an existing pool's folder that has other
// permissions than want gets them (the pool is stopped, redefined with
// want, built and started again). It returns the pool's name.
func (p Host) ensurePool(ctx context.Context, dir string, want Perms, fix bool) (string, error) {
	poolMu.Lock()
	defer poolMu.Unlock()
	name, err := link.Call(ctx, func() (string, error) {
		pl, def, err := p.lookupPool(dir)
		if err != nil {
			return "", err
		}
		if pl == nil {
			return p.makePool(dir, want)
		}
		defer pl.Free()
		if active, err := pl.IsActive(); err != nil {
			return "", link.HostErr("pool "+def.Name, err)
		} else if !active {
			if err := startPool(pl, def.Type, dir); err != nil {
				return "", fmt.Errorf("pool %s: %w", def.Name, err)
			}
		}
		if fix {
			if err := p.fixPool(pl, def, dir, want); err != nil {
				return "", fmt.Errorf("pool %s: %w", def.Name, err)
			}
		}
		return def.Name, autostart(pl, def.Name)
	})
	if err != nil {
		return "", fmt.Errorf("storage pool for %s on the host: %w", dir, err)
	}
	return name, nil
}

// lookupPool finds the pool whose target is dir (nil if none): the one
// named PoolName(dir), else any. The caller frees it.
func (p Host) lookupPool(dir string) (*libvirt.StoragePool, *libvirtxml.StoragePool, error) {
	if pl, err := p.conn.LookupStoragePoolByName(PoolName(dir)); err == nil {
		if def, ok := targetIs(pl, dir); ok {
			return pl, def, nil
		}
		pl.Free()
	} else if !link.IsCode(err, libvirt.ERR_NO_STORAGE_POOL) {
		return nil, nil, link.HostErr("look up storage pool "+PoolName(dir), err)
	}
	all, err := p.conn.ListAllStoragePools(0)
	if err != nil {
		return nil, nil, link.HostErr("list storage pools", err)
	}
	var found *libvirt.StoragePool
	var def *libvirtxml.StoragePool
	for i := range all {
		if found == nil {
			if d, ok := targetIs(&all[i], dir); ok {
				found, def = &all[i], d
				continue
			}
		}
		all[i].Free()
	}
	return found, def, nil
}

// targetIs reads pl's definition if its target is dir.
func targetIs(pl *libvirt.StoragePool, dir string) (*libvirtxml.StoragePool, bool) {
	x, err := pl.GetXMLDesc(0)
	if err != nil {
		return nil, false // gone meanwhile
	}
	var def libvirtxml.StoragePool
	if def.Unmarshal(x) != nil || def.Target == nil || def.Target.Path == "" || filepath.Clean(def.Target.Path) != dir {
		return nil, false
	}
	return &def, true
}

// makePool defines, builds and starts a pool for dir.
func (p Host) makePool(dir string, want Perms) (string, error) {
	name := PoolName(dir)
	x, err := poolXML(name, dir, want)
	if err != nil {
		return "", err
	}
	pl, err := p.conn.StoragePoolDefineXML(x, 0)
	if err != nil {
		return "", link.HostErr("define storage pool "+name, err)
	}
	defer pl.Free()
	if err := buildPool(pl, dir); err != nil {
		pl.Undefine()
		return "", err
	}
	if err := pl.Create(0); err != nil {
		pl.Undefine()
		return "", link.HostErr("start storage pool "+name+" for "+dir, err)
	}
	return name, autostart(pl, name)
}

// fixPool gives an active pool's folder want if it has other permissions.
// A refresh puts the folder's own owner and mode into the pool's
// definition (the running one, and the persistent one until the pool
// stops: libvirt 9.0), so they are read there, and want is defined anew
// before the build, which sets them (a running pool is not built).
func (p Host) fixPool(pl *libvirt.StoragePool, def *libvirtxml.StoragePool, dir string, want Perms) error {
	Refresh(pl)
	x, err := pl.GetXMLDesc(0)
	if err != nil {
		return link.HostErr("read the pool", err)
	}
	var live libvirtxml.StoragePool
	if err := live.Unmarshal(x); err != nil {
		return fmt.Errorf("the pool's XML: %w", err)
	}
	if have, ok := poolPerms(live.Target.Permissions); ok && have == want {
		return nil
	}
	if def.Type != "dir" {
		return fmt.Errorf("a %s pool: its folder %s is not made owned by %d:%d here", def.Type, dir, want.UID, want.GID)
	}
	next := live // its definition, as it runs
	next.Target.Permissions = want.pool()
	if x, err = next.Marshal(); err != nil {
		return err
	}
	define := func() error {
		redef, err := p.conn.StoragePoolDefineXML(x, 0)
		if err != nil {
			return link.HostErr("define the pool with owner "+strconv.Itoa(want.UID), err)
		}
		redef.Free()
		return nil
	}
	// A transient pool is made persistent first, so it stays when
	// stopped; the stopped pool is defined anew (a definition given while
	// it runs would replace its own only when it stops).
	if persistent, err := pl.IsPersistent(); err == nil && !persistent {
		if err := define(); err != nil {
			return err
		}
	}
	if err := pl.Destroy(); err != nil {
		return link.HostErr("stop the pool to set its folder's owner", err)
	}
	if err := define(); err != nil {
		pl.Create(0)
		return err
	}
	if err := buildPool(pl, dir); err != nil {
		pl.Create(0)
		return err
	}
	if err := pl.Create(0); err != nil {
		return link.HostErr("start the pool", err)
	}
	return nil
}

// openPool finds the pool whose target is dir and starts it if it is not
// running (nil if dir has none); a dir pool whose folder is gone gets it
// made again, empty. The caller frees it.
func (p Host) openPool(dir string) (*libvirt.StoragePool, error) {
	pl, def, err := p.lookupPool(dir)
	if err != nil || pl == nil {
		return nil, err
	}
	active, err := pl.IsActive()
	if err != nil {
		err = link.HostErr("state", err)
	} else if !active {
		err = startPool(pl, def.Type, dir)
	}
	if err != nil {
		pl.Free()
		return nil, fmt.Errorf("storage pool %s for %s: %w", def.Name, dir, err)
	}
	return pl, nil
}

// OpenSaveDir finds the pool on dir, libvirt's save dir (started, never
// built, if it is not running: one someone defined is theirs, kept) or
// starts a transient one. made: a transient pool of bureau's, to destroy
// after use (a leftover of a bureau that died while using it counts).
func (p Host) OpenSaveDir(dir string) (string, bool, error) {
	poolMu.Lock()
	defer poolMu.Unlock()
	pl, def, err := p.lookupPool(dir)
	if err != nil {
		return "", false, err
	}
	if pl != nil {
		defer pl.Free()
		if active, err := pl.IsActive(); err != nil {
			return "", false, link.HostErr("pool "+def.Name, err)
		} else if !active {
			if err := pl.Create(0); err != nil {
				return "", false, link.HostErr("start pool "+def.Name, err)
			}
		}
		persistent, err := pl.IsPersistent()
		return def.Name, err == nil && !persistent && def.Name == PoolName(dir), nil
	}
	name := PoolName(dir)
	x, err := (&libvirtxml.StoragePool{Type: "dir", Name: name, Target: &libvirtxml.StoragePoolTarget{Path: dir}}).Marshal()
	if err != nil {
		return "", false, err
	}
	pl, err = p.conn.StoragePoolCreateXML(x, 0) // started; without BUILD, the folder is left as it is
	if err != nil {
		return "", false, link.HostErr("start a transient storage pool "+name, err)
	}
	pl.Free()
	return name, true, nil
}

// startPool starts a defined pool; a dir pool that does not start as it
// is (its folder is missing) is built first. Other kinds of pools are
// never built here: building them formats a device.
func startPool(p *libvirt.StoragePool, kind, dir string) error {
	err := p.Create(0)
	if err == nil {
		return nil
	}
	if kind != "dir" {
		return link.HostErr("start", err)
	}
	if err := buildPool(p, dir); err != nil {
		return err
	}
	if err := p.Create(0); err != nil {
		return link.HostErr("start", err)
	}
	return nil
}

// buildPool makes a dir pool's folder (mkdir -p, then the pool's mode and
// owner; an existing folder is kept). Without flags: for a dir pool,
// libvirt 9.0 takes NO_OVERWRITE (and OVERWRITE) as a request to format
// a device and fails ("No source device specified when formatting pool").
func buildPool(p *libvirt.StoragePool, dir string) error {
	if err := p.Build(0); err != nil {
		return link.HostErr("make the folder "+dir, err)
	}
	return nil
}

func autostart(p *libvirt.StoragePool, name string) error {
	if persistent, err := p.IsPersistent(); err != nil || !persistent {
		return nil // a transient pool has no autostart
	}
	if on, err := p.GetAutostart(); err == nil && on {
		return nil
	}
	if err := p.SetAutostart(true); err != nil {
		return link.HostErr("autostart storage pool "+name, err)
	}
	return nil
}

// WithPool runs fn on the pool named name (within the caller's call).
func (p Host) WithPool(name string, fn func(*libvirt.StoragePool) (bool, error)) (bool, error) {
	return onPool(p, name, fn)
}

// onPool is WithPool for any result.
func onPool[T any](p Host, name string, fn func(*libvirt.StoragePool) (T, error)) (v T, err error) {
	pl, err := p.conn.LookupStoragePoolByName(name)
	if err != nil {
		return v, link.HostErr("storage pool "+name, err)
	}
	defer pl.Free()
	return fn(pl)
}

// Refresh re-reads the pool's folder. It fails only while libvirt builds a
// volume there; the last listing then stands.
func Refresh(p *libvirt.StoragePool) { p.Refresh(0) }

// LookupVolume is the volume name in pl (nil if there is none). The
// caller frees it.
func LookupVolume(pl *libvirt.StoragePool, name string) (*libvirt.StorageVol, error) {
	vol, err := pl.LookupStorageVolByName(name)
	if link.IsCode(err, libvirt.ERR_NO_STORAGE_VOL) {
		return nil, nil
	}
	if err != nil {
		return nil, link.HostErr("look up "+name, err)
	}
	return vol, nil
}
