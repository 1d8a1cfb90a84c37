package pools

import (
	"path/filepath"
	"strings"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// DiskOf measures the filesystem of imagesDir on the host through a
// running pool: imagesDir's own, else one of bureau's under its parent
// (DATA_DIR). Its folder is re-read first so the figures are fresh.
func (p Host) DiskOf(imagesDir string) (total, free int64) {
	pl := p.diskPool(imagesDir)
	if pl == nil {
		return 0, 0
	}
	defer pl.Free()
	Refresh(pl)
	info, err := pl.GetInfo()
	if err != nil {
		return 0, 0
	}
	return int64(info.Capacity >> 20), int64(info.Available >> 20)
}

// diskPool is the running pool to measure imagesDir's filesystem by (nil
// if none). The caller frees it.
func (p Host) diskPool(imagesDir string) *libvirt.StoragePool {
	if pl, err := p.conn.LookupStoragePoolByName(PoolName(imagesDir)); err == nil {
		if _, ok := targetIs(pl, imagesDir); ok && running(pl) {
			return pl
		}
		pl.Free()
	}
	all, err := p.conn.ListAllStoragePools(libvirt.CONNECT_LIST_STORAGE_POOLS_ACTIVE)
	if err != nil {
		return nil
	}
	dataDir := filepath.Dir(imagesDir)
	var own, near *libvirt.StoragePool
	for i := range all {
		pl := &all[i]
		switch {
		case own == nil && hasTarget(pl, func(t string) bool { return t == imagesDir }):
			own = pl
		case near == nil && ours(pl) && hasTarget(pl, func(t string) bool { return strings.HasPrefix(t, dataDir+"/") }):
			near = pl
		default:
			pl.Free()
		}
	}
	if own != nil {
		if near != nil {
			near.Free()
		}
		return own
	}
	return near
}

// ours says whether pl is one of the pools bureau names (PoolName).
func ours(pl *libvirt.StoragePool) bool {
	name, err := pl.GetName()
	return err == nil && strings.HasPrefix(name, "bureau-")
}

// hasTarget says whether pl's target path passes is.
func hasTarget(pl *libvirt.StoragePool, is func(string) bool) bool {
	x, err := pl.GetXMLDesc(0)
	if err != nil {
		return false // gone meanwhile
	}
	var def libvirtxml.StoragePool
	if def.Unmarshal(x) != nil || def.Target == nil || def.Target.Path == "" {
		return false
	}
	return is(filepath.Clean(def.Target.Path))
}

func running(pl *libvirt.StoragePool) bool {
	active, err := pl.IsActive()
	return err == nil && active
}
