package libvirt

import (
	"context"
	"time"

	"libvirt.org/go/libvirt"
)

// Suspend freezes a running VM; its RAM stays in host memory.
func (h *Hypervisor) Suspend(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.Suspend() })
	return err
}

// Resume unfreezes a suspended VM.
func (h *Hypervisor) Resume(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.Resume() })
	return err
}

// Hibernate saves the VM's RAM and device state to libvirt's managed save
// file and stops it; the next Start restores it with its programs running.
func (h *Hypervisor) Hibernate(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		return struct{}{}, d.ManagedSave(libvirt.DOMAIN_SAVE_RUNNING)
	})
	return err
}

// DiscardHibernation drops a hibernated VM's saved RAM: the next start is a
// cold boot.
func (h *Hypervisor) DiscardHibernation(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		has, err := d.HasManagedSaveImage(0)
		if err != nil || !has {
			return struct{}{}, err
		}
		return struct{}{}, d.ManagedSaveRemove(0)
	})
	return err
}

// SyncGuestClock sets the guest's clock to the host's, after a resume left
// it behind by the time the VM spent frozen or saved.
func (h *Hypervisor) SyncGuestClock(ctx context.Context, name string) error {
	return h.agent(ctx, name, map[string]any{"execute": "guest-set-time",
		"arguments": map[string]int64{"time": time.Now().UnixNano()}}, nil)
}

// ResizeDisk grows the disk backed by file of a running VM to bytes; the
// guest sees the new size at once.
func (h *Hypervisor) ResizeDisk(ctx context.Context, name, file string, bytes int64) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		return struct{}{}, d.BlockResize(file, uint64(bytes), libvirt.DOMAIN_BLOCK_RESIZE_BYTES)
	})
	return err
}

// CPUTime is the total CPU time the VM's vCPUs have used.
func (h *Hypervisor) CPUTime(ctx context.Context, name string) (time.Duration, error) {
	return withDomain(ctx, h, name, func(d *libvirt.Domain) (time.Duration, error) {
		info, err := d.GetInfo()
		if err != nil {
			return 0, err
		}
		return time.Duration(info.CpuTime), nil
	})
}
