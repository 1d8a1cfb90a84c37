package domains

import (
	"context"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// Suspend freezes a running VM; its RAM stays in host memory.
func (ds *Domains) Suspend(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.Suspend() })
	return err
}

// Resume unfreezes a suspended VM.
func (ds *Domains) Resume(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.Resume() })
	return err
}

// Hibernate saves the VM's RAM and device state to libvirt's managed save
// file and stops it; the next Start restores it with its programs running.
func (ds *Domains) Hibernate(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		return struct{}{}, d.ManagedSave(libvirt.DOMAIN_SAVE_RUNNING)
	})
	return err
}

// DiscardHibernation drops a hibernated VM's saved RAM: the next start is a
// cold boot.
func (ds *Domains) DiscardHibernation(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		has, err := d.HasManagedSaveImage(0)
		if err != nil || !has {
			return struct{}{}, err
		}
		return struct{}{}, d.ManagedSaveRemove(0)
	})
	return err
}

// ResizeDisk grows the disk backed by file of a running VM to bytes; the
// guest sees the new size at once.
func (ds *Domains) ResizeDisk(ctx context.Context, name, file string, bytes int64) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		return struct{}{}, d.BlockResize(file, uint64(bytes), libvirt.DOMAIN_BLOCK_RESIZE_BYTES)
	})
	return err
}

// CPUTime is the total CPU time the VM's vCPUs have used.
func (ds *Domains) CPUTime(ctx context.Context, name string) (time.Duration, error) {
	return link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (time.Duration, error) {
		info, err := d.GetInfo()
		if err != nil {
			return 0, err
		}
		return time.Duration(info.CpuTime), nil
	})
}
