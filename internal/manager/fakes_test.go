package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

type fakeHV struct {
	mu         sync.Mutex
	vms        map[string]desktop.VMState
	defined    map[string]desktop.VMConfig
	failOn     string // method name that fails
	failErr    error  // its error (nil = an injected failure)
	ignoreACPI bool
	events     chan desktop.VMEvent
	resync     chan struct{}
	calls      []string
	cpu        time.Duration // reported by CPUTime
	// lost are hosts List says did not answer; their VMs are left out.
	lost map[string]bool
	// hostOf names a VM's host for lost.
	hostOf map[string]string
	// snaps are the snapshots libvirt keeps of each domain (taken with
	// SnapshotWithMemory): Undefine drops them with the definition.
	snaps map[string]map[string]bool
	// files are the internal snapshots inside the disk files, as QEMU and
	// qemu-img see them; the harness shares them with its fakeDisks.
	files *fileSnaps
	// execs script GuestExec (see onExec).
	execs []execRule
}

func newFakeHV() *fakeHV {
	return &fakeHV{vms: map[string]desktop.VMState{}, defined: map[string]desktop.VMConfig{}, events: make(chan desktop.VMEvent, 16), resync: make(chan struct{}, 1),
		snaps: map[string]map[string]bool{}, files: &fileSnaps{}}
}

// fileSnaps are the internal snapshots each disk file holds, by path. A
// file made anew at a path holds none.
type fileSnaps struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (s *fileSnaps) has(path, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[path][name]
}

func (s *fileSnaps) add(path, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]bool{}
	}
	if s.m[path] == nil {
		s.m[path] = map[string]bool{}
	}
	s.m[path][name] = true
}

// remove reports whether path held the snapshot.
func (s *fileSnaps) remove(path, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.m[path][name]
	delete(s.m[path], name)
	return ok
}

// fresh forgets what path held: a new file is there.
func (s *fileSnaps) fresh(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, path)
}

// execRule answers the guest commands whose argv, joined by spaces,
// contains match.
type execRule struct {
	match string
	res   desktop.ExecResult
	err   error
}

// onExec makes GuestExec answer the commands that contain match with res,
// or with err (the guest agent not answering) when err is not nil. The
// rule added last is tried first; commands no rule matches exit 0.
func (f *fakeHV) onExec(match string, res desktop.ExecResult, err error) {
	f.mu.Lock()
	f.execs = append(f.execs, execRule{match, res, err})
	f.mu.Unlock()
}

// hasSnapshot says whether libvirt keeps snapshot snap of domain n.
func (f *fakeHV) hasSnapshot(n, snap string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snaps[n][snap]
}

// loseSnapshot removes a snapshot behind bureau's back (libvirt's metadata
// of it gone, or never made by a bureau killed half-way through).
func (f *fakeHV) loseSnapshot(n, snap string) {
	f.mu.Lock()
	delete(f.snaps[n], snap)
	f.mu.Unlock()
}

// fail makes method fail from now on ("" = nothing fails).
func (f *fakeHV) fail(method string) {
	f.mu.Lock()
	f.failOn = method
	f.mu.Unlock()
}

// setVM sets a VM's state as if it changed behind bureau's back.
func (f *fakeHV) setVM(name string, st desktop.VMState) {
	f.mu.Lock()
	f.vms[name] = st
	f.mu.Unlock()
}

// vm reads a VM's state.
func (f *fakeHV) vm(name string) desktop.VMState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vms[name]
}

// addCPU adds guest CPU time.
func (f *fakeHV) addCPU(d time.Duration) {
	f.mu.Lock()
	f.cpu += d
	f.mu.Unlock()
}

// callList returns the calls made so far.
func (f *fakeHV) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeHV) step(method, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method+" "+name)
	if f.failOn == method {
		if f.failErr != nil {
			return f.failErr
		}
		return fmt.Errorf("injected %s failure", method)
	}
	return nil
}

