// Package domains is desktops' VMs as libvirt domains: their definition
// (DomainXML, domainxml.go), lifecycle and state (lifecycle.go), power
// (power.go), snapshots with memory and of live disks (snapshot.go), save
// images (saveimage.go), the files QEMU is given (ownership.go), resource
// figures (stats.go) and memory given back to the host (reclaim.go).
package domains

import (
	"github.com/bureau/bureau/internal/hypervisor/libvirt/guestchan"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
)

// Domains is bureau's domains on every host: each call goes to the host
// the domain runs on.
type Domains struct {
	link *link.Conn
	// guest is asked to reboot first (Reboot).
	guest *guestchan.Agent
}

// New is the domains c routes to; guest is their guest agent.
func New(c *link.Conn, guest *guestchan.Agent) *Domains { return &Domains{link: c, guest: guest} }
