package webhooks

import (
	"fmt"
	"slices"
	"strings"
)

// Families of webhook types, and the types known in each (a desktop.*
// message may also carry a desktop event type not listed here).
var catalog = map[string][]string{
	"desktop": {"created", "create_requested", "clone_requested", "started", "stopped", "rebooted", "paused", "resumed",
		"hibernated", "napping", "sleeping", "deleted", "reimaged", "reverted", "revert_requested", "restore_requested",
		"migrated", "reconciled", "snapshot_created", "snapshot_deleted", "data_disk_resized", "idle_timeout_set",
		"restart_policy_set", "network_policy_set", "keyboard_layout_set", "create_failed", "start_failed", "stop_failed",
		"reboot_failed", "pause_failed", "resume_failed", "hibernate_failed", "sleep_failed", "prewake_failed",
		"delete_failed", "reimage_failed", "revert_failed", "migrate_failed", "snapshot_failed"},
	"operation": {"failed"},
	"backup":    {"started", "completed", "failed", "verified", "deleted", "skipped", "scheduled", "unscheduled", "pruned"},
	"help":      {"requested", "answered", "expired"},
	"approval":  {"requested", "approved", "denied"},
	"control":   {"taken", "returned"},
	"quota":     {"refused"},
	"webhook":   {"ping", "disabled"},
}

// TypeOperationFailed is sent, beside its own type, for every desktop
// event that says an operation failed (<op>_failed).
const TypeOperationFailed = "operation.failed"

// Types lists every known webhook type, sorted.
func Types() []string {
	var out []string
	for fam, names := range catalog {
		for _, n := range names {
			out = append(out, fam+"."+n)
		}
	}
	slices.Sort(out)
	return out
}

// TypesOf are the webhook types a desktop event type is sent as, the
// most specific first: an endpoint gets one message per event, of the
// first type its patterns match.
func TypesOf(eventType string) []string {
	var t string
	switch eventType {
	case "":
		return nil
	case "help_requested", "help_answered", "help_expired":
		t = "help." + strings.TrimPrefix(eventType, "help_")
	case "approval_requested":
		t = "approval.requested"
	case "approved", "denied":
		t = "approval." + eventType
	case "control_taken", "control_returned":
		t = "control." + strings.TrimPrefix(eventType, "control_")
	case "backups_pruned":
		t = "backup.pruned"
	case "webhook_disabled":
		return []string{"webhook.disabled"}
	default:
		if rest, ok := strings.CutPrefix(eventType, "backup_"); ok {
			t = "backup." + rest
		} else {
			t = "desktop." + eventType
		}
	}
	if strings.HasSuffix(eventType, "_failed") {
		return []string{t, TypeOperationFailed}
	}
	return []string{t}
}

// ValidPattern checks one of an endpoint's event patterns: a known type
// (desktop.started), a family's glob (desktop.*) or * for everything.
func ValidPattern(p string) error {
	if p == "*" {
		return nil
	}
	fam, name, ok := strings.Cut(p, ".")
	names, known := catalog[fam]
	switch {
	case !ok || !known:
		return fmt.Errorf("%q: not a known type or pattern (families: %s; e.g. desktop.started, help.*, *)", p, strings.Join(families(), ", "))
	case name == "*", slices.Contains(names, name):
		return nil
	}
	return fmt.Errorf("%q: no such type in %s (known: %s, or %s.*)", p, fam, strings.Join(names, ", "), fam)
}

func families() []string {
	var out []string
	for f := range catalog {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Matches says whether a webhook type matches one of patterns.
func Matches(patterns []string, typ string) bool {
	for _, p := range patterns {
		if p == "*" || p == typ {
			return true
		}
		if fam, ok := strings.CutSuffix(p, ".*"); ok && strings.HasPrefix(typ, fam+".") {
			return true
		}
	}
	return false
}

// firstMatch is the first of types that patterns match ("" if none).
func firstMatch(patterns, types []string) string {
	for _, t := range types {
		if Matches(patterns, t) {
			return t
		}
	}
	return ""
}
