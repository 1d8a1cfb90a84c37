package manager

import (
	"net/netip"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Config holds the manager's settings.
type Config struct {
	DataDir      string
	DefaultImage string
	Accelerator  desktop.Accelerator
	// TCGCacheMiB is QEMU's translation cache per desktop under TCG.
	TCGCacheMiB int
	OSDiskGiB   int
	StopTimeout time.Duration
	// OpTimeout bounds one background operation (create, start, stop…).
	OpTimeout time.Duration
	// ReconcileEvery is how often every desktop is compared with its VM
	// to repair missed events and finish interrupted operations (0 = 1 min).
	ReconcileEvery time.Duration
	// IdleCheck is how often idle desktops are looked for (0 = 15 s);
	// IdleCPU the share of one host CPU below which a guest counts as idle
	// (0 = 0.3: an idle Xfce desktop under TCG stays well below it).
	IdleCheck time.Duration
	IdleCPU   float64
	// TrimAfter is how long a running desktop is quiet (as for idle
	// hibernation) before its guest's page cache is dropped once, so free
	// page reporting returns that RAM to the host (0 = 2 min, <0 = never).
	TrimAfter time.Duration
	// NapAfter and SleepAfter are new desktops' idle tiers when the create
	// request names none, in seconds (0 = skip the tier).
	NapAfter, SleepAfter int
	// TrimSettle is how long free page reporting is given to return what a
	// trim before a nap or sleep freed (0 = 3 s: the guest reports in
	// batches about every 2 s).
	TrimSettle time.Duration
	// SaveAsIs hibernates a running desktop without dropping its guest's
	// page cache first (see Hibernate).
	SaveAsIs bool
	// HostMemory, when set, is read at every idle check: under
	// MemoryLowMiB available, the longest-idle desktop moves down a tier
	// that frees memory (pressure.go).
	HostMemory   HostMemory
	MemoryLowMiB int
	// Reserve, when set, holds disk space for bureau's own state, given up
	// when a write of it fails for space.
	Reserve Reserve
	// Capacity, when set, refuses desktops the host has no room for.
	Capacity Capacity
	// DefaultPlan is the quota plan of owners without their own ("free").
	DefaultPlan string
	// TemplateSettle is how long a template's session may settle before
	// its RAM is saved (0 = 15 s).
	TemplateSettle time.Duration
	// Backups turns backups on: their records and keys (nil Records:
	// off, every backup call answers unavailable).
	Backups BackupsConfig
	// WarmSpares is how many desktops of each ready template are kept
	// restored ahead, paused, for creates to take (spares.go; 0 = none).
	WarmSpares int
	// CPUHold, when set, is held while a warm create restores and applies
	// its identity: it keeps the host's background work (KSM's scan) off
	// the CPU for those seconds.
	CPUHold CPUHold
	// Failpoints make the process die at named steps (tests only).
	Failpoints Failpoints
	// Observe, when set, is told how long each finished operation took.
	Observe func(op string, took time.Duration, err error)
	// Network is the virtual network desktops join; VMGroup the host group
	// their QEMU processes run in (libvirt's QEMU group).
	Network string
	VMGroup int
	// Firewall, when set, applies desktops' network policies; Addresses
	// reserves their addresses on Subnet, the desktops' network.
	Firewall  Firewall
	Addresses Addresses
	Subnet    netip.Prefix
	// Sites, when set, reaches remote hosts desktops may be created on.
	Sites Sites
	// Placement places desktops among hosts (place.go).
	Placement Placement
	// Mover, when set, moves running desktops between hosts (migrate.go);
	// HostAddress is this host's address other hosts' migration streams
	// connect to (none: desktops are not moved here). Moved is told of
	// each desktop that now runs on another host.
	Mover       Mover
	HostAddress string
	// ColdMover, when set, moves desktops that do not run, or have
	// snapshots, between hosts (coldmove.go).
	ColdMover ColdMover
	// Drains marks hosts draining (drain.go).
	Drains HostDrains
	Moved  func(id, host string)
}
