package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// leave records d as a bureau cut short in the middle of op would have
// left it.
func (h *harness) leave(t *testing.T, id string, st desktop.State, op, step string, desired desktop.State) *desktop.Desktop {
	t.Helper()
	ctx := context.Background()
	d, err := h.store.GetDesktop(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	d.State, d.Operation, d.Step, d.DesiredState = st, op, step, desired
	if err := h.store.UpdateDesktop(ctx, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (h *harness) events(t *testing.T, id string) string {
	t.Helper()
	evs, err := h.m.Events(context.Background(), id, 100)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Type + ": " + e.Message + "\n")
	}
	return b.String()
}

func TestStaleWriteIsAConflict(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "cas").ID)
	a, _ := h.store.GetDesktop(ctx, d.ID)
	b, _ := h.store.GetDesktop(ctx, d.ID)
	a.State = desktop.StateStopped
	if err := h.store.UpdateDesktop(ctx, a); err != nil {
		t.Fatal(err)
	}
	b.State = desktop.StatePaused
	if err := h.store.UpdateDesktop(ctx, b); !errors.Is(err, desktop.ErrConflict) {
		t.Fatalf("write from an older version: %v, want ErrConflict", err)
	}
	if got, _ := h.store.GetDesktop(ctx, d.ID); got.State != desktop.StateStopped {
		t.Fatalf("the lost update was applied: %s", got.State)
	}
}

func TestInterruptedHibernateIsCarriedOut(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	// Two desktops a restart caught mid-hibernate: one VM still running
	// (the save never happened), one already saved by libvirt.
	again := h.settle(t, h.create(t, "again").ID)
	done := h.settle(t, h.create(t, "done").ID)
	h.leave(t, again.ID, desktop.StateHibernating, "hibernate", "", desktop.StateHibernated)
	h.leave(t, done.ID, desktop.StateHibernating, "hibernate", "", desktop.StateHibernated)
	h.hv.setVM(done.DomainName(), desktop.VMSaved)
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*desktop.Desktop{again, done} {
		got := h.settle(t, d.ID)
		if got.State != desktop.StateHibernated || got.DesiredState != desktop.StateHibernated || got.Operation != "" {
			t.Errorf("%s: %s (desired %s, op %q), want hibernated", d.Name, got.State, got.DesiredState, got.Operation)
		}
		if h.hv.vm(d.DomainName()) != desktop.VMSaved {
			t.Errorf("%s: VM is %s", d.Name, h.hv.vm(d.DomainName()))
		}
	}
	if !slices.Contains(h.hv.callList(), "Hibernate "+again.DomainName()) {
		t.Error("the interrupted hibernate was not run again")
	}
	if ev := h.events(t, again.ID); !strings.Contains(ev, "running again the hibernate") || !strings.Contains(ev, "hibernated:") {
		t.Errorf("events do not say what happened:\n%s", ev)
	}
}

func TestInterruptedRevertIsReported(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "rev").ID)
	h.leave(t, d.ID, desktop.StateReverting, "revert", "", desktop.StateRunning)
	h.m.recon.Reconcile(context.Background())
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning || got.Operation != "" || !strings.Contains(got.LastError, "revert was interrupted") {
		t.Fatalf("interrupted revert: %+v", got)
	}
	if !strings.Contains(h.events(t, d.ID), "revert_failed") {
		t.Error("no revert_failed event")
	}
}

func TestInterruptedWarmCreateGetsItsIdentityOrFails(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp, _ := h.m.WarmPool().BuildTemplate(ctx, "base", 2, 2048)
	h.waitTemplate(t, tp.Key)
	warm := func(name string) *desktop.Desktop {
		d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: name, SSHKeys: []string{"ssh-ed25519 AAAA " + name},
			Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
		if err != nil {
			t.Fatal(err)
		}
		return h.settle(t, d.ID)
	}
	// Restored, identity not applied yet: the restart applies it.
	restored := warm("restored")
	h.leave(t, restored.ID, desktop.StateCreating, "create", stepWarmIdentity, desktop.StateRunning)
	os.WriteFile(identityKeys(restored), []byte("ssh-ed25519 AAAA restored"), 0o600)
	os.WriteFile(filepath.Join(restored.Dir, "restore.save"), []byte("scratch"), 0o600)
	execs := strings.Count(strings.Join(h.hv.callList(), "\n"), "GuestExec "+restored.DomainName())
	// Restore never happened: the VM must not be started as the template.
	early := warm("early")
	h.leave(t, early.ID, desktop.StateCreating, "create", stepWarmRestore, desktop.StateRunning)
	h.hv.setVM(early.DomainName(), desktop.VMShutoff)
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, restored.ID)
	if got.State != desktop.StateRunning || got.Operation != "" {
		t.Errorf("restored: %+v", got)
	}
	if n := strings.Count(strings.Join(h.hv.callList(), "\n"), "GuestExec "+restored.DomainName()); n != execs+1 {
		t.Errorf("identity script ran %d more times, want 1", n-execs)
	}
	if exists(identityKeys(restored)) || exists(filepath.Join(restored.Dir, "restore.save")) {
		t.Error("scratch files of the warm create left behind")
	}
	if ev := h.events(t, restored.ID); !strings.Contains(ev, "created: desktop restored created from a warm template, finished after a bureau restart") {
		t.Errorf("no created event:\n%s", ev)
	}
	got = h.settle(t, early.ID)
	if got.State != desktop.StateError || !strings.Contains(got.LastError, "would run as the template") {
		t.Errorf("early: %+v", got)
	}
	if h.hv.vm(early.DomainName()) == desktop.VMRunning {
		t.Error("a desktop without its own identity was started")
	}
}

