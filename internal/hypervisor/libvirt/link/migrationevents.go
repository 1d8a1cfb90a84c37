package link

import (
	"sync"
	"time"

	"libvirt.org/go/libvirt"
)

// migrationEvents keeps, for one connection, what a migration's lifecycle
// events mean for bureau: a desktop that moves is never stopped, though
// both hosts report its domain starting, pausing, stopping and going away.
// (The migration itself is package moves'; its events arrive here.)
//
//   - destination: "started (migrated)" while the stream comes in (the
//     desktop still runs on the source): skipped; "resumed (migrated)" at
//     the switch-over: running (delivered). If the migration fails or is
//     aborted, the incoming domain stops ("stopped (failed)"): skipped.
//   - source: "suspended (migrated)" at the switch-over: skipped (the
//     destination resumes it; an aborted job resumes it here, delivered);
//     "stopped (migrated)": skipped, the desktop runs elsewhere. libvirt
//     9.0 sends no "undefined" for UNDEFINE_SOURCE (seen in e2e
//     TestHost2Migrate); one that comes within leftWindow of it is
//     skipped too, in case another version does.
//
// Events of one connection arrive in order, so per-connection state is
// enough. The zero value is ready.
type migrationEvents struct {
	mu       sync.Mutex
	incoming map[string]bool      // started (migrated), not yet resumed here
	left     map[string]time.Time // stopped (migrated) then
}

// leftWindow is how long after "stopped (migrated)" an "undefined" is
// taken for UNDEFINE_SOURCE's.
const leftWindow = time.Minute

// skip says whether ev, for domain name, is a migration's and not to be
// delivered as a change of the desktop.
func (m *migrationEvents) skip(name string, ev *libvirt.DomainEventLifecycle) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.incoming == nil {
		m.incoming, m.left = map[string]bool{}, map[string]time.Time{}
	}
	switch ev.Event {
	case libvirt.DOMAIN_EVENT_STARTED:
		delete(m.left, name)
		if libvirt.DomainEventStartedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_STARTED_MIGRATED {
			m.incoming[name] = true
			return true
		}
		delete(m.incoming, name)
	case libvirt.DOMAIN_EVENT_RESUMED:
		delete(m.incoming, name)
	case libvirt.DOMAIN_EVENT_SUSPENDED:
		return m.incoming[name] ||
			libvirt.DomainEventSuspendedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_SUSPENDED_MIGRATED
	case libvirt.DOMAIN_EVENT_STOPPED:
		if m.incoming[name] {
			delete(m.incoming, name)
			return true
		}
		if libvirt.DomainEventStoppedDetailType(ev.Detail) == libvirt.DOMAIN_EVENT_STOPPED_MIGRATED {
			for n, t := range m.left {
				if time.Since(t) >= leftWindow {
					delete(m.left, n)
				}
			}
			m.left[name] = time.Now()
			return true
		}
	case libvirt.DOMAIN_EVENT_UNDEFINED:
		left, ok := m.left[name]
		delete(m.left, name)
		return ok && time.Since(left) < leftWindow
	}
	return false
}
