package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestCreateBootsDesktop(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "agent-1").ID)
	if d.State != desktop.StateRunning || d.Operation != "" || d.LastError != "" {
		t.Fatalf("after create: %+v", d)
	}
	for _, f := range []string{"os.qcow2", "data.qcow2", "seed.iso"} {
		if !exists(filepath.Join(d.Dir, f)) {
			t.Errorf("%s missing", f)
		}
	}
	vm := h.hv.defined[d.DomainName()]
	if vm.DataDisk != d.DataDiskPath || vm.VCPUs != 2 || vm.Accelerator != desktop.AccelTCG || !strings.HasSuffix(vm.VNCSocket, "vnc.sock") {
		t.Errorf("VM config = %+v", vm)
	}
	if s := h.seeds.last; s.Hostname != "agent-1" || s.DesktopID != d.ID || s.InstallDesktop {
		t.Errorf("seed for a built image = %+v", s)
	}
	imp, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "ubuntu",
		Spec: desktop.Spec{Image: "imported", VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h.settle(t, imp.ID)
	if !h.seeds.last.InstallDesktop {
		t.Error("an imported image's seed does not install the desktop")
	}
	evs, _ := h.m.Events(context.Background(), d.ID, 10)
	if len(evs) < 2 || evs[len(evs)-1].Type != "created" {
		t.Errorf("events = %v", evs)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	bad := []CreateRequest{
		{Owner: "a", Name: "Bad_Name", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}},
		{Owner: "a", Name: "ok", Spec: desktop.Spec{VCPUs: 0, MemoryMiB: 1024, DataDiskGiB: 1}},
		{Owner: "a", Name: "ok", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1, Image: "nope"}},
	}
	for _, req := range bad {
		var ve *desktop.ValidationError
		if _, err := h.m.Create(ctx, req); !errors.As(err, &ve) {
			t.Errorf("%+v: got %v, want ValidationError", req, err)
		}
	}
	h.settle(t, h.create(t, "dup").ID)
	_, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "dup", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if !errors.Is(err, desktop.ErrNameTaken) {
		t.Fatalf("duplicate: %v", err)
	}
	all, _ := h.m.List(ctx, desktop.Filter{})
	if len(all) != 1 {
		t.Fatalf("rejected creates left %d desktops", len(all))
	}
}

func TestFailedCreateCleansUp(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	h.hv.fail("Start")
	d := h.settle(t, h.create(t, "broken").ID)
	if d.State != desktop.StateError || !strings.Contains(d.LastError, "injected Start failure") {
		t.Fatalf("after failed create: %+v", d)
	}
	if _, ok := h.hv.defined[d.DomainName()]; ok {
		t.Error("domain left defined")
	}
	if exists(d.Dir) {
		t.Errorf("files left in %s", d.Dir)
	}
}

func TestFailedCreateKeepsExistingDataDisk(t *testing.T) {
	h := newHarness(t, &fakeDisks{fail: map[string]error{"CreateOverlay": nil}})
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "reuse",
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// That first build made its own data disk and, failing, removed it.
	if d := h.settle(t, d.ID); d.State != desktop.StateError || exists(d.DataDiskPath) {
		t.Fatalf("first build: %+v, data disk exists=%v", d, exists(d.DataDiskPath))
	}
	// Now a data disk that was there before the build (e.g. a user's
	// workspace) must survive the same failure.
	os.MkdirAll(d.Dir, 0o750)
	os.WriteFile(d.DataDiskPath, []byte("precious"), 0o600)
	cp := *d
	h.m.ops.lock(d.ID, "create")
	h.m.creator.build(context.Background(), &cp, "/base", Seed{DesktopID: d.ID, Hostname: d.Name}, nil, nil, false)
	h.m.ops.unlock(d.ID)
	if b, _ := os.ReadFile(d.DataDiskPath); string(b) != "precious" {
		t.Fatal("pre-existing data disk was removed or changed by a failed create")
	}
}

