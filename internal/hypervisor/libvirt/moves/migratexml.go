package moves

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// migrationXML is the definition a domain gets on the destination (its
// migratable XML, with its NIC's tap renamed when tap is given: on one
// kernel both ends' taps exist at once) and the disks the migration
// copies: every writable disk with a source. Read-only ones (seed.iso)
// must be on the destination already.
func migrationXML(xml, tap string) (string, []string, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(xml); err != nil {
		return "", nil, fmt.Errorf("domain xml: %w", err)
	}
	disks := copiedDisks(&dom)
	if tap == "" {
		return xml, disks, nil // as libvirt wrote it
	}
	if dom.Devices == nil || len(dom.Devices.Interfaces) != 1 {
		n := 0
		if dom.Devices != nil {
			n = len(dom.Devices.Interfaces)
		}
		return "", nil, fmt.Errorf("tap %s: the domain has %d network interfaces, not one", tap, n)
	}
	nic := &dom.Devices.Interfaces[0]
	if nic.Target == nil {
		nic.Target = &libvirtxml.DomainInterfaceTarget{}
	}
	nic.Target.Dev = tap
	out, err := dom.Marshal()
	if err != nil {
		return "", nil, fmt.Errorf("domain xml: %w", err)
	}
	return out, disks, nil
}

// copiedDisks are the target names of a domain's writable disks that have
// a source: those a migration with NON_SHARED_INC copies.
func copiedDisks(dom *libvirtxml.Domain) []string {
	if dom.Devices == nil {
		return nil
	}
	var out []string
	for _, d := range dom.Devices.Disks {
		if d.ReadOnly != nil || d.Shareable != nil || d.Target == nil || !hasSource(d.Source) {
			continue
		}
		out = append(out, d.Target.Dev)
	}
	return out
}

func hasSource(s *libvirtxml.DomainDiskSource) bool {
	switch {
	case s == nil:
		return false
	case s.File != nil:
		return s.File.File != ""
	case s.Block != nil:
		return s.Block.Dev != ""
	}
	return s.Network != nil || s.Volume != nil || s.NVME != nil
}

// DiskSizes gives the virtual size in bytes of each disk a migration
// copies, by target name (vda, vdb): the destination's files must have
// these sizes.
func (m *Moves) DiskSizes(ctx context.Context, name string) (map[string]int64, error) {
	return link.WithDomain(ctx, m.link, name, func(d *libvirt.Domain) (map[string]int64, error) {
		xml, err := d.GetXMLDesc(0)
		if err != nil {
			return nil, err
		}
		var dom libvirtxml.Domain
		if err := dom.Unmarshal(xml); err != nil {
			return nil, fmt.Errorf("domain xml: %w", err)
		}
		out := map[string]int64{}
		for _, dev := range copiedDisks(&dom) {
			info, err := d.GetBlockInfo(dev, 0)
			if err != nil {
				return nil, fmt.Errorf("disk %s: %w", dev, err)
			}
			out[dev] = int64(info.Capacity)
		}
		return out, nil
	})
}
