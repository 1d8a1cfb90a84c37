package moves

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// A cold move takes a desktop that is not running (stopped, or
// hibernated with a managed save image; possibly with internal qcow2
// snapshots) to another host: the caller copies its files (CopyFile,
// which carries the snapshots inside the qcow2 files), then DefineOn
// defines the domain there with what libvirt keeps beside the definition,
// and UndefineOn removes it from the host it left. Hosts are named
// explicitly ("" or "local": bureau's own), never found through
// Remotes.Where.

// coldDomain is what a host keeps of a domain that is not running, as
// another host is to get it.
type coldDomain struct {
	xml   string         // its persistent definition, the tap renamed
	snaps []coldSnapshot // parents first
	saved bool           // it has a managed save image
}

// DefineOn defines domain name on host to as it is defined on host from:
// its persistent definition (same name and UUID) with its NIC's tap
// renamed to tap ("" keeps it), every snapshot's metadata (parents first,
// the current one current; the definitions they keep with tap too), and
// its managed save image if it has one, copied from from's save dir to
// to's and made the domain's managed save image there (see
// makeManagedSave: QEMU starts on to, paused, so the domain's files must
// already be there). progress gets that copy's progress (CopyFile's).
//
// The domain must not be running on from, nor be defined on to (an error
// wrapping os.ErrExist). On any failure what was made on to is removed
// (the domain undefined with its managed save image and snapshot
// metadata); from is only read. Call it on bureau's own connection.
func (m *Moves) DefineOn(ctx context.Context, name, from, to, tap string, progress func(done, total int64)) error {
	from, to = link.HostName(from), link.HostName(to)
	if from == to {
		return fmt.Errorf("define %s on host %s: it moves from there", name, to)
	}
	src, err := m.link.OnHost(ctx, from)
	if err != nil {
		return fmt.Errorf("define %s on host %s: %w", name, to, err)
	}
	dst, err := m.link.OnHost(ctx, to)
	if err != nil {
		return fmt.Errorf("define %s on host %s: %w", name, to, err)
	}
	cd, err := link.DomainOn(ctx, src, name, func(d *libvirt.Domain) (*coldDomain, error) { return readCold(d, tap) })
	if err != nil {
		return fmt.Errorf("define %s on host %s: host %s: %w", name, to, from, err)
	}
	_, err = link.DomainOn(ctx, dst, name, func(*libvirt.Domain) (struct{}, error) { return struct{}{}, nil })
	if err == nil {
		return fmt.Errorf("define %s on host %s: it is already defined there: %w", name, to, os.ErrExist)
	} else if !errors.Is(err, link.ErrNoDomain) {
		return fmt.Errorf("define %s on host %s: %w", name, to, err)
	}

	err = defineCold(ctx, dst, name, cd)
	if err == nil && cd.saved {
		err = m.moveSaveImage(ctx, dst, name, from, to, tap, progress)
	}
	if err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), link.DefaultCallTimeout)
		defer cancel()
		if uerr := undefineMade(uctx, dst, name); uerr != nil {
			err = fmt.Errorf("%w (and what was made there was not removed: %v)", err, uerr)
		}
		return fmt.Errorf("define %s on host %s: %w", name, to, err)
	}
	return nil
}

// UndefineOn removes domain name's definition from host ("" or "local":
// bureau's own) with its managed save image and snapshot
// metadata, never its files (the qcow2 internal snapshots stay in them).
// A domain that is not there is fine; a running one is an error.
func (m *Moves) UndefineOn(ctx context.Context, name, host string) error {
	host = link.HostName(host)
	hv, err := m.link.OnHost(ctx, host)
	if err != nil {
		return fmt.Errorf("undefine %s on host %s: %w", name, host, err)
	}
	_, err = link.DomainOn(ctx, hv, name, func(d *libvirt.Domain) (struct{}, error) {
		if active, err := d.IsActive(); err != nil {
			return struct{}{}, link.HostErr("state", err)
		} else if active {
			return struct{}{}, fmt.Errorf("it is running: %w", desktop.ErrUnavailable)
		}
		return struct{}{}, undefineAll(d)
	})
	if errors.Is(err, link.ErrNoDomain) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("undefine %s on host %s: %w", name, host, err)
	}
	return nil
}