func (f *fakeHV) Define(_ context.Context, c desktop.VMConfig) error {
	if err := f.step("Define", c.Name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defined[c.Name] = c
	if _, ok := f.vms[c.Name]; !ok {
		f.vms[c.Name] = desktop.VMShutoff
	}
	return nil
}

// Precondition sets: the states in which libvirt accepts each call.
var (
	vmActive   = []desktop.VMState{desktop.VMRunning, desktop.VMPaused, desktop.VMShutdown}
	vmRunning  = []desktop.VMState{desktop.VMRunning}
	vmInactive = []desktop.VMState{desktop.VMShutoff, desktop.VMCrashed, desktop.VMSaved}
	vmAny      = []desktop.VMState{desktop.VMRunning, desktop.VMPaused, desktop.VMShutdown, desktop.VMShutoff, desktop.VMCrashed, desktop.VMSaved}
)

// set moves a VM to want as method does, refusing it (as libvirt would)
// unless the VM is in one of from, and emits the event libvirt would.
func (f *fakeHV) set(name string, from []desktop.VMState, want desktop.VMState, method string) error {
	if err := f.step(method, name); err != nil {
		return err
	}
	f.mu.Lock()
	cur, ok := f.vms[name]
	if !ok {
		f.mu.Unlock()
		return fmt.Errorf("%s %s: no such domain", method, name)
	}
	if !slices.Contains(from, cur) {
		f.mu.Unlock()
		return fmt.Errorf("%s %s: requested operation is not valid: domain is %s", method, name, cur)
	}
	f.vms[name] = want
	f.mu.Unlock()
	if cur != want {
		f.emit(desktop.VMEvent{Domain: name, State: want, Reason: method})
	}
	return nil
}

// emit sends an event as libvirt's event loop would: dropped, with a
// resync signal, when nobody keeps up.
func (f *fakeHV) emit(ev desktop.VMEvent) {
	select {
	case f.events <- ev:
	default:
		select {
		case f.resync <- struct{}{}:
		default:
		}
	}
}

func (f *fakeHV) Start(_ context.Context, n string) error {
	return f.set(n, vmInactive, desktop.VMRunning, "Start")
}
func (f *fakeHV) StartPaused(_ context.Context, n string) error {
	return f.set(n, []desktop.VMState{desktop.VMSaved}, desktop.VMPaused, "StartPaused")
}
func (f *fakeHV) Destroy(_ context.Context, n string) error {
	f.mu.Lock()
	st, ok := f.vms[n]
	f.mu.Unlock()
	if !ok || !slices.Contains(vmActive, st) {
		if err := f.step("Destroy", n); err != nil || ok {
			return err
		}
		return fmt.Errorf("Destroy %s: no such domain", n)
	}
	return f.set(n, vmActive, desktop.VMShutoff, "Destroy")
}
func (f *fakeHV) Reboot(_ context.Context, n string) error {
	return f.set(n, vmRunning, desktop.VMRunning, "Reboot")
}
func (f *fakeHV) Shutdown(_ context.Context, n string) error {
	if f.ignoreACPI {
		return f.step("Shutdown", n)
	}
	return f.set(n, vmRunning, desktop.VMShutoff, "Shutdown")
}
func (f *fakeHV) Undefine(_ context.Context, n string) error {
	if err := f.step("Undefine", n); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Undefined with its snapshots' metadata; the disk files keep the
	// snapshots' data.
	delete(f.vms, n)
	delete(f.defined, n)
	delete(f.snaps, n)
	return nil
}
func (f *fakeHV) State(_ context.Context, n string) (desktop.VMState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.vms[n]; ok {
		return s, nil
	}
	return desktop.VMMissing, nil
}
func (f *fakeHV) List(context.Context) (map[string]desktop.VMState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]desktop.VMState{}
	var lost []string
	for h := range f.lost {
		lost = append(lost, h)
	}
	for k, v := range f.vms {
		if !f.lost[f.hostOf[k]] {
			out[k] = v
		}
	}
	if len(lost) > 0 {
		return out, &desktop.UnreachableError{Hosts: lost, Err: errors.New("connection lost")}
	}
	return out, nil
}
func (f *fakeHV) Events() <-chan desktop.VMEvent { return f.events }
func (f *fakeHV) Resync() <-chan struct{}        { return f.resync }
func (f *fakeHV) Suspend(_ context.Context, n string) error {
	return f.set(n, vmActive, desktop.VMPaused, "Suspend")
}
func (f *fakeHV) Resume(_ context.Context, n string) error {
	return f.set(n, vmActive, desktop.VMRunning, "Resume")
}
func (f *fakeHV) Reclaim(_ context.Context, n string) (int64, error) {
	if err := f.set(n, []desktop.VMState{desktop.VMPaused}, desktop.VMPaused, "Reclaim"); err != nil {
		return 0, err
	}
	return 64 << 10, nil
}
func (f *fakeHV) Hibernate(_ context.Context, n string) error {
	return f.set(n, vmActive, desktop.VMSaved, "Hibernate")
}
func (f *fakeHV) DiscardHibernation(_ context.Context, n string) error {
	f.mu.Lock()
	saved := f.vms[n] == desktop.VMSaved
	f.mu.Unlock()
	if !saved {
		return f.step("DiscardHibernation", n)
	}
	return f.set(n, vmAny, desktop.VMShutoff, "DiscardHibernation")
}
func (f *fakeHV) SyncGuestClock(_ context.Context, n string) error {
	if err := f.need(n, vmRunning); err != nil {
		return err
	}
	return f.step("SyncGuestClock", n)
}

