// Package manager orchestrates desktop lifecycles: it records intent in the
// store before acting, serializes operations per desktop, undoes half-done
// work on failure, and reconciles the store with the hypervisor on start-up
// and on lifecycle events. It declares the small interfaces it needs.
package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// Hypervisor runs desktops' VMs, by role.
type Hypervisor interface {
	VMs
	Power
	Snapshots
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

// Snapshots takes and removes VM snapshots.
type Snapshots interface {
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

// Manager is the lifecycle orchestrator.
type Manager struct {
	cfg   Config
	hv    Hypervisor
	disks Disks
	seeds SeedWriter
	store Store
	log   *slog.Logger

	mu   sync.Mutex
	busy map[string]*inFlight // desktop id → operation in flight
	// missed holds the last VM event that came while an operation ran; it
	// is checked against the VM when the operation ends.
	missed map[string]desktop.VMEvent
	// rows serializes writes of one desktop's record (see write).
	rows sync.Map // desktop id → *sync.Mutex

	idleMu sync.Mutex
	idle   map[string]*idleState

	spares spares
	drains drains

	// Feed delivers desktop changes to live subscribers.
	*Feed
	wg sync.WaitGroup
	// ctx outlives requests: a desktop's operation never dies with the HTTP
	// request that asked for it.
	ctx    context.Context
	cancel context.CancelFunc
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, hv: hv, disks: disks, seeds: seeds, store: store, log: log,
		busy: map[string]*inFlight{}, missed: map[string]desktop.VMEvent{}, idle: map[string]*idleState{}, Feed: &Feed{}, ctx: ctx, cancel: cancel}
}

// Close stops following events and waits for operations in flight.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
}

// Accelerator reports which accelerator new desktops use.
func (m *Manager) Accelerator() desktop.Accelerator { return m.cfg.Accelerator }

// inFlight is an operation holding a desktop.
type inFlight struct {
	op string
	// began is the state the desktop was in when the operation began (""
	// for a create, or one a restart cut short).
	began  desktop.State
	cancel context.CancelFunc // nil: the operation cannot be cut short
	done   chan struct{}      // closed by unlock
}

// lock marks a desktop busy with op; a second operation gets ErrBusy.
// It takes the desktop's row lock for the moment it marks it, so an event
// or a reconcile already looking at the desktop (they hold the row lock and
// see it idle) records what it saw before the operation touches the VM:
// never a state the operation is passing through.
func (m *Manager) lock(id, op string) error {
	row := m.row(id)
	row.Lock()
	defer row.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.busy[id]; ok {
		return fmt.Errorf("%w (%s)", desktop.ErrBusy, cur.op)
	}
	m.busy[id] = &inFlight{op: op, done: make(chan struct{})}
	return nil
}