func TestDeleteFromAStuckStateRemovesEverything(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "stuck").ID)
	h.leave(t, d.ID, desktop.StateResuming, "", "", desktop.StateRunning)
	for _, f := range []string{"restore.save", "os.qcow2.new", "identity.keys"} {
		os.WriteFile(filepath.Join(d.Dir, f), []byte("x"), 0o600)
	}
	res, err := h.m.Delete(ctx, d.ID, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(d.Dir)
	if len(entries) != 1 || entries[0].Name() != "data.qcow2" || res.DataDiskKept != d.DataDiskPath {
		t.Errorf("left after delete keeping data: %v (kept %q)", entries, res.DataDiskKept)
	}
	d2 := h.settle(t, h.create(t, "stuck2").ID)
	h.leave(t, d2.ID, desktop.StateHibernating, "", "", desktop.StateHibernated)
	os.WriteFile(filepath.Join(d2.Dir, "restore.save"), []byte("x"), 0o600)
	if _, err := h.m.Delete(ctx, d2.ID, "test", true); err != nil || exists(d2.Dir) {
		t.Fatalf("delete with data: %v, dir left: %v", err, exists(d2.Dir))
	}
}

func TestDeleteAndForceStopCutAHangingOperationShort(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	h.m.life.stopTimeout = time.Hour // the guest ignores ACPI: stop would wait an hour
	ctx := context.Background()
	d := h.settle(t, h.create(t, "hang").ID)
	h.hv.ignoreACPI = true
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatalf("force stop while a stop hangs: %v", err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped || time.Since(begun) > 5*time.Second {
		t.Fatalf("force stop: %s after %s", got.State, time.Since(begun))
	}
	if _, err := h.m.Start(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	h.m.Stop(ctx, d.ID, "test", StopOptions{Timeout: time.Hour})
	if _, err := h.m.Delete(ctx, d.ID, "test", true); err != nil {
		t.Fatalf("delete while a stop hangs: %v", err)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateDeleted {
		t.Fatalf("after delete: %s", got.State)
	}
}

func TestEventDuringAnOperationIsCheckedWhenItEnds(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "ev").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	// The guest powers itself off while a snapshot holds the desktop.
	if err := h.m.ops.lock(d.ID, "snapshot"); err != nil {
		t.Fatal(err)
	}
	h.hv.setVM(d.DomainName(), desktop.VMShutoff)
	h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMShutoff, Reason: "Stopped Shutdown"}
	time.Sleep(100 * time.Millisecond)
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("the event was applied under a running operation: %s", got.State)
	}
	h.m.ops.unlock(d.ID)
	h.awaitState(t, d.ID, desktop.StateStopped, 2*time.Second)
}

func TestLateEventDoesNotUndoNewerState(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "late").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	// A "paused" event arrives after the VM was already resumed.
	h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMPaused, Reason: "Suspended"}
	time.Sleep(200 * time.Millisecond)
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("a late event overwrote the state: %s", got.State)
	}
}

func TestPeriodicReconcileRepairsMissedEvents(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	h.m.cfg.ReconcileEvery = 50 * time.Millisecond
	d := h.settle(t, h.create(t, "missed").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	// The VM stops and no event says so.
	h.hv.setVM(d.DomainName(), desktop.VMShutoff)
	got := h.awaitState(t, d.ID, desktop.StateStopped, 2*time.Second)
	if got.DesiredState != desktop.StateStopped {
		t.Errorf("desired state after the guest stopped: %s", got.DesiredState)
	}
}

func TestResyncReconcilesAtOnce(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	h.m.cfg.ReconcileEvery = time.Hour
	d := h.settle(t, h.create(t, "resync").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	// libvirt reconnected (or dropped an event): what changed meanwhile is
	// found without waiting for the periodic reconcile.
	h.hv.setVM(d.DomainName(), desktop.VMPaused)
	h.hv.resync <- struct{}{}
	h.awaitState(t, d.ID, desktop.StatePaused, 2*time.Second)
}

func TestPauseFinishesWhenTheCallerGoesAway(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "gone").ID)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.m.Pause(ctx, d.ID, "test"); err != nil {
		t.Fatalf("pause with the caller gone: %v", err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StatePaused {
		t.Fatalf("state: %s", got.State)
	}
}

func TestKeyboardLayout(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	var ve *desktop.ValidationError
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "bad", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1},
		KeyboardLayout: "German"}); !errors.As(err, &ve) || ve.Field != "keyboard_layout" {
		t.Fatalf("create with a bad layout: %v", err)
	}
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "de", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1},
		KeyboardLayout: "de"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settle(t, d.ID); got.KeyboardLayout != "de" || h.seeds.last.KeyboardLayout != "de" {
		t.Fatalf("layout recorded %q, in the seed %q", got.KeyboardLayout, h.seeds.last.KeyboardLayout)
	}
	plain := h.settle(t, h.create(t, "plain").ID)
	if plain.KeyboardLayout != "us" {
		t.Errorf("default layout %q", plain.KeyboardLayout)
	}
	execs := len(h.hv.callList())
	got, err := h.m.SetKeyboardLayout(ctx, d.ID, "fr", "alice")
	if err != nil || got.KeyboardLayout != "fr" || !slices.Contains(h.hv.callList()[execs:], "GuestExec "+d.DomainName()) {
		t.Fatalf("set layout: %v %+v", err, got)
	}
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	var te *desktop.TransitionError
	if _, err := h.m.SetKeyboardLayout(ctx, d.ID, "gb", "alice"); !errors.As(err, &te) {
		t.Fatalf("set layout of a stopped desktop: %v", err)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.KeyboardLayout != "fr" {
		t.Errorf("a refused change was recorded: %q", got.KeyboardLayout)
	}
}

