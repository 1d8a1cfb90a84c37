package moves

import (
	"fmt"
	"sort"

	"libvirt.org/go/libvirtxml"
)

// The definitions a cold move carries to the destination host
// (coldmove.go): the domain's, each snapshot's and its save image's, each
// with the NIC's tap renamed (every host names a desktop's tap its own
// way, and QEMU started from any of them creates the tap it names).

// renameTap gives the domain's network interface the host-side device
// name tap ("" keeps it). A domain without one has nothing to rename; one
// with several is refused (which would be the desktop's?).
func renameTap(dom *libvirtxml.Domain, tap string) error {
	if tap == "" || dom.Devices == nil || len(dom.Devices.Interfaces) == 0 {
		return nil
	}
	if n := len(dom.Devices.Interfaces); n != 1 {
		return fmt.Errorf("tap %s: the domain has %d network interfaces, not one", tap, n)
	}
	nic := &dom.Devices.Interfaces[0]
	if nic.Target == nil {
		nic.Target = &libvirtxml.DomainInterfaceTarget{}
	}
	nic.Target.Dev = tap
	return nil
}

// domainWithTap is a domain definition (or a save image's) with its tap
// renamed.
func domainWithTap(xml, tap string) (string, error) {
	if tap == "" {
		return xml, nil // as libvirt wrote it
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(xml); err != nil {
		return "", fmt.Errorf("domain xml: %w", err)
	}
	if err := renameTap(&dom, tap); err != nil {
		return "", err
	}
	out, err := dom.Marshal()
	if err != nil {
		return "", fmt.Errorf("domain xml: %w", err)
	}
	return out, nil
}

// coldSnapshot is one snapshot's metadata as the destination gets it
// (the snapshot itself is inside the qcow2 files).
type coldSnapshot struct {
	name, parent string
	current      bool
	xml          string // the tap renamed
}

// snapshotWithTap reads a snapshot's XML (SnapshotGetXMLDesc) and renames
// the tap of the definitions it keeps: <domain>, which a revert starts
// QEMU from, and <inactiveDomain> (a snapshot of a running domain).
func snapshotWithTap(xml, tap string, current bool) (coldSnapshot, error) {
	var s libvirtxml.DomainSnapshot
	if err := s.Unmarshal(xml); err != nil {
		return coldSnapshot{}, fmt.Errorf("snapshot xml: %w", err)
	}
	out := coldSnapshot{name: s.Name, current: current, xml: xml}
	if s.Parent != nil {
		out.parent = s.Parent.Name
	}
	if tap == "" {
		return out, nil
	}
	if s.Domain != nil {
		if err := renameTap(s.Domain, tap); err != nil {
			return coldSnapshot{}, fmt.Errorf("snapshot %s: %w", s.Name, err)
		}
	}
	if s.InactiveDomain != nil {
		if err := renameTap(&s.InactiveDomain.Domain, tap); err != nil {
			return coldSnapshot{}, fmt.Errorf("snapshot %s: %w", s.Name, err)
		}
	}
	x, err := s.Marshal()
	if err != nil {
		return coldSnapshot{}, fmt.Errorf("snapshot %s: %w", s.Name, err)
	}
	out.xml = x
	return out, nil
}

// parentsFirst orders snapshots so that each comes after its parent:
// libvirt redefines a snapshot only once its parent is there. Roots and
// siblings keep their order by name. A parent that is not among them, or
// parents in a loop, is an error.
func parentsFirst(snaps []coldSnapshot) ([]coldSnapshot, error) {
	sorted := append([]coldSnapshot(nil), snaps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	index := make(map[string]int, len(sorted))
	for i, s := range sorted {
		if _, dup := index[s.name]; dup {
			return nil, fmt.Errorf("snapshot %s: listed twice", s.name)
		}
		index[s.name] = i
	}
	const (
		unseen = iota
		visiting
		placed
	)
	state := make([]int, len(sorted))
	out := make([]coldSnapshot, 0, len(sorted))
	var place func(i int) error
	place = func(i int) error {
		switch state[i] {
		case placed:
			return nil
		case visiting:
			return fmt.Errorf("snapshot %s: its parents form a loop", sorted[i].name)
		}
		state[i] = visiting
		if p := sorted[i].parent; p != "" {
			j, ok := index[p]
			if !ok {
				return fmt.Errorf("snapshot %s: its parent %s is not among the domain's snapshots", sorted[i].name, p)
			}
			if err := place(j); err != nil {
				return err
			}
		}
		state[i] = placed
		out = append(out, sorted[i])
		return nil
	}
	for i := range sorted {
		if err := place(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}
