package desktop

import (
	"fmt"
	"regexp"
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

// ValidateIdleTimeout checks an idle timeout in seconds.
func ValidateIdleTimeout(s int) error {
	if s != 0 && (s < MinIdleTimeout || s > MaxIdleTimeout) {
		return &ValidationError{Field: "idle_timeout_seconds", Message: fmt.Sprintf("0 (never) or %d to %d seconds", MinIdleTimeout, MaxIdleTimeout)}
	}
	return nil
}
