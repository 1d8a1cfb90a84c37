package desktop

import (
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"
)

// Limits on what a desktop may be given.
const (
	MinVCPUs, MaxVCPUs             = 1, 16
	MinMemoryMiB, MaxMemoryMiB     = 512, 65536
	MinDataDiskGiB, MaxDataDiskGiB = 1, 2048
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateName checks a desktop name: 1–63 characters of [a-z0-9-], not
// starting or ending with '-' (it becomes the guest's hostname).
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return &ValidationError{Field: "name", Message: "must be 1-63 characters of a-z, 0-9 and '-', not starting or ending with '-'"}
	}
	return nil
}

// Validate checks the sizes of a spec.
func (s Spec) Validate() error {
	checks := []struct {
		field     string
		v, lo, hi int
	}{
		{"vcpus", s.VCPUs, MinVCPUs, MaxVCPUs},
		{"memory_mib", s.MemoryMiB, MinMemoryMiB, MaxMemoryMiB},
		{"data_disk_gib", s.DataDiskGiB, MinDataDiskGiB, MaxDataDiskGiB},
	}
	for _, c := range checks {
		if c.v < c.lo || c.v > c.hi {
			return &ValidationError{Field: c.field, Message: fmt.Sprintf("must be between %d and %d, got %d", c.lo, c.hi, c.v)}
		}
	}
	return nil
}

// Idle timeout bounds, in seconds (0 = never hibernate when idle).
const (
	DefaultIdleTimeout = 1800
	MinIdleTimeout     = 60
	MaxIdleTimeout     = 7 * 24 * 3600
)

// DefaultKeyboardLayout is a new desktop's keyboard layout.
const DefaultKeyboardLayout = "us"

var layoutRE = regexp.MustCompile(`^[a-z]{2,3}$`)

// ValidateKeyboardLayout accepts an XKB layout name: two or three lower-case
// letters ("us", "de", "fr", "gb", "epo"…).
func ValidateKeyboardLayout(l string) error {
	if !layoutRE.MatchString(l) {
		return &ValidationError{Field: "keyboard_layout", Message: fmt.Sprintf("%q is not an XKB layout name (two or three lower-case letters, e.g. us, de, fr, gb)", l)}
	}
	return nil
}

// MinIdleTier is the shortest nap or sleep time, in seconds.
const MinIdleTier = 10

// ValidateIdleTiers checks a desktop's idle tiers together: each 0 (skip)
// or MinIdleTier to MaxIdleTimeout seconds, and each tier in use later than
// the one before it (nap, then sleep, then hibernation).
func ValidateIdleTiers(napAfter, sleepAfter, hibernateAfter int) error {
	if err := ValidateIdleTimeout(hibernateAfter); err != nil {
		return err
	}
	tiers := []struct {
		field string
		s     int
	}{{"nap_after_seconds", napAfter}, {"sleep_after_seconds", sleepAfter}, {"idle_timeout_seconds", hibernateAfter}}
	for i, t := range tiers[:2] {
		if t.s != 0 && (t.s < MinIdleTier || t.s > MaxIdleTimeout) {
			return &ValidationError{Field: t.field, Message: fmt.Sprintf("0 (skip this tier) or %d to %d seconds", MinIdleTier, MaxIdleTimeout)}
		}
		for _, later := range tiers[i+1:] {
			if t.s != 0 && later.s != 0 && later.s <= t.s {
				return &ValidationError{Field: t.field, Message: fmt.Sprintf("%d seconds is not before %s (%d): a desktop naps, then sleeps, then hibernates", t.s, later.field, later.s)}
			}
		}
	}
	return nil
}

// ValidateIdleTimeout checks an idle timeout in seconds.
func ValidateIdleTimeout(s int) error {
	if s != 0 && (s < MinIdleTimeout || s > MaxIdleTimeout) {
		return &ValidationError{Field: "idle_timeout_seconds", Message: fmt.Sprintf("0 (never) or %d to %d seconds", MinIdleTimeout, MaxIdleTimeout)}
	}
	return nil
}

// ValidateText checks free text a person or agent gives a thing (a
// token's name, a snapshot's description, a label): valid UTF-8 of at
// most max characters, without control characters (NUL, terminal escapes,
// carriage returns; newlines and tabs only where multiline) or the
// invisible characters that reorder text (bidirectional overrides), which
// would make a listing or a terminal show something other than what is
// stored.
func ValidateText(field, s string, max int, multiline bool) error {
	if !utf8.ValidString(s) {
		return &ValidationError{Field: field, Message: "must be valid UTF-8"}
	}
	if n := utf8.RuneCountInString(s); n > max {
		return &ValidationError{Field: field, Message: fmt.Sprintf("at most %d characters, got %d", max, n)}
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' {
			return &ValidationError{Field: field, Message: fmt.Sprintf("contains the control character %U: plain text only", r)}
		}
	}
	return nil
}