func TestStopStartAndStateErrors(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	id := h.settle(t, h.create(t, "s1").ID).ID
	d, err := h.m.Stop(ctx, id, "test", StopOptions{})
	if err != nil || d.State != desktop.StateStopping {
		t.Fatalf("stop: %v %+v", err, d)
	}
	if d := h.settle(t, id); d.State != desktop.StateStopped || d.DesiredState != desktop.StateStopped {
		t.Fatalf("after stop: %+v", d)
	}
	var te *desktop.TransitionError
	if _, err := h.m.Stop(ctx, id, "test", StopOptions{}); !errors.As(err, &te) || te.State != desktop.StateStopped {
		t.Fatalf("stop stopped: %v", err)
	}
	if _, err := h.m.Start(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Start(ctx, id, "test"); !errors.Is(err, desktop.ErrBusy) && !errors.As(err, &te) {
		t.Fatalf("second start while starting: %v", err)
	}
	if d := h.settle(t, id); d.State != desktop.StateRunning {
		t.Fatalf("after start: %+v", d)
	}
	if _, err := h.m.Start(ctx, "nope", "test"); !errors.Is(err, desktop.ErrNotFound) {
		t.Fatalf("start unknown: %v", err)
	}
}

func TestStopForcesGuestThatIgnoresACPI(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	id := h.settle(t, h.create(t, "stubborn").ID).ID
	h.hv.ignoreACPI = true
	h.m.Stop(context.Background(), id, "test", StopOptions{Timeout: 100 * time.Millisecond})
	d := h.settle(t, id)
	if d.State != desktop.StateStopped {
		t.Fatalf("after forced stop: %+v", d)
	}
	evs, _ := h.m.Events(context.Background(), id, 1)
	if !strings.Contains(evs[0].Message, "forced after") {
		t.Errorf("stop event = %q, want it to say it was forced", evs[0].Message)
	}
}

func TestDeleteKeepsDataDiskUnlessAsked(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	keep := h.settle(t, h.create(t, "keep").ID)
	res, err := h.m.Delete(ctx, keep.ID, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.DataDiskKept != keep.DataDiskPath || !exists(keep.DataDiskPath) || exists(filepath.Join(keep.Dir, "os.qcow2")) {
		t.Fatalf("delete keep: %+v", res)
	}
	if h.hv.vm(keep.DomainName()) != "" {
		t.Error("domain left after delete")
	}
	if d, _ := h.m.Get(ctx, keep.ID); d.State != desktop.StateDeleted || d.DeletedAt == nil || d.DataDiskPath != keep.DataDiskPath {
		t.Fatalf("deleted record: %+v", d)
	}
	if _, err := h.m.Delete(ctx, keep.ID, "test", false); !errors.Is(err, desktop.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	gone := h.settle(t, h.create(t, "gone").ID)
	res, err = h.m.Delete(ctx, gone.ID, "test", true)
	if err != nil || !res.DataDeleted || exists(gone.Dir) {
		t.Fatalf("delete with data: %+v %v, dir exists=%v", res, err, exists(gone.Dir))
	}
}

func TestReconcile(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	running := h.settle(t, h.create(t, "running").ID)
	vanished := h.settle(t, h.create(t, "vanished").ID)
	halfDeleted := h.settle(t, h.create(t, "half-deleted").ID)
	// A restart finds: a VM still running, a VM gone with no intent, and a
	// delete that was recorded but not carried out.
	delete(h.hv.vms, vanished.DomainName())
	halfDeleted.State, halfDeleted.Operation = desktop.StateDeleting, "delete"
	h.store.UpdateDesktop(ctx, halfDeleted)
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := h.m.Get(ctx, running.ID); d.State != desktop.StateRunning {
		t.Errorf("running desktop became %s", d.State)
	}
	if h.hv.vm(running.DomainName()) != desktop.VMRunning {
		t.Error("reconcile touched a running VM")
	}
	d, _ := h.m.Get(ctx, vanished.ID)
	if d.State != desktop.StateError || !strings.Contains(d.LastError, "disappeared") || d.DeletedAt != nil {
		t.Errorf("vanished desktop: %+v", d)
	}
	if !exists(vanished.DataDiskPath) {
		t.Error("vanished desktop's data disk was removed")
	}
	if d, _ := h.m.Get(ctx, halfDeleted.ID); d.State != desktop.StateDeleted || !exists(halfDeleted.DataDiskPath) {
		t.Errorf("interrupted delete not finished with data kept: %+v", d)
	}
}

// A VM reported missing (a libvirtd just restarted can answer before it
// has loaded every domain) is asked about again before the desktop is
// said to have lost it.
func TestReconcileRechecksAMissingVM(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "back").ID)
	h.hv.mu.Lock()
	vm := h.hv.vms[d.DomainName()]
	delete(h.hv.vms, d.DomainName())
	h.hv.mu.Unlock()
	go func() { // back a moment later
		time.Sleep(10 * time.Millisecond)
		h.hv.mu.Lock()
		h.hv.vms[d.DomainName()] = vm
		h.hv.mu.Unlock()
	}()
	h.m.recon.reconcileOne(ctx, d.ID, desktop.VMMissing)
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning || got.LastError != "" {
		t.Errorf("a VM missing for a moment marked the desktop: %+v", got)
	}
}

func init() { missingRecheck = 50 * time.Millisecond }

func TestGuestPowerOffEventStopsDesktop(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "ev").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	h.hv.setVM(d.DomainName(), desktop.VMShutoff)
	h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMShutoff, Reason: "Stopped Shutdown"}
	h.awaitState(t, d.ID, desktop.StateStopped, 2*time.Second)
}

