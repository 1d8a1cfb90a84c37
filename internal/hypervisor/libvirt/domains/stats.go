package domains

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

const statsTypes = libvirt.DOMAIN_STATS_CPU_TOTAL | libvirt.DOMAIN_STATS_BALLOON | libvirt.DOMAIN_STATS_VCPU |
	libvirt.DOMAIN_STATS_INTERFACE | libvirt.DOMAIN_STATS_BLOCK

// Stats returns the resource figures of every running bureau VM by name,
// on this host and every remote one. Remote hosts that do not answer are
// left out (their desktops have no figures this time) and logged.
func (ds *Domains) Stats(ctx context.Context) (map[string]*desktop.VMStats, error) {
	h := ds.link
	out, err := statsOwn(ctx, h)
	if err != nil || !h.HasRemoteHosts() {
		return out, err
	}
	uris, err := h.RemoteHosts(ctx)
	if err != nil {
		h.Log().Warn("statistics of remote hosts' desktops not read", "err", err)
		return out, nil
	}
	for host := range uris {
		r, err := h.Remote(ctx, host)
		var vms map[string]*desktop.VMStats
		if err == nil {
			vms, err = statsOwn(ctx, r)
		}
		if err != nil {
			h.Log().Debug("statistics of a remote host's desktops not read", "host", host, "err", err)
			continue
		}
		for name, st := range vms {
			out[name] = st
		}
	}
	return out, nil
}

// statsOwn is Stats of the VMs of h's own connection.
func statsOwn(ctx context.Context, h *link.Conn) (map[string]*desktop.VMStats, error) {
	conn, err := h.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return link.Call(ctx, func() (map[string]*desktop.VMStats, error) {
		all, err := conn.GetAllDomainStats(nil, statsTypes, libvirt.CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)
		if err != nil {
			return nil, fmt.Errorf("domain stats: %w", err)
		}
		out := map[string]*desktop.VMStats{}
		for _, s := range all {
			name, err := s.Domain.GetName()
			if err == nil && link.IsBureauDomain(name) {
				out[name] = convertStats(s)
			}
			s.Domain.Free()
		}
		return out, nil
	})
}

// DomainStats returns one running VM's resource figures.
func (ds *Domains) DomainStats(ctx context.Context, name string) (*desktop.VMStats, error) {
	h, err := ds.link.On(ctx, name)
	if err != nil {
		return nil, err
	}
	conn, err := h.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return link.WithDomain(ctx, h, name, func(d *libvirt.Domain) (*desktop.VMStats, error) {
		all, err := conn.GetAllDomainStats([]*libvirt.Domain{d}, statsTypes, 0)
		if err != nil {
			return nil, err
		}
		if len(all) != 1 {
			return nil, fmt.Errorf("domain %s: no statistics", name)
		}
		return convertStats(all[0]), nil
	})
}

func convertStats(s libvirt.DomainStats) *desktop.VMStats {
	out := &desktop.VMStats{Disks: []desktop.DiskStats{}, Networks: []desktop.NetStats{}}
	if s.Cpu != nil {
		out.CPUTimeNs = s.Cpu.Time
	}
	out.VCPUs = len(s.Vcpu)
	if b := s.Balloon; b != nil {
		out.MemoryMaxKiB, out.MemoryCurrentKiB, out.MemoryRSSKiB = b.Maximum, b.Current, b.Rss
		out.MemoryAvailableKiB, out.MemoryUnusedKiB, out.MemoryUsableKiB = b.Available, b.Unused, b.Usable
	}
	for _, b := range s.Block {
		out.Disks = append(out.Disks, desktop.DiskStats{Name: b.Name, Path: b.Path, ReadBytes: b.RdBytes, WriteBytes: b.WrBytes,
			ReadRequests: b.RdReqs, WriteRequests: b.WrReqs, AllocationBytes: b.Allocation, CapacityBytes: b.Capacity})
	}
	for _, n := range s.Net {
		out.Networks = append(out.Networks, desktop.NetStats{Name: n.Name, RxBytes: n.RxBytes, TxBytes: n.TxBytes})
	}
	return out
}