// need refuses a call on a VM that is not in one of states.
func (f *fakeHV) need(n string, states []desktop.VMState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.vms[n]
	if !ok {
		return fmt.Errorf("%s: no such domain", n)
	}
	if !slices.Contains(states, st) {
		return fmt.Errorf("%s: requested operation is not valid: domain is %s", n, st)
	}
	return nil
}

// diskFiles are the disk files domain n was defined with.
func (f *fakeHV) diskFiles(n string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.defined[n]
	if !ok {
		return nil
	}
	var files []string
	for _, p := range []string{c.OSDisk, c.DataDisk} {
		if p != "" {
			files = append(files, p)
		}
	}
	return files
}

// SnapshotWithMemory, as libvirt: a name the domain has is refused; the
// snapshot is kept in the domain's metadata and in every disk file.
func (f *fakeHV) SnapshotWithMemory(_ context.Context, n, snap, _ string) error {
	if err := f.need(n, vmActive); err != nil {
		return err
	}
	if err := f.step("SnapshotWithMemory", n+"/"+snap); err != nil {
		return err
	}
	f.mu.Lock()
	if f.snaps[n][snap] {
		f.mu.Unlock()
		return fmt.Errorf("snapshot %s: domain %s: operation failed: domain snapshot '%s' already exists", snap, n, snap)
	}
	if f.snaps[n] == nil {
		f.snaps[n] = map[string]bool{}
	}
	f.snaps[n][snap] = true
	f.mu.Unlock()
	for _, file := range f.diskFiles(n) {
		f.files.add(file, snap)
	}
	return nil
}

// RevertSnapshot, as libvirt: a snapshot the domain does not have is
// desktop.ErrNoSnapshot, and the VM is left as it was.
func (f *fakeHV) RevertSnapshot(_ context.Context, n, snap string) error {
	f.mu.Lock()
	_, dom := f.vms[n]
	has := f.snaps[n][snap]
	f.mu.Unlock()
	if dom && !has {
		if err := f.step("RevertSnapshot", n+"/"+snap); err != nil {
			return err
		}
		return fmt.Errorf("revert to snapshot %s: domain %s: Domain snapshot not found: no domain snapshot with matching name '%s': %w", snap, n, snap, desktop.ErrNoSnapshot)
	}
	if err := f.set(n, vmAny, desktop.VMRunning, "RevertSnapshot"); err != nil {
		return err
	}
	f.mu.Lock()
	f.calls[len(f.calls)-1] += "/" + snap
	f.mu.Unlock()
	return nil
}

// DeleteSnapshot, as the libvirt adapter: a snapshot the domain does not
// have is not an error; one it has goes from its metadata and its files.
func (f *fakeHV) DeleteSnapshot(_ context.Context, n, snap string) error {
	if err := f.step("DeleteSnapshot", n+"/"+snap); err != nil {
		return err
	}
	f.mu.Lock()
	if _, ok := f.vms[n]; !ok {
		f.mu.Unlock()
		return fmt.Errorf("delete snapshot %s: domain %s: no such domain", snap, n)
	}
	has := f.snaps[n][snap]
	delete(f.snaps[n], snap)
	f.mu.Unlock()
	if has {
		for _, file := range f.diskFiles(n) {
			f.files.remove(file, snap)
		}
	}
	return nil
}

