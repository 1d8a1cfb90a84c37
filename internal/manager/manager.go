// Package manager orchestrates desktop lifecycles: it records intent in the
// store before acting, serializes operations per desktop, undoes half-done
// work on failure, and reconciles the store with the hypervisor on start-up
// and on lifecycle events. It declares the small interfaces it needs.
package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hostfiles"
	"github.com/bureau/bureau/internal/placement"
)

// Hypervisor runs desktops' VMs, by role.
type Hypervisor interface {
	VMs
	Power
	VMSnapshots
	Guest
	Memory
	EventSource
}

// Memory gives a frozen VM's RAM back to the host.
type Memory interface {
	// Reclaim pushes a paused VM's memory out to swap and returns what
	// stays resident that the VM holds alone (not shared through KSM), in
	// KiB.
	Reclaim(ctx context.Context, name string) (residentKiB int64, err error)
}

// VMs defines, lists and removes desktops' VMs.
type VMs interface {
	Define(ctx context.Context, c desktop.VMConfig) error
	Undefine(ctx context.Context, name string) error
	State(ctx context.Context, name string) (desktop.VMState, error)
	List(ctx context.Context) (map[string]desktop.VMState, error)
	ResizeDisk(ctx context.Context, name, file string, bytes int64) error
	// CPUTime is the guest's total CPU time so far.
	CPUTime(ctx context.Context, name string) (time.Duration, error)
}

