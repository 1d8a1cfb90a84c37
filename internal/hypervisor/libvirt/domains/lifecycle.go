package domains

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// Define creates or replaces the persistent definition of a desktop's VM.
// Without a UUID, an existing definition keeps its own.
func (ds *Domains) Define(ctx context.Context, c desktop.VMConfig) error {
	h, err := ds.link.On(ctx, c.Name)
	if err != nil {
		return err
	}
	conn, err := h.Connect(ctx)
	if err != nil {
		return err
	}
	_, err = link.Call(ctx, func() (struct{}, error) {
		if c.UUID == "" {
			if old, err := conn.LookupDomainByName(c.Name); err == nil {
				c.UUID, err = old.GetUUIDString()
				old.Free()
				if err != nil {
					return struct{}{}, err
				}
			}
		}
		xml, err := DomainXML(c)
		if err != nil {
			return struct{}{}, err
		}
		dom, err := conn.DomainDefineXMLFlags(xml, libvirt.DOMAIN_DEFINE_VALIDATE)
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, dom.Free()
	})
	if err != nil {
		return fmt.Errorf("define %s: %w", c.Name, link.Translate(c.Name, err))
	}
	return nil
}

// Start boots a defined, shut-off VM (or restores its hibernation).
func (ds *Domains) Start(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := GiveFiles(d); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, d.Create()
	})
	return err
}

// StartPaused starts the VM with its vCPUs stopped: a hibernated VM is
// restored from its saved RAM and stays paused until Resume.
func (ds *Domains) StartPaused(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := GiveFiles(d); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, d.CreateWithFlags(libvirt.DOMAIN_START_PAUSED)
	})
	return err
}

// Shutdown asks the guest to power off and returns at once: through the
// guest agent when it answers, else by the ACPI power button.
func (ds *Domains) Shutdown(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_GUEST_AGENT); err == nil {
			return struct{}{}, nil
		}
		return struct{}{}, d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
	})
	return err
}

// Destroy powers the VM off at once. A VM that is not running is fine.
func (ds *Domains) Destroy(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		active, err := d.IsActive()
		if err != nil || !active {
			return struct{}{}, err
		}
		return struct{}{}, d.Destroy()
	})
	return err
}

// Reboot asks the guest to reboot. First "systemctl reboot" through the
// guest agent: PID 1 queues it at once, even while the guest is still
// booting. The agent's own guest-shutdown runs "shutdown -r +0", which
// asks logind to schedule the reboot, and a reboot asked for early in a
// boot was seen lost that way, as can an ACPI button press; those two are
// the fallbacks, for guests without systemd or without an agent.
func (ds *Domains) Reboot(ctx context.Context, name string) error {
	if _, err := ds.guest.GuestExecStart(ctx, name, desktop.Exec{Argv: []string{"/bin/systemctl", "reboot"}}); err == nil {
		return nil
	}
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := d.Reboot(libvirt.DOMAIN_REBOOT_GUEST_AGENT); err == nil {
			return struct{}{}, nil
		}
		return struct{}{}, d.Reboot(libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN)
	})
	return err
}

// Undefine removes the VM's definition with its snapshot metadata and saved
// state; a missing domain is not an error.
func (ds *Domains) Undefine(ctx context.Context, name string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		// Desktops boot with BIOS and take no checkpoints: no NVRAM or
		// checkpoint flags needed.
		return struct{}{}, d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE | libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
	})
	if errors.Is(err, link.ErrNoDomain) {
		return nil
	}
	return err
}

// State reports a VM's state; a missing domain is desktop.VMMissing.
func (ds *Domains) State(ctx context.Context, name string) (desktop.VMState, error) {
	st, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (desktop.VMState, error) {
		return domainState(d)
	})
	if errors.Is(err, link.ErrNoDomain) {
		return desktop.VMMissing, nil
	}
	return st, err
}

// List returns the state of every bureau domain by name.
// On several hosts, it lists them all; those that did not answer are named
// in a *desktop.UnreachableError, returned with what the others listed.
func (ds *Domains) List(ctx context.Context) (map[string]desktop.VMState, error) {
	return ds.listAll(ctx)
}

// listOwn lists the domains of h's own host.
func listOwn(ctx context.Context, h *link.Conn) (map[string]desktop.VMState, error) {
	conn, err := h.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return link.Call(ctx, func() (map[string]desktop.VMState, error) {
		doms, err := conn.ListAllDomains(0)
		if err != nil {
			return nil, fmt.Errorf("list domains: %w", err)
		}
		out := map[string]desktop.VMState{}
		for _, d := range doms {
			name, err := d.GetName()
			if err == nil && link.IsBureauDomain(name) {
				if st, err := domainState(&d); err == nil {
					out[name] = st
				}
			}
			d.Free()
		}
		return out, nil
	})
}

// listAll is List over this host and every remote one. Hosts that did not
// answer are named in a *desktop.UnreachableError returned with the
// domains of those that did.
func (ds *Domains) listAll(ctx context.Context) (map[string]desktop.VMState, error) {
	h := ds.link
	out, err := listOwn(ctx, h)
	if err != nil || !h.HasRemoteHosts() {
		return out, err
	}
	uris, err := h.RemoteHosts(ctx)
	if err != nil {
		return nil, err
	}
	var lost []string
	var why []string
	for host := range uris {
		r, err := h.Remote(ctx, host)
		var vms map[string]desktop.VMState
		if err == nil {
			vms, err = listOwn(ctx, r)
		}
		if err != nil {
			lost, why = append(lost, host), append(why, host+": "+err.Error())
			continue
		}
		for name, st := range vms {
			out[name] = st
		}
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		sort.Strings(why)
		return out, &desktop.UnreachableError{Hosts: lost, Err: errors.New(strings.Join(why, "; "))}
	}
	return out, nil
}

// domainState is a domain's state; a shut-off domain with a managed save
// image is hibernated (VMSaved), whatever libvirt remembers of why it stopped.
func domainState(d *libvirt.Domain) (desktop.VMState, error) {
	s, reason, err := d.GetState()
	if err != nil {
		return "", err
	}
	st := VMState(s, reason)
	if st == desktop.VMShutoff {
		if saved, err := d.HasManagedSaveImage(0); err == nil && saved {
			return desktop.VMSaved, nil
		}
	}
	return st, nil
}

// VMState is the one place libvirt's domain states become bureau's.
func VMState(s libvirt.DomainState, reason int) desktop.VMState {
	switch s {
	case libvirt.DOMAIN_RUNNING, libvirt.DOMAIN_BLOCKED:
		return desktop.VMRunning
	case libvirt.DOMAIN_PAUSED, libvirt.DOMAIN_PMSUSPENDED:
		return desktop.VMPaused
	case libvirt.DOMAIN_SHUTDOWN:
		return desktop.VMShutdown
	case libvirt.DOMAIN_CRASHED:
		return desktop.VMCrashed
	case libvirt.DOMAIN_SHUTOFF:
		if libvirt.DomainShutoffReason(reason) == libvirt.DOMAIN_SHUTOFF_CRASHED {
			return desktop.VMCrashed
		}
		return desktop.VMShutoff
	}
	return desktop.VMShutoff
}
