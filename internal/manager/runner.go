package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// records is what every operation reads and writes in the store: a
// desktop's record (the version-checked write), its settings alone, and
// its history.
type records interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	UpdateDesktop(ctx context.Context, d *desktop.Desktop) error
	UpdateDesktopSettings(ctx context.Context, d *desktop.Desktop) error
	AddEvent(ctx context.Context, e *desktop.Event) error
}

// runner is the core every operation goes through, whatever it does: one
// operation per desktop (lock, begin) and one writer per record (row),
// intent recorded before acting (begin), each write version-checked and
// fed to live subscribers (write), the history (event), the end written
// in one place (end, fail), and the background work Close waits for
// (spawn, background). It knows nothing of VMs: features hold it and the
// collaborators of their own.
type runner struct {
	store records
	feed  *Feed
	log   *slog.Logger
	// opTimeout bounds one operation (Config.OpTimeout); reserve is given
	// up when a write fails for space (Config.Reserve).
	opTimeout  time.Duration
	reserve    Reserve
	observer   func(op string, took time.Duration, err error)
	failpoints Failpoints
	// recheck applies the last VM event that came while an operation held
	// its desktop, once the operation has let go (reconciler.onEvent).
	recheck func(ctx context.Context, ev desktop.VMEvent)

	mu   sync.Mutex
	busy map[string]*inFlight // desktop id → operation in flight
	// missed holds the last VM event that came while an operation ran; it
	// is checked against the VM when the operation ends.
	missed map[string]desktop.VMEvent
	// rows serializes writes of one desktop's record (see write).
	rows sync.Map // desktop id → *sync.Mutex

	wg sync.WaitGroup
	// ctx outlives requests: a desktop's operation never dies with the HTTP
	// request that asked for it.
	ctx    context.Context
	cancel context.CancelFunc
}

func newRunner(cfg Config, store records, feed *Feed, log *slog.Logger) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	return &runner{store: store, feed: feed, log: log, opTimeout: cfg.OpTimeout, reserve: cfg.Reserve,
		observer: cfg.Observe, failpoints: cfg.Failpoints,
		busy: map[string]*inFlight{}, missed: map[string]desktop.VMEvent{}, ctx: ctx, cancel: cancel}
}

// close stops the background work and waits for operations in flight.
func (r *runner) close() {
	r.cancel()
	r.wg.Wait()
}

// inFlight is an operation holding a desktop.
type inFlight struct {
	op string
	// began is the state the desktop was in when the operation began (""
	// for a create, or one a restart cut short).
	began  desktop.State
	cancel context.CancelFunc // nil: the operation cannot be cut short
	done   chan struct{}      // closed by unlock
}

// lock marks a desktop busy with op (see tryLock); a second operation
// gets ErrBusy.
func (r *runner) lock(id, op string) error {
	if cur := r.tryLock(id, op); cur != nil {
		return fmt.Errorf("%w (%s)", desktop.ErrBusy, cur.op)
	}
	return nil
}

// tryLock marks a desktop busy with op and returns nil, or returns the
// operation holding it. It takes the desktop's row lock for the moment
// it marks it, so an event or a reconcile already looking at the desktop
// (they hold the row lock and see it idle) records what it saw before the
// operation touches the VM: never a state the operation is passing
// through.
func (r *runner) tryLock(id, op string) *inFlight {
	row := r.row(id)
	row.Lock()
	defer row.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.busy[id]; ok {
		return cur
	}
	r.busy[id] = &inFlight{op: op, done: make(chan struct{})}
	return nil
}

// lockWithin is lock, waiting up to wait (or until ctx ends) for the
// operation holding the desktop to let go.
func (r *runner) lockWithin(ctx context.Context, id, op string, wait time.Duration) error {
	if wait <= 0 {
		return r.lock(id, op)
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		cur := r.tryLock(id, op)
		if cur == nil {
			return nil
		}
		select {
		case <-cur.done:
		case <-timeout.C:
			return fmt.Errorf("%w (%s, still after %s)", desktop.ErrBusy, cur.op, wait)
		case <-ctx.Done():
			return fmt.Errorf("%w (%s): %w", desktop.ErrBusy, cur.op, ctx.Err())
		}
	}
}