// Power moves VMs between running, paused, saved and off.
type Power interface {
	Start(ctx context.Context, name string) error
	// StartPaused restores a hibernated VM with its vCPUs stopped.
	StartPaused(ctx context.Context, name string) error
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
	Reboot(ctx context.Context, name string) error
	Suspend(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Hibernate(ctx context.Context, name string) error
	DiscardHibernation(ctx context.Context, name string) error
	SaveTo(ctx context.Context, name, path string) error
	// RestoreAs starts c's VM from another VM's save image, its vCPUs
	// stopped when paused.
	RestoreAs(ctx context.Context, image string, c desktop.VMConfig, scratch string, paused bool) error
}

// VMSnapshots takes and removes VM snapshots.
type VMSnapshots interface {
	SnapshotWithMemory(ctx context.Context, name, snap, description string) error
	RevertSnapshot(ctx context.Context, name, snap string) error
	DeleteSnapshot(ctx context.Context, name, snap string) error
	LiveDiskSnapshot(ctx context.Context, name, snap string, files []string) (quiesced bool, err error)
	DeleteLiveDiskSnapshot(ctx context.Context, name, snap string, files []string) error
}

// Guest reaches into a running guest.
type Guest interface {
	GuestExec(ctx context.Context, name string, e desktop.Exec) (*desktop.ExecResult, error)
	SyncGuestClock(ctx context.Context, name string) error
}

// EventSource reports VM changes bureau did not ask for.
type EventSource interface {
	Events() <-chan desktop.VMEvent
	// Resync signals that events may have been missed (the connection to
	// the hypervisor was re-established, or an event was dropped): the
	// manager then reconciles every desktop.
	Resync() <-chan struct{}
}

// Reserve is space held back on the database's disk (see host.Reserve).
type Reserve interface {
	Ensure() error
	Release() (bool, error)
}

// Disks makes disk files.
type Disks interface {
	CreateOverlay(ctx context.Context, base, path string, sizeGiB int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB int) error
	// StoppedDisks works on files no VM has open.
	StoppedDisks
	// CopySnapshot writes dst as src was at a snapshot (an overlay of
	// backing when given).
	CopySnapshot(ctx context.Context, src, name, dst, backing string) error
	Copy(ctx context.Context, src, dst string) error
}

// Seed is what a desktop's cloud-init seed says.
type Seed struct {
	DesktopID string
	// InstanceID changes when cloud-init must set the system up again
	// (reimage); empty means the desktop id.
	InstanceID string
	Hostname   string
	SSHKeys    []string
	// InstallDesktop asks the guest to install the desktop on first boot,
	// for imported images that lack one.
	InstallDesktop bool
	// KeyboardLayout is the guest's XKB layout at first boot.
	KeyboardLayout string
}

// SeedWriter writes a desktop's cloud-init seed ISO.
type SeedWriter interface {
	WriteSeed(ctx context.Context, path string, s Seed) error
}

// Store is what the manager keeps in the database, by role.
type Store interface {
	DesktopStore
	EventStore
	SnapshotStore
	QuotaStore
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
}

// DesktopStore keeps desktops. Operations write state (UpdateDesktop),
// settings are written alone (UpdateDesktopSettings).
type DesktopStore interface {
	UpdateDesktop(ctx context.Context, d *desktop.Desktop) error
	UpdateDesktopSettings(ctx context.Context, d *desktop.Desktop) error
	// SetVMIdentity gives a desktop without them its QEMU user and address.
	SetVMIdentity(ctx context.Context, id string, uid int, ip string) error
	// MoveDesktop records a desktop on another host, with its address
	// there; renew: its guest asks for that address after its next wake.
	MoveDesktop(ctx context.Context, id, host, ip string, renew bool) error
	// ReserveMove counts a running desktop on the host it moves to, if
	// fits allows it there (checked under that host's lock), until
	// MoveDesktop or EndMove.
	ReserveMove(ctx context.Context, id, to string, fits func(placement.Load) error) error
	EndMove(ctx context.Context, id string) error
	// RenewedAddress records that it did.
	RenewedAddress(ctx context.Context, id string) error
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// EventStore keeps desktops' histories.
type EventStore interface {
	AddEvent(ctx context.Context, e *desktop.Event) error
	ListEvents(ctx context.Context, desktopID string, limit int) ([]*desktop.Event, error)
	ListAllEvents(ctx context.Context, owner string, limit int) ([]*desktop.Event, error)
}

// SnapshotStore keeps desktops' snapshots.
type SnapshotStore interface {
	GetSnapshot(ctx context.Context, desktopID, name string) (*desktop.Snapshot, error)
	ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error)
	MarkSnapshotReverted(ctx context.Context, sn *desktop.Snapshot) error
	SetSnapshotSize(ctx context.Context, id string, size int64) error
	DeleteSnapshot(ctx context.Context, id string) error
	DeleteSnapshots(ctx context.Context, desktopID string) error
}

// QuotaStore keeps owners' quotas and writes what counts against them.
type QuotaStore interface {
	GetQuota(ctx context.Context, owner string) (*desktop.Quota, error)
	PutQuota(ctx context.Context, q *desktop.Quota) error
	Usage(ctx context.Context, owner string) (desktop.Usage, error)
	// The Checked writes run admit on the owner's stored quota (nil: none)
	// and usage, and write only if it returns nil, atomically per owner.
	// CreateDesktopChecked then runs fits, when given, on what d.Host's
	// desktops take, with that host locked until the insert commits.
	CreateDesktopChecked(ctx context.Context, d *desktop.Desktop, admit func(*desktop.Quota, desktop.Usage) error, fits func(placement.Load) error) error
	GrowDataDiskChecked(ctx context.Context, id, owner string, sizeGiB int, admit func(*desktop.Quota, desktop.Usage) error) error
	CreateSnapshotChecked(ctx context.Context, sn *desktop.Snapshot, owner string, admit func(*desktop.Quota, desktop.Usage) error) error
}

// Manager is the lifecycle orchestrator. It makes the features and hands
// each call of the API (and of bureau serve) to the one that does it; Run
// follows the hypervisor's events (reconcile.go).
type Manager struct {
	cfg Config
	// events are the hypervisor's (Run); store is read for the API (Get,
	// List, Events, AuditLog): features write.
	events EventSource
	store  desktopReads

	// ops is the core every operation goes through (runner.go): the
	// per-desktop lock, the record's version-checked write, its history,
	// where an operation ends, and the work Close waits for.
	ops *runner

	// Features: each holds the core and only the other collaborators it
	// uses, by role (the other features, the seams below, the
	// hypervisor's and the store's roles).
	life      *lifecycle  // lifecycle.go, power.go
	creator   *creator    // creator.go, create.go, remote.go
	diskMaker *diskMaker  // clone.go, reimage.go
	snaps     *Snapshots  // snapshots.go
	warm      *WarmPool   // template.go, spares.go
	idle      *idler      // idle.go, tiers.go, pressure.go, prewake.go
	moves     *Moves      // moves.go, migrate.go, migrate_files.go, coldmove.go, drain.go
	backups   *Backups    // backups.go
	place     *placer     // place.go
	ident     *identities // network.go, identity.go, keyboard.go
	quota     *quotas     // quota.go
	recon     *reconciler // reconcile.go, interrupted.go

	// Seams features share: where a desktop's host and files are
	// (files.go, remote.go), and its VM's definition.
	hosts *desktopHosts
	defs  *vmDefs

	// Feed delivers desktop changes to live subscribers.
	*Feed
}

// desktopReads reads desktops and their histories.
type desktopReads interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	ListEvents(ctx context.Context, desktopID string, limit int) ([]*desktop.Event, error)
	ListAllEvents(ctx context.Context, owner string, limit int) ([]*desktop.Event, error)
}