// lockWithin is lock, waiting up to wait (or until ctx ends) for the
// operation holding the desktop to let go.
func (m *Manager) lockWithin(ctx context.Context, id, op string, wait time.Duration) error {
	if wait <= 0 {
		return m.lock(id, op)
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	row := m.row(id)
	for {
		row.Lock() // as in lock
		m.mu.Lock()
		cur, ok := m.busy[id]
		if !ok {
			m.busy[id] = &inFlight{op: op, done: make(chan struct{})}
			m.mu.Unlock()
			row.Unlock()
			return nil
		}
		m.mu.Unlock()
		row.Unlock()
		select {
		case <-cur.done:
		case <-timeout.C:
			return fmt.Errorf("%w (%s, still after %s)", desktop.ErrBusy, cur.op, wait)
		case <-ctx.Done():
			return fmt.Errorf("%w (%s): %w", desktop.ErrBusy, cur.op, ctx.Err())
		}
	}
}

func (m *Manager) unlock(id string) {
	m.mu.Lock()
	if f := m.busy[id]; f != nil {
		close(f.done)
	}
	delete(m.busy, id)
	ev, missed := m.missed[id]
	delete(m.missed, id)
	m.mu.Unlock()
	if missed {
		// A change came while the operation ran: now the operation has
		// recorded its result, compare it with the VM.
		m.spawn(30*time.Second, func(ctx context.Context) { m.recheck(ctx, id, ev) })
	}
}

// preempt cuts short the operation holding a desktop, if it can be, and
// waits up to wait for it to let go: delete and force-stop win over any
// operation, even one that hangs.
func (m *Manager) preempt(id string, wait time.Duration) {
	m.mu.Lock()
	f := m.busy[id]
	var cancel context.CancelFunc
	var done chan struct{}
	if f != nil {
		cancel, done = f.cancel, f.done
	}
	m.mu.Unlock()
	if f == nil {
		return
	}
	if cancel != nil {
		m.log.Info("cutting an operation short", "desktop", id, "operation", f.op)
		cancel()
	}
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// row is the lock every write of desktop id's record holds.
func (m *Manager) row(id string) *sync.Mutex {
	mu, _ := m.rows.LoadOrStore(id, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// spawn runs fn in the background under the manager's context, bounded by
// timeout; Close waits for it.
func (m *Manager) spawn(timeout time.Duration, fn func(ctx context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, timeout)
		defer cancel()
		fn(ctx)
	}()
}

// detach gives a synchronous operation a context of its own: it finishes
// (and records its result) even if the caller goes away.
func (m *Manager) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), m.cfg.OpTimeout)
}

func (m *Manager) isBusy(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.busy[id]
	return ok
}

// background runs fn for desktop id under the manager's context and the
// operation timeout, then releases the desktop's lock. Delete and
// force-stop may cancel its context.
func (m *Manager) background(id string, fn func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.OpTimeout)
	m.mu.Lock()
	if f := m.busy[id]; f != nil {
		f.cancel = cancel
	}
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		defer m.unlock(id)
		fn(ctx)
	}()
}

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

// VMConfig is the VM definition of a desktop.
func (m *Manager) VMConfig(d *desktop.Desktop, uuid string) desktop.VMConfig {
	return desktop.VMConfig{
		Name: d.DomainName(), UUID: uuid, VCPUs: d.VCPUs, MemoryMiB: d.MemoryMiB,
		Accelerator: desktop.Accelerator(d.Accelerator),
		OSDisk:      filepath.Join(d.Dir, "os.qcow2"), DataDisk: d.DataDiskPath,
		SeedISO: filepath.Join(d.Dir, "seed.iso"), SerialLog: filepath.Join(d.Dir, "serial.log"),
		VNCSocket: vncSocket(d), TCGCacheMiB: m.cfg.TCGCacheMiB,
		Network: m.cfg.Network, Tap: desktop.TapNameOn(d.ID, d.Host), MAC: desktop.MAC(d.ID), UID: d.VMUID, GID: m.cfg.VMGroup,
	}
}

// save writes d, logging (not failing on) a store error: the caller has
// already acted and the reconciler repairs what the store missed.
func (m *Manager) save(ctx context.Context, d *desktop.Desktop) {
	if err := m.put(ctx, d); err != nil {
		m.log.Error("saving desktop", "desktop", d.ID, "err", err)
	}
}

// put writes d under its row lock.
func (m *Manager) put(ctx context.Context, d *desktop.Desktop) error {
	mu := m.row(d.ID)
	mu.Lock()
	defer mu.Unlock()
	return m.write(ctx, d)
}