func TestReconcileKeepsWhyAnOperationFailed(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "failed").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	h.hv.fail("Start")
	h.m.Start(ctx, d.ID, "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateError {
		t.Fatalf("failed start: %s", got.State)
	}
	h.hv.fail("")
	h.m.recon.Reconcile(ctx)
	h.m.recon.Reconcile(ctx)
	got, _ := h.m.Get(ctx, d.ID)
	if got.State != desktop.StateStopped || !strings.Contains(got.LastError, "injected Start failure") {
		t.Fatalf("after reconcile: %s %q", got.State, got.LastError)
	}
}

// TestInterruptedNapSettlesAsItsVM: a nap or sleep a restart cut short
// settles as what its VM is (a paused VM naps, a running one runs); a VM
// that is gone is reported as such, not settled silently.
func TestInterruptedNapSettlesAsItsVM(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	for _, c := range []struct {
		vm    desktop.VMState
		want  desktop.State
		error string
	}{
		{desktop.VMPaused, desktop.StateNapping, ""},
		{desktop.VMRunning, desktop.StateRunning, ""},
		{desktop.VMMissing, desktop.StateError, "the VM is gone from libvirt"},
	} {
		d := h.settle(t, h.create(t, "nap-"+string(c.vm)).ID)
		h.leave(t, d.ID, desktop.StatePausing, string(desktop.OpSleep), "", desktop.StateSleeping)
		h.hv.setVM(d.DomainName(), c.vm)
		if err := h.m.recon.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := h.settle(t, d.ID)
		if got.State != c.want || got.Operation != "" || !strings.Contains(got.LastError, c.error) {
			t.Errorf("VM %s: %s (op %q, error %q), want %s", c.vm, got.State, got.Operation, got.LastError, c.want)
		}
	}
}

// TestKeyboardLayoutTheGuestRefuses: what the guest answers decides: a
// layout it lacks (exit 3) is the caller's mistake, another failure says
// what the guest printed, and neither is recorded.
func TestKeyboardLayoutTheGuestRefuses(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "kb").ID)
	setLayout := `set_layout "$1"`
	h.hv.onExec(setLayout, desktop.ExecResult{ExitCode: 3, Stderr: []byte("the guest has no XKB layout fr")}, nil)
	var ve *desktop.ValidationError
	if _, err := h.m.SetKeyboardLayout(ctx, d.ID, "fr", "alice"); !errors.As(err, &ve) || ve.Field != "keyboard_layout" {
		t.Errorf("a layout the guest lacks: %v, want a validation error", err)
	}
	h.hv.onExec(setLayout, desktop.ExecResult{ExitCode: 1, Stderr: []byte("su: user agent does not exist\n")}, nil)
	if _, err := h.m.SetKeyboardLayout(ctx, d.ID, "fr", "alice"); err == nil || errors.As(err, &ve) || !strings.Contains(err.Error(), "exit 1: su: user agent does not exist") {
		t.Errorf("a guest failing: %v, want its exit status and stderr", err)
	}
	h.hv.onExec(setLayout, desktop.ExecResult{}, fmt.Errorf("domain x: guest agent not answering: %w", desktop.ErrUnavailable))
	if _, err := h.m.SetKeyboardLayout(ctx, d.ID, "fr", "alice"); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("a guest agent not answering: %v, want unavailable", err)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.KeyboardLayout != "us" || got.State != desktop.StateRunning {
		t.Errorf("after refused changes: layout %q, %s", got.KeyboardLayout, got.State)
	}
	h.hv.onExec(setLayout, desktop.ExecResult{}, nil)
	if got, err := h.m.SetKeyboardLayout(ctx, d.ID, "fr", "alice"); err != nil || got.KeyboardLayout != "fr" {
		t.Errorf("once the guest takes it: %v", err)
	}
}