// attached refuses files domain n does not have (when its definition is
// known), as the adapter's block node lookup does.
func (f *fakeHV) attached(n string, files []string) error {
	disks := f.diskFiles(n)
	if disks == nil {
		return nil
	}
	for _, file := range files {
		if !slices.Contains(disks, file) {
			return fmt.Errorf("disk %s is not attached to %s", file, n)
		}
	}
	return nil
}

// LiveDiskSnapshot, as QMP blockdev-snapshot-internal-sync: a name a file
// has is refused, and the files done before are undone.
func (f *fakeHV) LiveDiskSnapshot(_ context.Context, n, snap string, files []string) (bool, error) {
	if err := f.need(n, vmActive); err != nil {
		return false, err
	}
	if err := f.attached(n, files); err != nil {
		return false, err
	}
	if err := f.step("LiveDiskSnapshot", fmt.Sprintf("%s/%s %d", n, snap, len(files))); err != nil {
		return true, err
	}
	for i, file := range files {
		if f.files.has(file, snap) {
			for _, done := range files[:i] {
				f.files.remove(done, snap)
			}
			return true, fmt.Errorf("snapshot %s of %s: Snapshot with name '%s' already exists on device", snap, file, snap)
		}
		f.files.add(file, snap)
	}
	return true, nil
}

// DeleteLiveDiskSnapshot, as QMP blockdev-snapshot-delete-internal-sync: a
// file without the snapshot stops it with desktop.ErrNoSnapshot (the
// adapter types QMP's error so).
func (f *fakeHV) DeleteLiveDiskSnapshot(_ context.Context, n, snap string, files []string) error {
	if err := f.need(n, vmActive); err != nil {
		return err
	}
	if err := f.attached(n, files); err != nil {
		return err
	}
	if err := f.step("DeleteLiveDiskSnapshot", fmt.Sprintf("%s/%s %d", n, snap, len(files))); err != nil {
		return err
	}
	for _, file := range files {
		if !f.files.remove(file, snap) {
			return fmt.Errorf("delete snapshot %s of %s: Snapshot with id 'null' and name '%s' does not exist on device: %w", snap, file, snap, desktop.ErrNoSnapshot)
		}
	}
	return nil
}

func (f *fakeHV) ResizeDisk(_ context.Context, n, file string, bytes int64) error {
	if err := f.need(n, vmActive); err != nil {
		return err
	}
	return f.step("ResizeDisk", fmt.Sprintf("%s %s %d", n, filepath.Base(file), bytes))
}

// GuestExec answers as onExec scripted, else with exit 0.
func (f *fakeHV) GuestExec(_ context.Context, n string, e desktop.Exec) (*desktop.ExecResult, error) {
	if err := f.step("GuestExec", n); err != nil {
		return nil, err
	}
	if err := f.need(n, vmRunning); err != nil {
		return nil, err
	}
	cmd := strings.Join(e.Argv, " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.execs) - 1; i >= 0; i-- {
		if r := f.execs[i]; strings.Contains(cmd, r.match) {
			if r.err != nil {
				return nil, r.err
			}
			res := r.res
			return &res, nil
		}
	}
	return &desktop.ExecResult{}, nil
}

func (f *fakeHV) CPUTime(context.Context, string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpu, nil
}

func (f *fakeHV) SaveTo(_ context.Context, n, path string) error {
	if err := f.set(n, vmActive, desktop.VMShutoff, "SaveTo"); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("ram of "+n), 0o600)
}
func (f *fakeHV) RestoreAs(_ context.Context, image string, c desktop.VMConfig, _ string, paused bool) error {
	if _, err := os.Stat(image); err != nil {
		return err
	}
	if paused {
		return f.set(c.Name, vmInactive, desktop.VMPaused, "RestorePausedAs")
	}
	return f.set(c.Name, vmInactive, desktop.VMRunning, "RestoreAs")
}

// fakeDisks writes small placeholder files where qemu-img would, and keeps
// the files' internal snapshots as qemu-img sees them: a file must be there
// to be worked on, a snapshot it does not hold is desktop.ErrNoSnapshot,
// and a new file is never made over an existing one.
type fakeDisks struct {
	mu sync.Mutex
	// fail makes operations fail: by method name ("CreateOverlay",
	// "Snapshot"…), or by method and file name ("Snapshot data.qcow2"),
	// which is tried first. A nil error stands for an injected one.
	fail map[string]error
	// snaps records the calls as "op file name".
	snaps *[]string
	// files are the files' snapshots, shared with the harness's fakeHV.
	files *fileSnaps
}