// New builds a manager; call Run to reconcile and follow hypervisor events.
func New(cfg Config, hv Hypervisor, disks Disks, seeds SeedWriter, store Store, log *slog.Logger) *Manager {
	if cfg.OSDiskGiB == 0 {
		cfg.OSDiskGiB = 10
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 90 * time.Second
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 10 * time.Minute
	}
	if cfg.TemplateSettle == 0 {
		cfg.TemplateSettle = 15 * time.Second
	}
	if cfg.IdleCheck == 0 {
		cfg.IdleCheck = 15 * time.Second
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = time.Minute
	}
	if cfg.TrimAfter == 0 {
		cfg.TrimAfter = 2 * time.Minute
	}
	if cfg.TrimSettle == 0 {
		cfg.TrimSettle = 3 * time.Second
	}
	if cfg.IdleCPU == 0 {
		cfg.IdleCPU = 0.3
	}
	feed := &Feed{}
	local := hostfiles.New(disks)
	m := &Manager{cfg: cfg, events: hv, store: store, ops: newRunner(cfg, store, feed, log), Feed: feed}
	m.defs = &vmDefs{tcgCacheMiB: cfg.TCGCacheMiB, network: cfg.Network, group: cfg.VMGroup}
	m.hosts = &desktopHosts{ops: m.ops, local: local, seeds: seeds, sites: cfg.Sites, desktops: store}
	m.place = &placer{sites: m.hosts, placement: cfg.Placement, accel: cfg.Accelerator}
	m.quota = &quotas{store: store, place: m.place, log: log, capacity: cfg.Capacity, defaultPlan: cfg.DefaultPlan}
	m.life = &lifecycle{ops: m.ops, store: store, vms: hv, room: m.quota, hosts: m.hosts, defs: m.defs, log: log,
		stopTimeout: cfg.StopTimeout, saveAsIs: cfg.SaveAsIs}
	m.ident = &identities{ops: m.ops, store: store, hosts: m.hosts, vms: hv, keys: local, defs: m.defs, clock: m.life, log: log,
		firewall: cfg.Firewall, addresses: cfg.Addresses, subnet: cfg.Subnet}
	m.moves = &Moves{ops: m.ops, store: store, vms: hv, hosts: m.hosts, net: m.ident, place: m.place, room: m.quota, defs: m.defs, clock: m.life, log: log,
		live: cfg.Mover, cold: cfg.ColdMover, hostAddress: cfg.HostAddress, marks: cfg.Drains, onMoved: cfg.Moved, placement: cfg.Placement}
	m.snaps = &Snapshots{ops: m.ops, store: store, vms: hv, quota: m.quota, hosts: m.hosts, power: m.life, moves: m.moves, log: log,
		stopTimeout: cfg.StopTimeout}
	m.diskMaker = &diskMaker{ops: m.ops, store: store, disks: disks, local: local, seeds: seeds, hosts: m.hosts, vms: hv,
		power: m.life, snaps: m.snaps, quota: m.quota, defs: m.defs, log: log, osDiskGiB: cfg.OSDiskGiB, stopTimeout: cfg.StopTimeout}
	m.idle = &idler{ops: m.ops, store: store, vms: hv, power: m.life, room: m.quota, log: log,
		cpuShare: cfg.IdleCPU, trimAfter: cfg.TrimAfter, trimSettle: cfg.TrimSettle, memory: cfg.HostMemory, lowMiB: cfg.MemoryLowMiB,
		quiet: map[string]*idleState{}}
	m.warm = &WarmPool{ops: m.ops, vms: hv, disks: disks, local: local, seeds: seeds, store: store, vmConfigs: m.defs, net: m.ident, identity: m.ident, memory: m.idle, log: log,
		dataDir: cfg.DataDir, defaultImage: cfg.DefaultImage, accel: cfg.Accelerator, osDiskGiB: cfg.OSDiskGiB,
		settle: cfg.TemplateSettle, trimSettle: cfg.TrimSettle, keep: cfg.WarmSpares, cpuHold: cfg.CPUHold}
	m.idle.spares = m.warm
	m.creator = &creator{ops: m.ops, store: store, vms: hv, local: local, seeds: seeds, hosts: m.hosts, place: m.place, quota: m.quota,
		net: m.ident, clones: m.diskMaker, warm: m.warm, defs: m.defs,
		napAfter: cfg.NapAfter, sleepAfter: cfg.SleepAfter, defaultImage: cfg.DefaultImage, dataDir: cfg.DataDir, osDiskGiB: cfg.OSDiskGiB}
	m.backups = newBackups(cfg.Backups, m.ops, hv, m.hosts, m.creator, m.snaps, log)
	m.backups.files.setDir(cfg.DataDir)
	m.recon = &reconciler{ops: m.ops, store: store, vms: hv, local: local, life: m.life, creates: m.creator, moves: m.moves, log: log}
	m.ops.recheck = m.recon.onEvent
	// Made before the features it uses, lifecycle is given them now.
	m.life.net, m.life.moves, m.life.idle = m.ident, m.moves, m.idle
	return m
}