func (r *runner) unlock(id string) {
	r.mu.Lock()
	if f := r.busy[id]; f != nil {
		close(f.done)
	}
	delete(r.busy, id)
	ev, missed := r.missed[id]
	delete(r.missed, id)
	r.mu.Unlock()
	if missed && r.recheck != nil {
		// A change came while the operation ran: now the operation has
		// recorded its result, compare it with the VM.
		r.spawn(30*time.Second, func(ctx context.Context) { r.recheck(ctx, ev) })
	}
}

// preempt cuts short the operation holding a desktop, if it can be, and
// waits up to wait for it to let go: delete and force-stop win over any
// operation, even one that hangs.
func (r *runner) preempt(id string, wait time.Duration) {
	r.mu.Lock()
	f := r.busy[id]
	var cancel context.CancelFunc
	var done chan struct{}
	if f != nil {
		cancel, done = f.cancel, f.done
	}
	r.mu.Unlock()
	if f == nil {
		return
	}
	if cancel != nil {
		r.log.Info("cutting an operation short", "desktop", id, "operation", f.op)
		cancel()
	}
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// cancellable is how to cut short the operation op holding desktop id, if
// op holds it and it can be cut short (nil otherwise).
func (r *runner) cancellable(id, op string) context.CancelFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.busy[id]; f != nil && f.op == op {
		return f.cancel
	}
	return nil
}

// deferEvent keeps ev, a change of desktop id's VM, for when the operation
// holding the desktop ends (unlock), and says whether one holds it. The
// caller holds the row lock. An I/O error pause is not replaced by a later
// plain event: it says why the VM stopped.
func (r *runner) deferEvent(id string, ev desktop.VMEvent) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.busy[id]; !busy {
		return false
	}
	if prev, ok := r.missed[id]; !ok || !prev.IOError || ev.IOError {
		r.missed[id] = ev
	}
	return true
}

func (r *runner) isBusy(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.busy[id]
	return ok
}

// row is the lock every write of desktop id's record holds.
func (r *runner) row(id string) *sync.Mutex {
	mu, _ := r.rows.LoadOrStore(id, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// spawn runs fn in the background under the manager's context, bounded by
// timeout; Close waits for it.
func (r *runner) spawn(timeout time.Duration, fn func(ctx context.Context)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(r.ctx, timeout)
		defer cancel()
		fn(ctx)
	}()
}

// goUntilClose runs fn in the background, unbounded; Close waits for it
// (fn ends when the manager's context does).
func (r *runner) goUntilClose(fn func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
}

// detach gives a synchronous operation a context of its own: it finishes
// (and records its result) even if the caller goes away.
func (r *runner) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.opTimeout)
}

// background runs fn for desktop id under the manager's context and the
// operation timeout, then releases the desktop's lock. Delete and
// force-stop may cancel its context.
func (r *runner) background(id string, fn func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opTimeout)
	r.mu.Lock()
	if f := r.busy[id]; f != nil {
		f.cancel = cancel
	}
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		defer r.unlock(id)
		fn(ctx)
	}()
}

// preemptWait is how long delete and force-stop wait for the operation
// they cut short to let go of the desktop.
const preemptWait = 30 * time.Second

// begin locks a desktop for op, checks the transition and records the
// transient state and intent before anything is done. Delete and force-stop
// first cut short any operation in flight.
func (r *runner) begin(ctx context.Context, id string, op desktop.Op, desired desktop.State, actor string) (*desktop.Desktop, error) {
	// Once locked, the intent is recorded and reported even if the caller
	// goes away.
	ctx, cancel := r.detach(ctx)
	defer cancel()
	if op == desktop.OpDelete || op == desktop.OpForceStop {
		r.preempt(id, preemptWait)
	}
	if err := r.lock(id, string(op)); err != nil {
		// An operation the state forbids anyway is refused for that reason
		// (clearer, and the same whether or not something else runs).
		if d, gerr := r.store.GetDesktop(ctx, id); gerr == nil {
			if _, terr := desktop.Begin(op, d.State); terr != nil {
				return nil, terr
			}
		}
		return nil, err
	}
	d, err := r.beginRow(ctx, id, op, func(*desktop.Desktop) desktop.State { return desired })
	if err != nil {
		r.unlock(id)
		return nil, err
	}
	r.event(ctx, id, string(op)+"_requested", actor, "%s requested", op)
	return d, nil
}

