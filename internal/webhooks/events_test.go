package webhooks

import (
	"slices"
	"strings"
	"testing"
)

func TestTypesOf(t *testing.T) {
	for ev, want := range map[string][]string{
		"paused":             {"desktop.paused"},
		"resumed":            {"desktop.resumed"},
		"started":            {"desktop.started"},
		"snapshot_created":   {"desktop.snapshot_created"},
		"hibernate_failed":   {"desktop.hibernate_failed", "operation.failed"},
		"backup_completed":   {"backup.completed"},
		"backup_failed":      {"backup.failed", "operation.failed"},
		"backups_pruned":     {"backup.pruned"},
		"help_requested":     {"help.requested"},
		"help_answered":      {"help.answered"},
		"help_expired":       {"help.expired"},
		"approval_requested": {"approval.requested"},
		"approved":           {"approval.approved"},
		"denied":             {"approval.denied"},
		"control_taken":      {"control.taken"},
		"control_returned":   {"control.returned"},
		"webhook_disabled":   {"webhook.disabled"},
		"":                   nil,
	} {
		if got := TypesOf(ev); !slices.Equal(got, want) {
			t.Errorf("TypesOf(%q) = %v, want %v", ev, got, want)
		}
	}
	// Every type an event becomes is known (so it can be subscribed to
	// exactly), but for desktop events bureau may add later.
	for _, ev := range []string{"paused", "backup_failed", "help_requested", "approved", "control_taken", "migrate_failed"} {
		for _, typ := range TypesOf(ev) {
			if err := ValidPattern(typ); err != nil {
				t.Errorf("%s: %v", ev, err)
			}
		}
	}
}

func TestPatterns(t *testing.T) {
	for _, p := range []string{"*", "desktop.*", "help.*", "desktop.started", "quota.refused", "operation.failed", "webhook.ping"} {
		if err := ValidPattern(p); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
	for _, p := range []string{"", "desktop", "desktops.*", "desktop.nope", "help.*.*", "*.started", "d*"} {
		if err := ValidPattern(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if err := ValidPattern("help.nope"); err == nil || !strings.Contains(err.Error(), "requested") {
		t.Errorf("unknown help type: %v", err)
	}
	for _, c := range []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{[]string{"*"}, "desktop.started", true},
		{[]string{"desktop.*"}, "desktop.started", true},
		{[]string{"desktop.*"}, "backup.failed", false},
		{[]string{"desktop.started"}, "desktop.stopped", false},
		{[]string{"help.*", "desktop.stopped"}, "desktop.stopped", true},
		{[]string{"desk.*"}, "desktop.started", false},
	} {
		if got := Matches(c.patterns, c.typ); got != c.want {
			t.Errorf("Matches(%v, %s) = %v", c.patterns, c.typ, got)
		}
	}
	// One message per endpoint: the most specific type it asked for.
	if got := firstMatch([]string{"operation.failed", "backup.*"}, TypesOf("backup_failed")); got != "backup.failed" {
		t.Errorf("first match: %s", got)
	}
	if got := firstMatch([]string{"operation.failed"}, TypesOf("backup_failed")); got != "operation.failed" {
		t.Errorf("operation.failed: %s", got)
	}
}