// Close stops following events and waits for operations in flight.
func (m *Manager) Close() { m.ops.close() }

// Accelerator reports which accelerator new desktops use.
func (m *Manager) Accelerator() desktop.Accelerator { return m.cfg.Accelerator }

// Get returns a desktop by id.
func (m *Manager) Get(ctx context.Context, id string) (*desktop.Desktop, error) {
	return m.store.GetDesktop(ctx, id)
}

// List returns desktops matching f.
func (m *Manager) List(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error) {
	return m.store.ListDesktops(ctx, f)
}

// Events returns a desktop's newest events.
func (m *Manager) Events(ctx context.Context, id string, limit int) ([]*desktop.Event, error) {
	return m.store.ListEvents(ctx, id, limit)
}

// Note records an event of a desktop that bureau saw outside an
// operation (its session came up…) and shows live followers the desktop
// again, as what the API shows of it beside its record changed.
func (m *Manager) Note(ctx context.Context, id, typ, format string, args ...any) {
	m.ops.event(ctx, id, typ, "bureau", format, args...)
	if d, err := m.store.GetDesktop(ctx, id); err == nil {
		m.Publish(Change{Owner: d.Owner, Desktop: d})
	}
}

// NoteBy is Note with who did it (a person, an agent's token) as the
// event's actor.
func (m *Manager) NoteBy(ctx context.Context, id, typ, actor, msg string) {
	m.ops.event(ctx, id, typ, actor, "%s", msg)
	if d, err := m.store.GetDesktop(ctx, id); err == nil {
		m.Publish(Change{Owner: d.Owner, Desktop: d})
	}
}

// vmDefs makes desktops' VM definitions with the host's settings (from
// Config): QEMU's translation cache under TCG, the desktops' network, and
// the host group desktops' QEMU processes run in (their files are that
// group's: a definition's GID).
type vmDefs struct {
	tcgCacheMiB int
	network     string
	group       int
}

// VMConfig is the VM definition of a desktop.
func (v *vmDefs) VMConfig(d *desktop.Desktop, uuid string) desktop.VMConfig {
	return desktop.VMConfig{
		Name: d.DomainName(), UUID: uuid, VCPUs: d.VCPUs, MemoryMiB: d.MemoryMiB,
		Accelerator: desktop.Accelerator(d.Accelerator),
		OSDisk:      filepath.Join(d.Dir, "os.qcow2"), DataDisk: d.DataDiskPath,
		SeedISO: filepath.Join(d.Dir, "seed.iso"), SerialLog: filepath.Join(d.Dir, "serial.log"),
		VNCSocket: vncSocket(d), TCGCacheMiB: v.tcgCacheMiB,
		Network: v.network, Tap: desktop.TapNameOn(d.ID, d.Host), MAC: desktop.MAC(d.ID), UID: d.VMUID, GID: v.group,
	}
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// AuditLog returns the newest limit events of owner's desktops ("" = all).
func (m *Manager) AuditLog(ctx context.Context, owner string, limit int) ([]*desktop.Event, error) {
	return m.store.ListAllEvents(ctx, owner, limit)
}
