// Package desktop is bureau's domain core: what a desktop is, which states it
// moves through, and the errors every other package speaks in. It imports
// nothing internal and no third-party code.
package desktop

import (
	"strings"
	"time"
)

// Spec is what a caller asks for when creating a desktop.
type Spec struct {
	Image       string
	VCPUs       int
	MemoryMiB   int
	DataDiskGiB int
}

// Desktop is one persistent Linux desktop: a VM plus its disks.
type Desktop struct {
	ID    string
	Owner string
	Name  string
	Spec

	State        State
	DesiredState State
	LastError    string
	// Operation is the multi-step operation in flight, recorded before it
	// starts so a restart can finish or undo it.
	Operation string
	// Step is how far Operation got (recorded before each step that a
	// restart must know about, and each a caller waits through).
	Step string
	// OperationStartedAt is when Operation began; nil when none runs.
	OperationStartedAt *time.Time
	// Version counts state writes; each write names the version it read.
	Version int64

	Accelerator string
	Dir         string
	// DataDiskPath is where the data disk lives; after a delete that kept it,
	// this says where to find it.
	DataDiskPath string
	// IdleTimeoutSeconds: a running desktop with no console viewers, no API
	// actions and an idle guest CPU for this long is hibernated; 0 = never.
	IdleTimeoutSeconds int
	// NapAfterSeconds and SleepAfterSeconds are the idle tiers before
	// hibernation (see StateNapping): quiet this long, the desktop naps,
	// then sleeps; 0 skips the tier.
	NapAfterSeconds   int
	SleepAfterSeconds int
	// RestartOnCrash starts the desktop again when its QEMU process dies.
	RestartOnCrash bool
	// Network is what the desktop may reach outside (see NetworkPolicy).
	Network NetworkPolicy
	// KeyboardLayout is the guest's XKB keyboard layout ("us", "de", …):
	// set in the guest by bureau, and what typed text is mapped to keys for.
	KeyboardLayout string
	// VMUID is the host user its QEMU runs as: one per desktop, so one
	// desktop's QEMU cannot read another's disks (0 = not yet given one).
	VMUID int
	// NetIP is its address on the desktops' network: reserved for its MAC
	// in DHCP, and the only one the firewall lets it send from.
	NetIP string
	// Host is the host it runs on (LocalHost: the one bureau runs on).
	Host string
	// RenewAddress: it was moved to another host while hibernated, and
	// its saved RAM still holds the old host's address; after its next
	// wake its NIC is bounced so the guest asks the new host's DHCP.
	RenewAddress bool

	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt *time.Time
}

// DomainName is the libvirt domain name of a desktop.
func (d *Desktop) DomainName() string { return domainPrefix + d.ID }

const domainPrefix = "bureau-"

// LocalHost is the host bureau itself runs on.
const LocalHost = "local"

// Remote says whether the desktop runs on another host than bureau's.
func (d *Desktop) Remote() bool { return d.Host != "" && d.Host != LocalHost }

// IDOfDomain is the id of the desktop whose VM is named domain.
func IDOfDomain(domain string) (string, bool) {
	id, ok := strings.CutPrefix(domain, domainPrefix)
	return id, ok && id != "" && !strings.ContainsAny(id, "/.\\")
}

// Event is one entry of a desktop's history.
type Event struct {
	ID        string
	DesktopID string
	Type      string
	Message   string
	Actor     string
	CreatedAt time.Time
}

// Image is a registered base image desktops boot from.
type Image struct {
	Name       string
	OS         string
	Version    string
	Path       string
	SizeBytes  int64
	SHA256     string
	RecipeHash string
	Source     string
	CreatedAt  time.Time
}

// VMConfig is everything a hypervisor needs to define a desktop's VM. It is
// plain data so the hypervisor adapter needs no knowledge of the database.
type VMConfig struct {
	Name        string
	UUID        string
	VCPUs       int
	MemoryMiB   int
	Accelerator Accelerator
	OSDisk      string
	DataDisk    string
	SeedISO     string
	SerialLog   string
	// VNCSocket is the unix socket QEMU serves the display on; VNC is never
	// exposed on a network port.
	VNCSocket string
	// TCGCacheMiB sizes QEMU's translation cache under TCG (0 = QEMU's
	// default, 1 GiB), which every running desktop fills and keeps resident.
	TCGCacheMiB int
	// Network is the virtual network the VM's NIC joins and Tap the name of
	// its host-side device, which the firewall's rules name.
	Network string
	Tap     string
	MAC     string
	// UID and GID are the host user and group its QEMU process runs as;
	// the VM's own files are given to UID before it starts.
	UID, GID int
}

// VMState is what the hypervisor reports about a desktop's VM.
type VMState string

const (
	VMMissing  VMState = "missing" // no such domain
	VMShutoff  VMState = "shutoff"
	VMRunning  VMState = "running"
	VMPaused   VMState = "paused"
	VMSaved    VMState = "saved" // shut off with its RAM saved (hibernated)
	VMCrashed  VMState = "crashed"
	VMShutdown VMState = "shutting-down"
)

// VMEvent is a lifecycle change the hypervisor reports for a VM.
type VMEvent struct {
	Domain string
	State  VMState
	Reason string
	// IOError: QEMU paused the VM because a disk write failed, typically
	// because the host's disk is full. Resuming retries the write.
	IOError bool
}

// Accelerator selects hardware virtualization or software emulation.
type Accelerator string

const (
	AccelKVM Accelerator = "kvm"
	AccelTCG Accelerator = "tcg"
)

// Exec is a command to run inside a desktop's guest.
type Exec struct {
	Argv  []string
	Env   []string
	Stdin []byte
}

// ExecResult is what a finished guest command produced.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool
}

// Filter narrows a listing of desktops; zero values match every live one.
type Filter struct {
	Owner          string // "" = every owner
	Host           string // "" = every host
	IncludeDeleted bool
}

// VMStats are a running VM's resource figures as the hypervisor reports them.
type VMStats struct {
	CPUTimeNs uint64
	VCPUs     int
	// Memory in KiB: the maximum, what the balloon currently gives the
	// guest, what the QEMU process holds on the host, and the guest's own
	// view (available, unused, usable) when its balloon driver reports it.
	MemoryMaxKiB       uint64
	MemoryCurrentKiB   uint64
	MemoryRSSKiB       uint64
	MemoryAvailableKiB uint64
	MemoryUnusedKiB    uint64
	MemoryUsableKiB    uint64
	Disks              []DiskStats
	Networks           []NetStats
}

// DiskStats are one disk's I/O counters and sizes.
type DiskStats struct {
	Name            string
	Path            string
	ReadBytes       uint64
	WriteBytes      uint64
	ReadRequests    uint64
	WriteRequests   uint64
	AllocationBytes uint64
	CapacityBytes   uint64
}

// NetStats are one network interface's counters.
type NetStats struct {
	Name    string
	RxBytes uint64
	TxBytes uint64
}