// readCold reads what a host keeps of a domain that is not running.
func readCold(d *libvirt.Domain, tap string) (*coldDomain, error) {
	if active, err := d.IsActive(); err != nil {
		return nil, link.HostErr("state", err)
	} else if active {
		return nil, fmt.Errorf("it is running, and only a domain that is not moves cold: %w", desktop.ErrUnavailable)
	}
	x, err := d.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE | libvirt.DOMAIN_XML_SECURE | libvirt.DOMAIN_XML_MIGRATABLE)
	if err != nil {
		return nil, link.HostErr("read the definition", err)
	}
	if x, err = domainWithTap(x, tap); err != nil {
		return nil, err
	}
	saved, err := d.HasManagedSaveImage(0)
	if err != nil {
		return nil, link.HostErr("managed save image", err)
	}
	list, err := d.ListAllSnapshots(0)
	if err != nil {
		return nil, link.HostErr("list snapshots", err)
	}
	defer func() {
		for i := range list {
			list[i].Free()
		}
	}()
	snaps := make([]coldSnapshot, 0, len(list))
	for i := range list {
		sx, err := list[i].GetXMLDesc(libvirt.DOMAIN_SNAPSHOT_XML_SECURE)
		if err != nil {
			return nil, link.HostErr("read a snapshot", err)
		}
		current, err := list[i].IsCurrent(0)
		if err != nil {
			return nil, link.HostErr("read a snapshot", err)
		}
		s, err := snapshotWithTap(sx, tap, current)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	if snaps, err = parentsFirst(snaps); err != nil {
		return nil, err
	}
	return &coldDomain{xml: x, snaps: snaps, saved: saved}, nil
}

// defineCold defines the domain on dst with its snapshots' metadata.
func defineCold(ctx context.Context, dst *link.Conn, name string, cd *coldDomain) error {
	conn, err := dst.Connect(ctx)
	if err != nil {
		return err
	}
	_, err = link.Call(ctx, func() (struct{}, error) {
		dom, err := conn.DomainDefineXMLFlags(cd.xml, libvirt.DOMAIN_DEFINE_VALIDATE)
		if err != nil {
			return struct{}{}, link.HostErr("define", err)
		}
		defer dom.Free()
		if err := dropStaleSave(dom); err != nil {
			return struct{}{}, err
		}
		for _, s := range cd.snaps {
			flags := libvirt.DOMAIN_SNAPSHOT_CREATE_REDEFINE
			if s.current {
				flags |= libvirt.DOMAIN_SNAPSHOT_CREATE_CURRENT
			}
			snap, err := dom.CreateSnapshotXML(s.xml, flags)
			if err != nil {
				return struct{}{}, link.HostErr("snapshot "+s.name, err)
			}
			snap.Free()
		}
		return struct{}{}, nil
	})
	return err
}

// dropStaleSave removes a save image found at the managed save path of a
// domain just defined: one an earlier move cut short left (libvirt would
// restore it when the domain starts). A readable one and one that is not
// (cut short while being copied) alike.
func dropStaleSave(d *libvirt.Domain) error {
	_, err := d.ManagedSaveGetXMLDesc(0)
	if link.IsCode(err, libvirt.ERR_OPERATION_INVALID) || link.IsCode(err, libvirt.ERR_NO_SUPPORT) {
		return nil // none ("domain does not have managed save image"), or a driver without
	}
	if rerr := d.ManagedSaveRemove(0); rerr != nil {
		return link.HostErr("remove a stale managed save image", rerr)
	}
	return nil
}

// undefineMade removes what DefineOn made on dst: the domain (stopped
// first if a restore left it running), its managed save image and its
// snapshot metadata.
func undefineMade(ctx context.Context, dst *link.Conn, name string) error {
	_, err := link.DomainOn(ctx, dst, name, func(d *libvirt.Domain) (struct{}, error) {
		if active, err := d.IsActive(); err != nil {
			return struct{}{}, link.HostErr("state", err)
		} else if active {
			if err := d.Destroy(); err != nil {
				return struct{}{}, link.HostErr("stop", err)
			}
		}
		return struct{}{}, undefineAll(d)
	})
	if errors.Is(err, link.ErrNoDomain) {
		return nil
	}
	return err
}

// undefineAll undefines a domain that is not running with what libvirt
// keeps beside its definition: managed save image, snapshot metadata,
// NVRAM. A driver that keeps no NVRAM (libvirt's test driver) refuses
// that flag: it is tried again without.
func undefineAll(d *libvirt.Domain) error {
	const all = libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE | libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA | libvirt.DOMAIN_UNDEFINE_NVRAM
	err := d.UndefineFlags(all)
	if link.IsCode(err, libvirt.ERR_INVALID_ARG) {
		err = d.UndefineFlags(all &^ libvirt.DOMAIN_UNDEFINE_NVRAM)
	}
	if err != nil {
		return link.HostErr("undefine", err)
	}
	return nil
}