// failOn makes op fail with err (nil: an injected failure); op is a method
// name, optionally followed by a space and a file name.
func (f *fakeDisks) failOn(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[string]error{}
	}
	f.fail[op] = err
}

// heal makes op succeed again.
func (f *fakeDisks) heal(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.fail, op)
}

// snapshots are the file snapshots, made on first use.
func (f *fakeDisks) snapshots() *fileSnaps {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files == nil {
		f.files = &fileSnaps{}
	}
	return f.files
}

// has says whether the file at path holds snapshot name.
func (f *fakeDisks) has(path, name string) bool { return f.snapshots().has(path, name) }

// do records an operation on path (as record, unless "") and says whether
// it fails.
func (f *fakeDisks) do(method, record, path, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snaps != nil && record != "" {
		*f.snaps = append(*f.snaps, record+" "+filepath.Base(path)+" "+name)
	}
	for _, key := range []string{method + " " + filepath.Base(path), method} {
		if err, ok := f.fail[key]; ok {
			if err == nil {
				err = fmt.Errorf("injected %s failure", key)
			}
			return fmt.Errorf("qemu-img %s %s: %w", method, path, err)
		}
	}
	return nil
}

// there refuses a file that is not there, as qemu-img does.
func there(path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("qemu-img: Could not open '%s': %w", path, err)
	}
	return nil
}

// notThere refuses to make a file over an existing one, as storage does.
func notThere(path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s: disk file already exists", path)
	}
	return nil
}

func (f *fakeDisks) Snapshot(_ context.Context, path, name string) error {
	if err := f.do("Snapshot", "snapshot", path, name); err != nil {
		return err
	}
	if err := there(path); err != nil {
		return err
	}
	f.snapshots().add(path, name)
	return nil
}
func (f *fakeDisks) RevertSnapshot(_ context.Context, path, name string) error {
	if err := f.do("RevertSnapshot", "revert", path, name); err != nil {
		return err
	}
	if err := there(path); err != nil {
		return err
	}
	if !f.has(path, name) {
		return fmt.Errorf("qemu-img snapshot: Could not apply snapshot '%s': snapshot not found: %w", name, desktop.ErrNoSnapshot)
	}
	return nil
}
func (f *fakeDisks) DeleteSnapshot(_ context.Context, path, name string) error {
	if err := f.do("DeleteSnapshot", "delete", path, name); err != nil {
		return err
	}
	if err := there(path); err != nil {
		return err
	}
	if !f.snapshots().remove(path, name) {
		return fmt.Errorf("qemu-img snapshot: Could not delete snapshot '%s': snapshot not found: %w", name, desktop.ErrNoSnapshot)
	}
	return nil
}
func (f *fakeDisks) Resize(_ context.Context, path string, size int) error {
	if err := f.do("Resize", "resize", path, fmt.Sprint(size)); err != nil {
		return err
	}
	return there(path)
}
func (f *fakeDisks) CopySnapshot(_ context.Context, src, name, dst, backing string) error {
	if err := f.do("CopySnapshot", "copy "+filepath.Base(src)+"@"+name+" base="+filepath.Base(backing), dst, ""); err != nil {
		return err
	}
	if err := notThere(dst); err != nil {
		return err
	}
	if err := there(src); err != nil {
		return err
	}
	if !f.has(src, name) {
		return fmt.Errorf("qemu-img convert: Failed to load snapshot: Can't find the snapshot %s: %w", name, desktop.ErrNoSnapshot)
	}
	f.snapshots().fresh(dst)
	return os.WriteFile(dst, []byte("copy of "+src+"@"+name), 0o600)
}
func (f *fakeDisks) Copy(_ context.Context, src, dst string) error {
	if err := f.do("Copy", "copy "+filepath.Base(src), dst, ""); err != nil {
		return err
	}
	if err := notThere(dst); err != nil {
		return err
	}
	if err := there(src); err != nil {
		return err
	}
	f.snapshots().fresh(dst)
	return os.WriteFile(dst, []byte("copy of "+src), 0o600)
}

