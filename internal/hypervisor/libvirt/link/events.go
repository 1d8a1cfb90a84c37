package link

import (
	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// Events delivers lifecycle changes of domains named "bureau-…".
func (c *Conn) Events() <-chan desktop.VMEvent { return c.events }

// Resync is signalled when events may have been missed.
func (c *Conn) Resync() <-chan struct{} { return c.resync }

func (c *Conn) signalResync() {
	select {
	case c.resync <- struct{}{}:
	default:
	}
}

func (c *Conn) onLifecycle(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventLifecycle) {
	name, err := d.GetName()
	if err != nil || !IsBureauDomain(name) {
		return
	}
	if c.migrations.skip(name, ev) {
		c.log.Debug("migration event not delivered", "domain", name, "event", ev.String())
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
	case c.events <- out:
	default:
		c.log.Warn("lifecycle event dropped: consumer too slow; desktops will be reconciled", "domain", name, "state", out.State)
		c.signalResync()
	}
}
