package libvirt

import (
	"context"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// Define creates or replaces the persistent definition of a desktop's VM.
// Without a UUID, an existing definition keeps its own.
func (h *Hypervisor) Define(ctx context.Context, c desktop.VMConfig) error {
	h, err := h.on(ctx, c.Name)
	if err != nil {
		return err
	}
	conn, err := h.connect(ctx)
	if err != nil {
		return err
	}
	_, err = call(ctx, func() (struct{}, error) {
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
		return fmt.Errorf("define %s: %w", c.Name, translate(c.Name, err))
	}
	return nil
}

// Start boots a defined, shut-off VM (or restores its hibernation).
func (h *Hypervisor) Start(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := giveFiles(d); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, d.Create()
	})
	return err
}

// StartPaused starts the VM with its vCPUs stopped: a hibernated VM is
// restored from its saved RAM and stays paused until Resume.
func (h *Hypervisor) StartPaused(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := giveFiles(d); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, d.CreateWithFlags(libvirt.DOMAIN_START_PAUSED)
	})
	return err
}

// Shutdown asks the guest to power off and returns at once: through the
// guest agent when it answers, else by the ACPI power button.
func (h *Hypervisor) Shutdown(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_GUEST_AGENT); err == nil {
			return struct{}{}, nil
		}
		return struct{}{}, d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
	})
	return err
}

// Destroy powers the VM off at once. A VM that is not running is fine.
func (h *Hypervisor) Destroy(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
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
func (h *Hypervisor) Reboot(ctx context.Context, name string) error {
	if _, err := h.GuestExecStart(ctx, name, desktop.Exec{Argv: []string{"/bin/systemctl", "reboot"}}); err == nil {
		return nil
	}
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		if err := d.Reboot(libvirt.DOMAIN_REBOOT_GUEST_AGENT); err == nil {
			return struct{}{}, nil
		}
		return struct{}{}, d.Reboot(libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN)
	})
	return err
}

// Undefine removes the VM's definition with its snapshot metadata and saved
// state; a missing domain is not an error.
func (h *Hypervisor) Undefine(ctx context.Context, name string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		// Desktops boot with BIOS and take no checkpoints: no NVRAM or
		// checkpoint flags needed.
		return struct{}{}, d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE | libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
	})
	if errors.Is(err, ErrNoDomain) {
		return nil
	}
	return err
}

// State reports a VM's state; a missing domain is desktop.VMMissing.
func (h *Hypervisor) State(ctx context.Context, name string) (desktop.VMState, error) {
	st, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (desktop.VMState, error) {
		return domainState(d)
	})
	if errors.Is(err, ErrNoDomain) {
		return desktop.VMMissing, nil
	}
	return st, err
}

// List returns the state of every bureau domain by name.
// On several hosts, it lists them all; those that did not answer are named
// in a *desktop.UnreachableError, returned with what the others listed.
func (h *Hypervisor) List(ctx context.Context) (map[string]desktop.VMState, error) {
	return h.listAll(ctx)
}

// listOwn lists the domains of this connection's host.
func (h *Hypervisor) listOwn(ctx context.Context) (map[string]desktop.VMState, error) {
	conn, err := h.connect(ctx)
	if err != nil {
		return nil, err
	}
	return call(ctx, func() (map[string]desktop.VMState, error) {
		doms, err := conn.ListAllDomains(0)
		if err != nil {
			return nil, fmt.Errorf("list domains: %w", err)
		}
		out := map[string]desktop.VMState{}
		for _, d := range doms {
			name, err := d.GetName()
			if err == nil && isBureauDomain(name) {
				if st, err := domainState(&d); err == nil {
					out[name] = st
				}
			}
			d.Free()
		}
		return out, nil
	})
}

// domainState is a domain's state; a shut-off domain with a managed save
// image is hibernated (VMSaved), whatever libvirt remembers of why it stopped.
func domainState(d *libvirt.Domain) (desktop.VMState, error) {
	s, reason, err := d.GetState()
	if err != nil {
		return "", err
	}
	st := vmState(s, reason)
	if st == desktop.VMShutoff {
		if saved, err := d.HasManagedSaveImage(0); err == nil && saved {
			return desktop.VMSaved, nil
		}
	}
	return st, nil
}

// vmState is the one place libvirt's domain states become bureau's.
func vmState(s libvirt.DomainState, reason int) desktop.VMState {
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

func (h *Hypervisor) onLifecycle(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventLifecycle) {
	name, err := d.GetName()
	if err != nil || !isBureauDomain(name) {
		return
	}
	if h.migrations.skip(name, ev) {
		h.log.Debug("migration event not delivered", "domain", name, "event", ev.String())
		return
	}
	out := desktop.VMEvent{Domain: name, Reason: ev.String()}
	switch ev.Event {
	case libvirt.DOMAIN_EVENT_STARTED, libvirt.DOMAIN_EVENT_RESUMED:
		out.State = desktop.VMRunning
	case libvirt.DOMAIN_EVENT_SUSPENDED, libvirt.DOMAIN_EVENT_PMSUSPENDED:
		out.State = desktop.VMPaused
		out.IOError = ev.Event == libvirt.DOMAIN_EVENT_SUSPENDED &&
			libvirt.DomainEventSuspendedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_SUSPENDED_IOERROR
	case libvirt.DOMAIN_EVENT_STOPPED:
		out.State = desktop.VMShutoff
		if libvirt.DomainEventStoppedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_STOPPED_SAVED {
			out.State = desktop.VMSaved
		}
		if libvirt.DomainEventStoppedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_STOPPED_CRASHED ||
			libvirt.DomainEventStoppedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_STOPPED_FAILED {
			out.State = desktop.VMCrashed
		}
	case libvirt.DOMAIN_EVENT_CRASHED:
		out.State = desktop.VMCrashed
	case libvirt.DOMAIN_EVENT_UNDEFINED:
		out.State = desktop.VMMissing
	default:
		return
	}
	select {
	case h.events <- out:
	default:
		h.log.Warn("lifecycle event dropped: consumer too slow; desktops will be reconciled", "domain", name, "state", out.State)
		h.signalResync()
	}
}