func (f *fakeDisks) CreateDataDisk(_ context.Context, path string, _ int) error {
	if err := f.do("CreateDataDisk", "", path, ""); err != nil {
		return err
	}
	if err := notThere(path); err != nil {
		return err
	}
	f.snapshots().fresh(path)
	return os.WriteFile(path, []byte("data"), 0o600)
}
func (f *fakeDisks) CreateOverlay(_ context.Context, _, path string, _ int) error {
	if err := f.do("CreateOverlay", "", path, ""); err != nil {
		return err
	}
	if err := notThere(path); err != nil {
		return err
	}
	f.snapshots().fresh(path)
	return os.WriteFile(path, []byte("os"), 0o600)
}

type fakeSeeds struct {
	mu   sync.Mutex
	last Seed
}

func (f *fakeSeeds) WriteSeed(_ context.Context, path string, s Seed) error {
	f.mu.Lock()
	f.last = s
	f.mu.Unlock()
	return os.WriteFile(path, []byte("seed of "+s.Hostname), 0o600)
}

type harness struct {
	m     *Manager
	hv    *fakeHV
	disks *fakeDisks // nil when the test brought other Disks
	seeds *fakeSeeds
	store *store.Store
	dir   string
}

func newHarness(t *testing.T, disks Disks) *harness {
	t.Helper()
	return newHarnessIn(t, disks, t.TempDir(), nil)
}

// newHarnessIn keeps the manager's files and database in dir.
func newHarnessIn(t *testing.T, disks Disks, dir string, reserve Reserve) *harness {
	t.Helper()
	dbPath := filepath.Join(dir, "b.db")
	storetest.CopyTo(t, dbPath)
	st, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessOn(t, disks, dir, reserve, st)
}

// newHarnessOn is newHarnessIn with the database st (migrated here).
func newHarnessOn(t *testing.T, disks Disks, dir string, reserve Reserve, st *store.Store) *harness {
	t.Helper()
	if err := st.Migrate(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	st.PutImage(context.Background(), &desktop.Image{Name: "base", Path: filepath.Join(dir, "base.qcow2"), RecipeHash: "abc", CreatedAt: time.Now()})
	st.PutImage(context.Background(), &desktop.Image{Name: "imported", Path: filepath.Join(dir, "ubuntu.qcow2"), CreatedAt: time.Now()})
	hv, seeds := newFakeHV(), &fakeSeeds{}
	fd, _ := disks.(*fakeDisks)
	if fd != nil {
		// The hypervisor and qemu-img work on the same files.
		hv.files = fd.snapshots()
	}
	m := New(Config{DataDir: dir, DefaultImage: "base", Accelerator: desktop.AccelTCG, StopTimeout: 300 * time.Millisecond, DefaultPlan: "unlimited", TemplateSettle: time.Millisecond, TrimSettle: time.Millisecond, Reserve: reserve},
		hv, disks, seeds, st, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { m.Close(); st.Close() })
	return &harness{m: m, hv: hv, disks: fd, seeds: seeds, store: st, dir: dir}
}

// lowering reports an idle tier change under way.
func (h *harness) lowering(id string) bool {
	h.m.idle.mu.Lock()
	defer h.m.idle.mu.Unlock()
	st, ok := h.m.idle.quiet[id]
	return ok && st.lowering
}

// settle waits until the desktop's operation has finished.
func (h *harness) settle(t *testing.T, id string) *desktop.Desktop {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !h.m.ops.isBusy(id) && !h.lowering(id) {
			d, err := h.m.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("desktop %s still busy", id)
	return nil
}

// awaitState waits until the desktop's recorded state is want (an event
// applied in the background) and returns it.
func (h *harness) awaitState(t *testing.T, id string, want desktop.State, timeout time.Duration) *desktop.Desktop {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := h.m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("desktop %s is %s (%q) after %s, want %s", id, got.State, got.LastError, timeout, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitPaused waits until desktop id is recorded paused with lastErr. A
// reconcile may record the pause before the event that says why arrives
// (a listed VM carries no reason): the state alone is not enough.
func (h *harness) awaitPaused(t *testing.T, id, lastErr string, timeout time.Duration) *desktop.Desktop {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := h.m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == desktop.StatePaused && got.LastError == lastErr {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("desktop %s is %s (%q) after %s, want paused (%q)", id, got.State, got.LastError, timeout, lastErr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) create(t *testing.T, name string) *desktop.Desktop {
	t.Helper()
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: name, Actor: "test",
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if d.State != desktop.StateCreating {
		t.Fatalf("create returned state %s, want creating", d.State)
	}
	return d
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
