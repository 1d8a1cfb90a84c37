// Package placement chooses the host a new desktop runs on, as Nova's
// scheduler does: filters drop the hosts that cannot take it (down, not
// ready, wrong labels or accelerator, no memory or disk left once what
// bureau's own desktops hold there is counted), then weights rank the
// rest (free memory after reservations, free disk, fewest desktops). It
// does no I/O: the caller gives it the hosts as last seen and the load
// its own records show, and takes the final reservation in the same
// transaction as the desktop's insert (Policy.Fits with a fresh Load).
package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Host is one candidate: what the hosts registry last saw of it and what
// bureau's desktops hold there.
type Host struct {
	Name string
	// Up: its libvirtd answered the last check; Ready: bureau's network
	// and firewall are in place there. Why says what is not.
	Up, Ready bool
	Why       string
	// Draining: its desktops are being moved off; it takes none.
	Draining    bool
	Accelerator string
	Labels      map[string]string
	// MemoryMiB is its RAM; AvailableMiB what it reported free (page
	// cache counted as free) at its last check.
	MemoryMiB, AvailableMiB int64
	// FreeDiskMiB is what its data directory's filesystem had free at its
	// last check; 0 when not measured yet (the disk filter then passes).
	FreeDiskMiB int64
	Load
}

// Load is what bureau's own records say its desktops take on a host.
type Load struct {
	// Desktops counts the live (not deleted) desktops there.
	Desktops int
	// CommittedMiB is the memory of those that hold RAM now (not stopped,
	// hibernated, crashed or failed).
	CommittedMiB int64
	// PendingMiB is the memory of those being created, started or
	// resumed: not yet in what the host last reported.
	PendingMiB int64
	// Creating counts those being created: each takes about a new
	// desktop's disk, not yet in what the host last reported.
	Creating int
}

// Request is what a new desktop needs of its host.
type Request struct {
	MemoryMiB int64
	// DiskMiB is the host disk it takes at once (OS overlay, seed; data
	// disks are sparse).
	DiskMiB int64
	// Labels the host must carry, every one with the same value.
	Labels map[string]string
	// Accelerator, when set, is the one the host must offer.
	Accelerator string
	// Skip holds hosts already refused for this request, and why: they
	// filled up between placement and the record (see Policy.Fits).
	Skip map[string]string
}

// Policy is how much of a host desktops may be given.
type Policy struct {
	// MemoryRatio is the share of a host's RAM its desktops may be given
	// in all (1.5 = 150%: guests rarely touch all of theirs, and KSM
	// merges what they share). 0 means 1.
	MemoryRatio float64
	// ReserveMiB stays for the host itself, of its RAM and of what it
	// reports free; DiskReserveMiB stays free on its disk.
	ReserveMiB, DiskReserveMiB int64
}

// Refusal says why one host cannot take a request.
type Refusal struct{ Host, Why string }

// NoHostError: no host can take the request; Refusals say why, host by
// host.
type NoHostError struct{ Refusals []Refusal }

func (e *NoHostError) Error() string {
	if len(e.Refusals) == 0 {
		return "no host to place it on"
	}
	parts := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		parts[i] = r.Host + ": " + r.Why
	}
	return "no host can take it (" + strings.Join(parts, "; ") + ")"
}

// Fits says why h cannot take r, or nil when it can.
func (p Policy) Fits(h Host, r Request) error {
	if why, ok := r.Skip[h.Name]; ok {
		return fmt.Errorf("full as it was recorded there: %s", why)
	}
	switch {
	case !h.Up:
		return fmt.Errorf("unreachable: %s", orUnknown(h.Why))
	case !h.Ready:
		return fmt.Errorf("not ready for desktops: %s", orUnknown(h.Why))
	case h.Draining:
		return fmt.Errorf("draining: its desktops are moving off it")
	case r.Accelerator != "" && h.Accelerator != r.Accelerator:
		return fmt.Errorf("offers %s, not %s", orUnknown(h.Accelerator), r.Accelerator)
	}
	if miss := missingLabels(h.Labels, r.Labels); miss != "" {
		return fmt.Errorf("labels: %s", miss)
	}
	if allowed := p.allowedMiB(h); h.CommittedMiB+r.MemoryMiB > allowed {
		return fmt.Errorf("memory: its desktops hold %d MiB of the %d MiB they may be given; %d MiB asked",
			h.CommittedMiB, allowed, r.MemoryMiB)
	}
	if free := h.AvailableMiB - h.PendingMiB - p.ReserveMiB; r.MemoryMiB > free {
		return fmt.Errorf("memory: %d MiB free after reservations (%d MiB reported, %d MiB for desktops starting, %d MiB kept for the host); %d MiB asked",
			max(free, 0), h.AvailableMiB, h.PendingMiB, p.ReserveMiB, r.MemoryMiB)
	}
	if h.FreeDiskMiB > 0 {
		if free := h.FreeDiskMiB - int64(h.Creating)*r.DiskMiB - p.DiskReserveMiB; r.DiskMiB > free {
			return fmt.Errorf("disk: %d MiB free after reservations (%d MiB reported, %d desktops being created, %d MiB kept free); %d MiB asked",
				max(free, 0), h.FreeDiskMiB, h.Creating, p.DiskReserveMiB, r.DiskMiB)
		}
	}
	return nil
}

// allowedMiB is the memory h's desktops may be given in all.
func (p Policy) allowedMiB(h Host) int64 {
	ratio := p.MemoryRatio
	if ratio <= 0 {
		ratio = 1
	}
	return int64(float64(h.MemoryMiB)*ratio) - p.ReserveMiB
}

// FreeMiB is the memory h has left for a new desktop: the lesser of what
// its desktops may still be given and what it has free, both after
// reservations.
func (p Policy) FreeMiB(h Host) int64 {
	return min(p.allowedMiB(h)-h.CommittedMiB, h.AvailableMiB-h.PendingMiB-p.ReserveMiB)
}

func missingLabels(have, want map[string]string) string {
	var miss []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, ok := have[k]
		switch {
		case !ok:
			miss = append(miss, fmt.Sprintf("no %s", k))
		case v != want[k]:
			miss = append(miss, fmt.Sprintf("%s=%s, not %s", k, v, want[k]))
		}
	}
	return strings.Join(miss, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