// beginRow records op's transient state and intent (desired, from the
// record as it is) under the row lock, and keeps the state op began from
// for its end (see end). The caller holds the desktop (lock).
func (r *runner) beginRow(ctx context.Context, id string, op desktop.Op, desired func(*desktop.Desktop) desktop.State) (*desktop.Desktop, error) {
	mu := r.row(id)
	mu.Lock()
	defer mu.Unlock()
	d, err := r.store.GetDesktop(ctx, id)
	if err == nil && d.DeletedAt != nil {
		err = fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	through, err := desktop.Begin(op, d.State)
	if err != nil {
		return nil, err
	}
	began := d.State
	d.State, d.DesiredState, d.Operation, d.Step = through, desired(d), string(op), ""
	d.OperationStartedAt = nil // write stamps the start of this one
	if err := r.write(ctx, d); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if f := r.busy[id]; f != nil {
		f.began = began
	}
	r.mu.Unlock()
	return d, nil
}

// live loads a desktop that has not been deleted.
func (r *runner) live(ctx context.Context, id string) (*desktop.Desktop, error) {
	d, err := r.store.GetDesktop(ctx, id)
	if err == nil && d.DeletedAt != nil {
		err = fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	return d, err
}

// save writes d, logging (not failing on) a store error: the caller has
// already acted and the reconciler repairs what the store missed.
func (r *runner) save(ctx context.Context, d *desktop.Desktop) {
	if err := r.put(ctx, d); err != nil {
		r.log.Error("saving desktop", "desktop", d.ID, "err", err)
	}
}

// put writes d under its row lock.
func (r *runner) put(ctx context.Context, d *desktop.Desktop) error {
	mu := r.row(d.ID)
	mu.Lock()
	defer mu.Unlock()
	return r.write(ctx, d)
}

// write records d and tells live subscribers; the caller holds d's row
// lock. The store refuses (desktop.ErrConflict) a write based on an older
// version of the record than the one stored. An operation's step and start
// time go with it: the start is stamped at its first write, both are
// cleared at its end.
func (r *runner) write(ctx context.Context, d *desktop.Desktop) error {
	switch {
	case d.Operation == "":
		d.Step, d.OperationStartedAt = "", nil
	case d.OperationStartedAt == nil:
		now := time.Now().UTC().Truncate(time.Millisecond) // as the store keeps it
		d.OperationStartedAt = &now
	}
	err := r.store.UpdateDesktop(ctx, d)
	if err != nil && outOfSpace(err) && r.reserve != nil {
		// Desktops filled the disk bureau's database is on: give up the
		// reserve kept for this and record the state anyway.
		if released, rerr := r.reserve.Release(); released {
			r.log.Error("the data directory's disk is full: released bureau's reserve to keep recording desktop state; free space on the host", "desktop", d.ID)
			err = r.store.UpdateDesktop(ctx, d)
		} else if rerr != nil {
			r.log.Error("releasing the disk reserve", "err", rerr)
		}
	}
	if err != nil {
		return err
	}
	cp := *d
	r.feed.Publish(Change{Owner: d.Owner, Desktop: &cp})
	return nil
}

// changeSettings applies change to a desktop's settings under its row lock
// and writes them alone (an operation may be saving its state at the same
// time: the store keeps the two apart), then returns the desktop as it now
// is. The change may act (apply firewall rules) before it is recorded; it
// finishes even if the caller goes away.
func (r *runner) changeSettings(ctx context.Context, id string, change func(context.Context, *desktop.Desktop) error) (*desktop.Desktop, error) {
	ctx, cancel := r.detach(ctx)
	defer cancel()
	mu := r.row(id)
	mu.Lock()
	defer mu.Unlock()
	d, err := r.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := change(ctx, d); err != nil {
		return nil, err
	}
	if err := r.store.UpdateDesktopSettings(ctx, d); err != nil {
		return nil, err
	}
	cur, err := r.store.GetDesktop(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	r.feed.Publish(Change{Owner: cur.Owner, Desktop: cur})
	return cur, nil
}

// step records how far d's operation got before the step is taken.
func (r *runner) step(ctx context.Context, d *desktop.Desktop, step string) {
	d.Step = step
	r.save(ctx, d)
}

// event records an entry in the desktop's history.
func (r *runner) event(ctx context.Context, id, typ, actor, format string, args ...any) {
	e := &desktop.Event{ID: newID(), DesktopID: id, Type: typ, Message: fmt.Sprintf(format, args...),
		Actor: actor, CreatedAt: time.Now().UTC()}
	if err := r.store.AddEvent(ctx, e); err != nil {
		r.log.Error("recording event", "desktop", id, "type", typ, "err", err)
	}
	if d, err := r.store.GetDesktop(ctx, id); err == nil {
		r.feed.Publish(Change{Owner: d.Owner, Event: e})
	}
	r.log.Info(e.Message, "desktop", id, "event", typ, "actor", actor)
}

// fail ends d's operation in failure with a reason, its VM's state not
// known: error, by the table. One whose link to libvirtd broke is not
// ended (see below).
func (r *runner) fail(ctx context.Context, d *desktop.Desktop, op string, err error) {
	if errors.Is(err, desktop.ErrHostLost) && d.Operation != "" {
		// What libvirtd did before the link broke is not known: the
		// operation stays recorded, cut short, and reconcile settles it
		// once libvirtd answers again, as after a restart of bureau
		// (finished if the VM got there, else run again).
		d.Step, d.LastError = "", fmt.Sprintf("%s cut short: %v; bureau settles it when libvirtd answers again", op, err)
		r.save(ctx, d)
		r.event(ctx, d.ID, op+"_interrupted", "bureau", "%s", d.LastError)
		return
	}
	r.end(ctx, d, desktop.OpOf(d.Operation), false, "", fmt.Sprintf("%s failed: %v", op, err))
	r.event(ctx, d.ID, op+"_failed", "bureau", "%s", d.LastError)
}

// end records the end of d's operation op, the one place an operation's
// end is written (reconciler.observe1 records what a VM does by itself): the
// state and desired state the table gives for it (desktop.End) — ok: it
// succeeded; vm: the state its VM is in, where the table's end is as its
// VM is ("" = not known) — no operation, and lastError. It writes under
// the row lock; a store error is logged and returned.
func (r *runner) end(ctx context.Context, d *desktop.Desktop, op desktop.Op, ok bool, vm desktop.State, lastError string) error {
	r.mu.Lock()
	var began desktop.State
	if f := r.busy[d.ID]; f != nil {
		began = f.began
	}
	r.mu.Unlock()
	st, desired, err := desktop.End(op, ok, began, vm)
	if err != nil {
		r.log.Error("an operation ended where the table of operations does not allow", "desktop", d.ID, "err", err)
	}
	d.State, d.Operation, d.Step, d.LastError = st, "", "", lastError
	if desired != "" {
		d.DesiredState = desired
	}
	// Recorded even when the operation was cut short: a delete or force
	// stop that preempts it cancels its context, and an end left unwritten
	// would leave the desktop in its transient state with no operation.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.put(wctx, d); err != nil {
		r.log.Error("saving desktop", "desktop", d.ID, "err", err)
		return err
	}
	return nil
}

// observe reports a finished operation's duration.
func (r *runner) observe(op string, begun time.Time, err error) {
	if r.observer != nil {
		r.observer(op, time.Since(begun), err)
	}
}

// failpoint ends the process at name when a test asked for it. It exits
// without running deferred functions or flushing anything, like a kill -9.
func (r *runner) failpoint(name string) {
	if r.failpoints[name] {
		r.log.Error("failpoint reached: exiting at once", "failpoint", name)
		os.Exit(137)
	}
}

// ensureReserve makes the disk reserve again once there is room for it
// (write gives it up when the disk is full).
func (r *runner) ensureReserve() {
	if r.reserve == nil {
		return
	}
	if err := r.reserve.Ensure(); err != nil {
		r.log.Warn("disk reserve", "err", err)
	}
}
