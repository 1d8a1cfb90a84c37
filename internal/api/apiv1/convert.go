package apiv1

import (
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// FromDesktop is d as the API shows it (nil for nil).
func FromDesktop(d *desktop.Desktop) *Desktop {
	if d == nil {
		return nil
	}
	return &Desktop{
		ID: d.ID, Owner: d.Owner, Name: d.Name,
		Image: d.Image, VCPUs: d.VCPUs, MemoryMiB: d.MemoryMiB, DataDiskGiB: d.DataDiskGiB,
		State: string(d.State), DesiredState: string(d.DesiredState), LastError: d.LastError,
		Operation: d.Operation, OperationStep: d.Step, OperationStartedAt: d.OperationStartedAt,
		Accelerator: d.Accelerator, DataDiskPath: d.DataDiskPath,
		IdleTimeoutSeconds: d.IdleTimeoutSeconds, NapAfterSeconds: d.NapAfterSeconds, SleepAfterSeconds: d.SleepAfterSeconds,
		RestartOnCrash: d.RestartOnCrash,
		Network:        FromNetworkPolicy(d.Network),
		KeyboardLayout: d.KeyboardLayout, IP: d.NetIP, Host: d.Host,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, DeletedAt: d.DeletedAt,
	}
}

// FromNetworkPolicy is p as the API shows it.
func FromNetworkPolicy(p desktop.NetworkPolicy) NetworkPolicy {
	return NetworkPolicy{AllowOut: p.AllowOut, DenyOut: p.DenyOut, DenyDNS: p.DenyDNS}
}

// ToNetworkPolicy is the domain policy a request body asks for.
func (p NetworkPolicy) ToNetworkPolicy() desktop.NetworkPolicy {
	return desktop.NetworkPolicy{AllowOut: p.AllowOut, DenyOut: p.DenyOut, DenyDNS: p.DenyDNS}
}

// FromEvent is e as the API shows it.
func FromEvent(e *desktop.Event) *Event {
	if e == nil {
		return nil
	}
	return &Event{ID: e.ID, DesktopID: e.DesktopID, Type: e.Type, Message: e.Message, Actor: e.Actor, CreatedAt: e.CreatedAt}
}

// FromImage is im as the API shows it.
func FromImage(im *desktop.Image) *Image {
	if im == nil {
		return nil
	}
	return &Image{Name: im.Name, OS: im.OS, Version: im.Version, Path: im.Path, SizeBytes: im.SizeBytes,
		SHA256: im.SHA256, RecipeHash: im.RecipeHash, Source: im.Source, CreatedAt: im.CreatedAt}
}

// FromSnapshot is sn as the API shows it.
func FromSnapshot(sn *desktop.Snapshot) *Snapshot {
	if sn == nil {
		return nil
	}
	return &Snapshot{ID: sn.ID, DesktopID: sn.DesktopID, Name: sn.Name, Description: sn.Description,
		Scope: sn.Scope, Memory: sn.Memory, Parent: sn.Parent, SizeBytes: sn.SizeBytes,
		CreatedAt: sn.CreatedAt, RevertedAt: sn.RevertedAt}
}

// FromToken is t's record without its hash.
func FromToken(t *desktop.Token) *Token {
	if t == nil {
		return nil
	}
	return &Token{ID: t.ID, Owner: t.Owner, Name: t.Name, Scope: t.Scope, CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, DesktopID: t.DesktopID,
		ComputerOnly: t.ComputerOnly, ParentID: t.ParentID, Kind: TokenKind(t), Role: t.Role, Member: t.Member}
}

// TokenKind is "session" for a sign-in, else "api".
func TokenKind(t *desktop.Token) string {
	if t.Session {
		return "session"
	}
	return "api"
}

// FromConsoleToken is t's record without its hash.
func FromConsoleToken(t *desktop.ConsoleToken) *ConsoleToken {
	if t == nil {
		return nil
	}
	return &ConsoleToken{ID: t.ID, DesktopID: t.DesktopID, Owner: t.Owner, ViewOnly: t.ViewOnly, ScreenOnly: t.ScreenOnly,
		CreatedBy: t.CreatedBy, Name: t.Name, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
		RevokedAt: t.RevokedAt, RevokeReason: t.RevokeReason}
}

// FromShare is s's record without its hash.
func FromShare(s *desktop.Share) *Share {
	if s == nil {
		return nil
	}
	return &Share{ID: s.ID, DesktopID: s.DesktopID, Owner: s.Owner, Port: s.Port, ReadOnly: s.ReadOnly,
		CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, RevokedAt: s.RevokedAt}
}

// FromSecret is s's record (it never holds the value).
func FromSecret(s *desktop.Secret) *Secret {
	if s == nil {
		return nil
	}
	return &Secret{Name: s.Name, Scope: s.Scope, DesktopID: s.DesktopID, Owner: s.Owner,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Desktops: s.Desktops}
}

// FromQuota is q as the API shows it.
func FromQuota(q desktop.Quota) Quota {
	return Quota{Owner: q.Owner, Plan: q.Plan, MaxDesktops: q.MaxDesktops, MaxVCPUs: q.MaxVCPUs,
		MaxMemoryMiB: q.MaxMemoryMiB, MaxDiskGiB: q.MaxDiskGiB, MaxSnapshots: q.MaxSnapshots}
}

// ToQuota is the domain quota a request body asks for.
func (q Quota) ToQuota() desktop.Quota {
	return desktop.Quota{Owner: q.Owner, Plan: q.Plan, MaxDesktops: q.MaxDesktops, MaxVCPUs: q.MaxVCPUs,
		MaxMemoryMiB: q.MaxMemoryMiB, MaxDiskGiB: q.MaxDiskGiB, MaxSnapshots: q.MaxSnapshots}
}

// FromUsage is u as the API shows it.
func FromUsage(u desktop.Usage) Usage {
	return Usage{Desktops: u.Desktops, VCPUs: u.VCPUs, MemoryMiB: u.MemoryMiB, DiskMiB: u.DiskMiB, Snapshots: u.Snapshots}
}

// FromStats is st as the API shows it.
func FromStats(st *desktop.VMStats) *Stats {
	if st == nil {
		return nil
	}
	out := &Stats{CPUTimeNs: st.CPUTimeNs, VCPUs: st.VCPUs, MemoryMaxKiB: st.MemoryMaxKiB,
		MemoryCurrentKiB: st.MemoryCurrentKiB, MemoryRSSKiB: st.MemoryRSSKiB, MemoryAvailableKiB: st.MemoryAvailableKiB,
		MemoryUnusedKiB: st.MemoryUnusedKiB, MemoryUsableKiB: st.MemoryUsableKiB,
		Disks: make([]Disk, len(st.Disks)), Networks: make([]NetStats, len(st.Networks))}
	for i, d := range st.Disks {
		out.Disks[i] = Disk{Name: d.Name, Path: d.Path, ReadBytes: d.ReadBytes, WriteBytes: d.WriteBytes,
			ReadRequests: d.ReadRequests, WriteRequests: d.WriteRequests,
			AllocationBytes: d.AllocationBytes, CapacityBytes: d.CapacityBytes}
	}
	for i, n := range st.Networks {
		out.Networks[i] = NetStats{Name: n.Name, RxBytes: n.RxBytes, TxBytes: n.TxBytes}
	}
	return out
}

// SetReadiness fills what bureau follows of a running desktop beside its
// record: whether it is ready, since when, how far it has come and what
// it waits for.
func (d *Desktop) SetReadiness(ready bool, at time.Time, up, waiting string) {
	d.Ready, d.Up, d.WaitingFor = ready, up, waiting
	d.ReadyAt = nil
	if ready {
		d.ReadyAt = &at
	}
}
