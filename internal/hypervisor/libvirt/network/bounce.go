package network

import (
	"context"
	"errors"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// linkDownFor is how long a bounced NIC stays down: long enough for the
// guest's network manager to drop its lease.
const linkDownFor = 2 * time.Second

// BounceLink takes a running VM's NIC down and up again: the guest loses
// carrier, drops its address and asks DHCP anew (after it moved to a
// host with another subnet).
func (nw *Network) BounceLink(ctx context.Context, name string) error {
	if err := nw.setLink(ctx, name, "down"); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(linkDownFor):
	}
	// Up again even when ctx ended: a NIC left down cuts the desktop off.
	up, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return nw.setLink(up, name, "up")
}

// setLink sets the link state of a running VM's one NIC.
func (nw *Network) setLink(ctx context.Context, name, state string) error {
	_, err := link.WithDomain(ctx, nw.link, name, func(d *libvirt.Domain) (struct{}, error) {
		s, err := d.GetXMLDesc(0)
		if err != nil {
			return struct{}{}, err
		}
		var dom libvirtxml.Domain
		if err := dom.Unmarshal(s); err != nil {
			return struct{}{}, err
		}
		if dom.Devices == nil || len(dom.Devices.Interfaces) != 1 {
			return struct{}{}, errors.New("the VM has no single NIC")
		}
		nic := dom.Devices.Interfaces[0]
		nic.Link = &libvirtxml.DomainInterfaceLink{State: state}
		x, err := nic.Marshal()
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, d.UpdateDeviceFlags(x, libvirt.DOMAIN_DEVICE_MODIFY_LIVE)
	})
	return err
}
