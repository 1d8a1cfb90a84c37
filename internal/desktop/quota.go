package desktop

import (
	"fmt"
	"slices"
	"strings"
)

// Quota is what one owner may use in total. Zero means no limit.
type Quota struct {
	Owner        string
	Plan         string
	MaxDesktops  int
	MaxVCPUs     int
	MaxMemoryMiB int
	// MaxDiskGiB covers data disks and snapshots.
	MaxDiskGiB int
	// MaxSnapshots counts the snapshots of all the owner's desktops.
	MaxSnapshots int
}

// Plans are the built-in quotas; "free" is the free tier.
var Plans = map[string]Quota{
	"free":      {Plan: "free", MaxDesktops: 2, MaxVCPUs: 2, MaxMemoryMiB: 4096, MaxDiskGiB: 20, MaxSnapshots: 10},
	"team":      {Plan: "team", MaxDesktops: 10, MaxVCPUs: 16, MaxMemoryMiB: 65536, MaxDiskGiB: 500, MaxSnapshots: 100},
	"unlimited": {Plan: "unlimited"},
}

// PlanNames lists the built-in plans.
func PlanNames() []string {
	var out []string
	for n := range Plans {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Usage is what an owner uses now; disk in MiB so snapshots count exactly.
// Desktops in every state but deleted count, creating and error included.
type Usage struct {
	Desktops  int
	VCPUs     int
	MemoryMiB int
	DiskMiB   int
	Snapshots int
}

// Plus is u with a request's additions on top.
func (u Usage) Plus(add Usage) Usage {
	u.Desktops += add.Desktops
	u.VCPUs += add.VCPUs
	u.MemoryMiB += add.MemoryMiB
	u.DiskMiB += add.DiskMiB
	u.Snapshots += add.Snapshots
	return u
}

// QuotaError says which limit a request would pass.
type QuotaError struct {
	Limit      string
	Max, Would int
	Plan       string
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s limit is %d (plan %s); this would make it %d", e.Limit, e.Max, e.Plan, e.Would)
}

// Check returns a *QuotaError when usage u passes one of q's limits.
func (q Quota) Check(u Usage) error {
	for _, l := range []struct {
		name       string
		max, would int
	}{
		{"desktops", q.MaxDesktops, u.Desktops},
		{"vcpus", q.MaxVCPUs, u.VCPUs},
		{"memory_mib", q.MaxMemoryMiB, u.MemoryMiB},
		{"disk_gib", q.MaxDiskGiB, (u.DiskMiB + 1023) / 1024},
		{"snapshots", q.MaxSnapshots, u.Snapshots},
	} {
		if l.max > 0 && l.would > l.max {
			return &QuotaError{Limit: l.name, Max: l.max, Would: l.would, Plan: q.Plan}
		}
	}
	return nil
}

// ValidateQuota checks limits an admin sets.
func ValidateQuota(q Quota) error {
	if _, ok := Plans[q.Plan]; !ok && q.Plan != "custom" {
		return &ValidationError{Field: "plan", Message: "one of " + strings.Join(PlanNames(), ", ") + " or custom"}
	}
	for name, v := range map[string]int{"max_desktops": q.MaxDesktops, "max_vcpus": q.MaxVCPUs, "max_memory_mib": q.MaxMemoryMiB, "max_disk_gib": q.MaxDiskGiB,
		"max_snapshots": q.MaxSnapshots} {
		if v < 0 {
			return &ValidationError{Field: name, Message: "must be 0 (no limit) or more"}
		}
	}
	return nil
}