// write records d and tells live subscribers; the caller holds d's row
// lock. The store refuses (desktop.ErrConflict) a write based on an older
// version of the record than the one stored. An operation's step and start
// time go with it: the start is stamped at its first write, both are
// cleared at its end.
func (m *Manager) write(ctx context.Context, d *desktop.Desktop) error {
	switch {
	case d.Operation == "":
		d.Step, d.OperationStartedAt = "", nil
	case d.OperationStartedAt == nil:
		now := time.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
		d.OperationStartedAt = &now
	}
	err := m.store.UpdateDesktop(ctx, d)
	if err != nil && outOfSpace(err) && m.cfg.Reserve != nil {
		// Desktops filled the disk bureau's database is on: give up the
		// reserve kept for this and record the state anyway.
		if released, rerr := m.cfg.Reserve.Release(); released {
			m.log.Error("the data directory's disk is full: released bureau's reserve to keep recording desktop state; free space on the host", "desktop", d.ID)
			err = m.store.UpdateDesktop(ctx, d)
		} else if rerr != nil {
			m.log.Error("releasing the disk reserve", "err", rerr)
		}
	}
	if err != nil {
		return err
	}
	cp := *d
	m.Publish(Change{Owner: d.Owner, Desktop: &cp})
	return nil
}

// step records how far d's operation got before the step is taken.
func (m *Manager) step(ctx context.Context, d *desktop.Desktop, step string) {
	d.Step = step
	m.save(ctx, d)
}

// event records an entry in the desktop's history.
func (m *Manager) event(ctx context.Context, id, typ, actor, format string, args ...any) {
	e := &desktop.Event{ID: newID(), DesktopID: id, Type: typ, Message: fmt.Sprintf(format, args...),
		Actor: actor, CreatedAt: time.Now().UTC()}
	if err := m.store.AddEvent(ctx, e); err != nil {
		m.log.Error("recording event", "desktop", id, "type", typ, "err", err)
	}
	if d, err := m.store.GetDesktop(ctx, id); err == nil {
		m.Publish(Change{Owner: d.Owner, Event: e})
	}
	m.log.Info(e.Message, "desktop", id, "event", typ, "actor", actor)
}

// fail ends d's operation in failure with a reason, its VM's state not
// known: error, by the table. One whose link to libvirtd broke is not
// ended (see below).
func (m *Manager) fail(ctx context.Context, d *desktop.Desktop, op string, err error) {
	if errors.Is(err, desktop.ErrHostLost) && d.Operation != "" {
		// What libvirtd did before the link broke is not known: the
		// operation stays recorded, cut short, and reconcile settles it
		// once libvirtd answers again, as after a restart of bureau
		// (finished if the VM got there, else run again).
		d.Step, d.LastError = "", fmt.Sprintf("%s cut short: %v; bureau settles it when libvirtd answers again", op, err)
		m.save(ctx, d)
		m.event(ctx, d.ID, op+"_interrupted", "bureau", "%s", d.LastError)
		return
	}
	m.end(ctx, d, desktop.OpOf(d.Operation), false, "", fmt.Sprintf("%s failed: %v", op, err))
	m.event(ctx, d.ID, op+"_failed", "bureau", "%s", d.LastError)
}

// end records the end of d's operation op, the one place an operation's
// end is written (observe1 records what a VM does by itself): the state
// and desired state the table gives for it (desktop.End) — ok: it
// succeeded; vm: the state its VM is in, where the table's end is as its
// VM is ("" = not known) — no operation, and lastError. It writes under
// the row lock; a store error is logged and returned.
func (m *Manager) end(ctx context.Context, d *desktop.Desktop, op desktop.Op, ok bool, vm desktop.State, lastError string) error {
	m.mu.Lock()
	var began desktop.State
	if f := m.busy[d.ID]; f != nil {
		began = f.began
	}
	m.mu.Unlock()
	st, desired, err := desktop.End(op, ok, began, vm)
	if err != nil {
		m.log.Error("an operation ended where the table of operations does not allow", "desktop", d.ID, "err", err)
	}
	d.State, d.Operation, d.Step, d.LastError = st, "", "", lastError
	if desired != "" {
		d.DesiredState = desired
	}
	if err := m.put(ctx, d); err != nil {
		m.log.Error("saving desktop", "desktop", d.ID, "err", err)
		return err
	}
	return nil
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

// observe reports a finished operation's duration.
func (m *Manager) observe(op string, begun time.Time, err error) {
	if m.cfg.Observe != nil {
		m.cfg.Observe(op, time.Since(begun), err)
	}
}
