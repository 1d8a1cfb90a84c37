package apiv1

import "github.com/bureau/bureau/internal/hosts"

// FromHost is h on the wire.
func FromHost(h *hosts.Host) Host {
	return Host{Name: h.Name, URI: h.URI, Labels: h.Labels, State: string(h.State), Hostname: h.Hostname, LibvirtVersion: h.LibvirtVersion,
		Accelerator: h.Accelerator, CPUs: h.CPUs, MemoryMiB: h.MemoryMiB, FreeMemoryMiB: h.FreeMemoryMiB,
		DiskMiB: h.DiskMiB, FreeDiskMiB: h.FreeDiskMiB, LastError: h.LastError,
		SSHAddress: h.SSH.Address, SSHHostKey: h.SSH.HostKey, Bridge: h.Network.Bridge, Subnet: h.Network.Subnet, Ready: h.Ready, ReadyError: h.ReadyError,
		Draining: h.Draining, LastSeenAt: h.LastSeenAt, CreatedAt: h.CreatedAt}
}