func TestCrashMarksCrashedAndRestartPolicyRestarts(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	plain := h.settle(t, h.create(t, "plain").ID)
	kept := h.settle(t, h.create(t, "kept").ID)
	if _, err := h.m.SetRestartOnCrash(ctx, kept.ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*desktop.Desktop{plain, kept} {
		h.hv.setVM(d.DomainName(), desktop.VMCrashed)
		h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMCrashed, Reason: "Stopped Failed"}
	}
	wait := func(id string, want desktop.State) *desktop.Desktop {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if got, _ := h.m.Get(ctx, id); got.State == want && !h.m.ops.isBusy(id) {
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
		got, _ := h.m.Get(ctx, id)
		t.Fatalf("desktop %s is %s, want %s", id, got.State, want)
		return nil
	}
	if got := wait(plain.ID, desktop.StateCrashed); !strings.Contains(got.LastError, "QEMU process died") {
		t.Errorf("crashed desktop's reason: %q", got.LastError)
	}
	// The kept desktop was running before the crash too: wait for the
	// restart itself, then for it to settle running.
	deadline := time.Now().Add(3 * time.Second)
	var actors []string
	for !strings.Contains(strings.Join(actors, ","), "restart on crash") {
		if time.Now().After(deadline) {
			t.Fatalf("no restart event: %v", actors)
		}
		time.Sleep(10 * time.Millisecond)
		evs, _ := h.m.Events(ctx, kept.ID, 20)
		actors = actors[:0]
		for _, e := range evs {
			actors = append(actors, e.Actor)
		}
	}
	wait(kept.ID, desktop.StateRunning)
}

func TestReconcileFinishesInterruptedCreates(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	defined := h.settle(t, h.create(t, "defined").ID)
	early := h.settle(t, h.create(t, "early").ID)
	// A restart finds one create that got as far as defining the VM and one
	// that stopped before it.
	h.hv.setVM(defined.DomainName(), desktop.VMShutoff)
	defined.State, defined.Operation = desktop.StateCreating, "create"
	h.store.UpdateDesktop(ctx, defined)
	h.hv.mu.Lock()
	delete(h.hv.vms, early.DomainName())
	h.hv.mu.Unlock()
	early.State, early.Operation = desktop.StateCreating, "create"
	h.store.UpdateDesktop(ctx, early)
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := h.m.Get(ctx, defined.ID); d.State != desktop.StateRunning || h.hv.vm(defined.DomainName()) != desktop.VMRunning {
		t.Errorf("create interrupted after define: %s, VM %s", d.State, h.hv.vm(defined.DomainName()))
	}
	d, _ := h.m.Get(ctx, early.ID)
	if d.State != desktop.StateError || !strings.Contains(d.LastError, "before the VM was defined") || !exists(d.DataDiskPath) {
		t.Errorf("create interrupted before define: %+v", d)
	}
}

// TestCreateWithAFailingDiskOperation: a disk qemu-img cannot make fails
// the create with why, and leaves no half-made desktop behind: no files,
// no folder, no VM.
func TestCreateWithAFailingDiskOperation(t *testing.T) {
	for op, why := range map[string]string{"CreateDataDisk": "data disk: ", "CreateOverlay": "OS disk: "} {
		t.Run(op, func(t *testing.T) {
			h := newHarness(t, &fakeDisks{})
			h.disks.failOn(op, syscall.ENOSPC)
			d := h.settle(t, h.create(t, "broken").ID)
			if d.State != desktop.StateError || !strings.Contains(d.LastError, why) || !strings.Contains(d.LastError, syscall.ENOSPC.Error()) {
				t.Fatalf("after create: %s (%q), want error with %q", d.State, d.LastError, why+"…"+syscall.ENOSPC.Error())
			}
			if exists(d.Dir) {
				t.Errorf("files left in %s", d.Dir)
			}
			if st := h.hv.vm(d.DomainName()); st != "" {
				t.Errorf("VM %s left", st)
			}
			for _, c := range h.hv.callList() {
				if strings.HasPrefix(c, "Define ") || strings.HasPrefix(c, "Start ") {
					t.Errorf("the VM was %s without its disks", c)
				}
			}
		})
	}
}

// TestLostLibvirtdLeavesTheOperationToReconcile: a start whose link to
// libvirtd broke mid-call is not a failure of the desktop: it stays
// recorded as cut short (never error) and reconcile settles it once
// libvirtd answers, here by running the start again.
func TestLostLibvirtdLeavesTheOperationToReconcile(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	id := h.settle(t, h.create(t, "lost").ID).ID
	h.m.Stop(ctx, id, "test", StopOptions{})
	h.settle(t, id)
	h.hv.mu.Lock()
	h.hv.failOn, h.hv.failErr = "Start", fmt.Errorf("domain x: End of file while reading data: Input/output error: %w", desktop.ErrHostLost)
	h.hv.mu.Unlock()
	if _, err := h.m.Start(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	d := h.settle(t, id)
	if d.State == desktop.StateError || d.Operation != "start" || !strings.Contains(d.LastError, "cut short") {
		t.Fatalf("after the lost link: %s op=%q %q, want the start recorded as cut short", d.State, d.Operation, d.LastError)
	}
	if !strings.Contains(h.events(t, id), "start_interrupted") {
		t.Error("no start_interrupted event")
	}
	h.hv.mu.Lock()
	h.hv.failOn, h.hv.failErr = "", nil
	h.hv.mu.Unlock()
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if d := h.awaitState(t, id, desktop.StateRunning, 10*time.Second); d.Operation != "" || d.DesiredState != desktop.StateRunning {
		t.Errorf("after reconcile: %+v", d)
	}
}
