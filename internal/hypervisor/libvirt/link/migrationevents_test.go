package link

import (
	"testing"
	"time"

	"libvirt.org/go/libvirt"
)

// TestMigrationEventsAreNotTheDesktopStopping replays what both hosts
// report for a migration and a cancelled one (libvirt 9.0, seen in e2e
// TestHost2Migrate: source suspended/migrated, stopped/migrated and no
// undefined; destination started/migrated, defined/added,
// resumed/migrated, or stopped/failed when aborted).
func TestMigrationEventsAreNotTheDesktopStopping(t *testing.T) {
	ev := func(e libvirt.DomainEventType, detail int) *libvirt.DomainEventLifecycle {
		return &libvirt.DomainEventLifecycle{Event: e, Detail: detail}
	}
	type step struct {
		ev   *libvirt.DomainEventLifecycle
		skip bool
	}
	for name, steps := range map[string][]step{
		"source": {
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), true},
			// Later, a real undefine is delivered.
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), false},
		},
		"source, its undefine long after": {
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), false},
		},
		"destination": {
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_DEFINED, int(libvirt.DOMAIN_EVENT_DEFINED_ADDED)), false}, // dropped by onLifecycle
			{ev(libvirt.DOMAIN_EVENT_RESUMED, int(libvirt.DOMAIN_EVENT_RESUMED_MIGRATED)), false},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_SHUTDOWN)), false},
		},
		"failed on the destination": {
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_FAILED)), true},
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_BOOTED)), false},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_FAILED)), false},
		},
		"aborted on the source": {
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_RESUMED, int(libvirt.DOMAIN_EVENT_RESUMED_MIGRATED)), false},
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_PAUSED)), false},
		},
	} {
		var m migrationEvents
		if name == "source, its undefine long after" {
			m.skip("bureau-a", ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_MIGRATED)))
			m.left["bureau-a"] = time.Now().Add(-leftWindow)
		}
		for i, s := range steps {
			if got := m.skip("bureau-a", s.ev); got != s.skip {
				t.Errorf("%s, step %d (%s): skip %v, want %v", name, i, s.ev, got, s.skip)
			}
			// Another domain's events are its own.
			if m.skip("bureau-b", ev(libvirt.DOMAIN_EVENT_UNDEFINED, 0)) {
				t.Errorf("%s, step %d: bureau-b's undefine skipped", name, i)
			}
		}
	}
}
