package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/capacity"
	"github.com/bureau/bureau/internal/desktop"
)

func TestPauseResume(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "p").ID)
	p, err := h.m.Pause(ctx, d.ID, "alice")
	if err != nil || p.State != desktop.StatePaused || h.hv.vm(d.DomainName()) != desktop.VMPaused {
		t.Fatalf("pause: %v %+v", err, p)
	}
	var te *desktop.TransitionError
	if _, err := h.m.Pause(ctx, d.ID, "alice"); !errors.As(err, &te) {
		t.Errorf("pausing a paused desktop: %v", err)
	}
	if _, err := h.m.Reboot(ctx, d.ID, "alice"); !errors.As(err, &te) {
		t.Errorf("rebooting a paused desktop: %v", err)
	}
	r, err := h.m.Resume(ctx, d.ID, "alice")
	if err != nil || r.State != desktop.StateRunning || h.hv.vm(d.DomainName()) != desktop.VMRunning {
		t.Fatalf("resume: %v %+v", err, r)
	}
}

func TestPauseFailureKeepsDesktopRunning(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "p").ID)
	h.hv.fail("Suspend")
	if _, err := h.m.Pause(context.Background(), d.ID, "alice"); err == nil {
		t.Fatal("pause succeeded despite the hypervisor failing")
	}
	if got, _ := h.m.Get(context.Background(), d.ID); got.State != desktop.StateRunning || h.m.ops.isBusy(d.ID) {
		t.Fatalf("after a failed pause: %+v busy=%v", got, h.m.ops.isBusy(d.ID))
	}
}

func TestHibernateAndResumeOrStart(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "h").ID)
	hb, err := h.m.Hibernate(ctx, d.ID, "alice")
	if err != nil || hb.State != desktop.StateHibernating {
		t.Fatalf("hibernate: %v %+v", err, hb)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateHibernated || h.hv.vm(d.DomainName()) != desktop.VMSaved {
		t.Fatalf("after hibernate: %+v vm=%s", got, h.hv.vm(d.DomainName()))
	}
	if r, err := h.m.Resume(ctx, d.ID, "alice"); err != nil || r.State != desktop.StateResuming {
		t.Fatalf("resume: %v %+v", err, r)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("after resume: %+v", got)
	}
	// Start works on a hibernated desktop too, and restores it.
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.m.Start(ctx, d.ID, "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("start from hibernation: %+v", got)
	}
	evs, _ := h.m.Events(ctx, d.ID, 50)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if s := strings.Join(types, " "); strings.Count(s, "hibernated") != 2 || strings.Count(s, "resumed") != 2 {
		t.Errorf("events %v", types)
	}
}

func TestFailedHibernateLeavesDesktopRunning(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "h").ID)
	h.hv.fail("Hibernate")
	h.m.Hibernate(context.Background(), d.ID, "alice")
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning || !strings.Contains(got.LastError, "hibernate failed") {
		t.Fatalf("after failed hibernate: %+v", got)
	}
}

func TestStopHibernatedDiscardsSavedRAM(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "h").ID)
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{})
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped || h.hv.vm(d.DomainName()) != desktop.VMShutoff {
		t.Fatalf("stop of a hibernated desktop: %+v vm=%s", got, h.hv.vm(d.DomainName()))
	}
}

func TestWake(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "w").ID)
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	w, err := h.m.Wake(ctx, d.ID, "alice")
	if err != nil || w.State != desktop.StateRunning {
		t.Fatalf("wake hibernated: %v %+v", err, w)
	}
	if _, err := h.m.Pause(ctx, d.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StatePaused {
		t.Fatalf("pause: %s", got.State)
	}
	if w, err := h.m.Wake(ctx, d.ID, "alice"); err != nil || w.State != desktop.StateRunning {
		t.Fatalf("wake paused: %v %+v", err, w)
	}
	h.settle(t, d.ID)
	if _, err := h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	var te *desktop.TransitionError
	if _, err := h.m.Wake(ctx, d.ID, "alice"); !errors.As(err, &te) || te.State != desktop.StateStopped {
		t.Fatalf("wake stopped: %v", err)
	}
}

func TestReconcileFindsPausedAndHibernated(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	a := h.settle(t, h.create(t, "a").ID)
	b := h.settle(t, h.create(t, "b").ID)
	h.hv.setVM(a.DomainName(), desktop.VMPaused)
	h.hv.setVM(b.DomainName(), desktop.VMSaved)
	if err := h.m.recon.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.m.Get(ctx, a.ID); got.State != desktop.StatePaused {
		t.Errorf("paused VM → %s", got.State)
	}
	if got, _ := h.m.Get(ctx, b.ID); got.State != desktop.StateHibernated {
		t.Errorf("saved VM → %s", got.State)
	}
}

// TestIOErrorPause: QEMU pausing a VM on a failed disk write (a full host
// disk) shows as paused with the reason; using the desktop says why
// instead of resuming into the same error; an explicit resume runs it.
func TestIOErrorPause(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "io").ID)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	h.hv.setVM(d.DomainName(), desktop.VMPaused)
	h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMPaused, Reason: "Suspended I/O Error", IOError: true}
	h.awaitPaused(t, d.ID, IOErrorPause, 2*time.Second)
	if _, err := h.m.Wake(ctx, d.ID, "alice"); !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "disk") {
		t.Errorf("using a desktop paused on a full disk: %v", err)
	}
	if h.hv.vm(d.DomainName()) != desktop.VMPaused {
		t.Error("wake on use resumed a desktop paused on a disk error")
	}
	if r, err := h.m.Resume(ctx, d.ID, "alice"); err != nil || r.State != desktop.StateRunning || r.LastError != "" {
		t.Fatalf("resume after freeing space: %+v %v", r, err)
	}
}

// TestStateRecordedOnAFullDisk: desktops filled the real file system the
// SQLite database is on; the I/O-error pause is still recorded, because
// bureau gives up the space it reserved for that.
func TestStateRecordedOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2200m"); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	reserve := capacity.Reserve{Path: filepath.Join(dir, "reserve"), Size: 16 << 20}
	h := newHarnessIn(t, &fakeDisks{}, dir, reserve)
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(reserve.Path); err != nil {
		t.Fatalf("no reserve after start: %v", err)
	}
	d := h.settle(t, h.create(t, "full").ID)
	f, _ := os.Create(filepath.Join(dir, "filler"))
	for off, chunk := int64(0), int64(1<<30); chunk >= 4096; {
		if err := syscall.Fallocate(int(f.Fd()), 0, off, chunk); err != nil {
			chunk /= 2
			continue
		}
		off += chunk
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "probe"), make([]byte, 1<<20), 0o644); err == nil {
		t.Fatal("the file system is not full")
	}
	h.hv.setVM(d.DomainName(), desktop.VMPaused)
	h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMPaused, Reason: "Suspended I/O Error", IOError: true}
	h.awaitPaused(t, d.ID, IOErrorPause, 5*time.Second)
	_, err := os.Stat(reserve.Path)
	t.Logf("reserve released: %v", os.IsNotExist(err))
}

// TestIOErrorPauseDuringAnOperation: QEMU pausing the VM on a failed write
// while an operation holds the desktop (a resume into a still-full disk) is
// applied once the operation ends, if the VM is still paused then.
func TestIOErrorPauseDuringAnOperation(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	if err := h.m.Run(); err != nil {
		t.Fatal(err)
	}
	for _, stillPaused := range []bool{true, false} {
		d := h.settle(t, h.create(t, fmt.Sprintf("busy-%t", stillPaused)).ID)
		if err := h.m.ops.lock(d.ID, "test"); err != nil {
			t.Fatal(err)
		}
		// As an operation's beginRow does: wait out a handler that began
		// before the desktop was busy (the create's recheck), so the VM
		// is changed only under the operation.
		h.m.ops.row(d.ID).Lock()
		h.m.ops.row(d.ID).Unlock()
		h.hv.setVM(d.DomainName(), desktop.VMPaused)
		h.hv.events <- desktop.VMEvent{Domain: d.DomainName(), State: desktop.VMPaused, Reason: "Suspended I/O Error", IOError: true}
		time.Sleep(100 * time.Millisecond)
		if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
			t.Fatalf("an event changed a busy desktop: %s", got.State)
		}
		if !stillPaused {
			h.hv.setVM(d.DomainName(), desktop.VMRunning)
		}
		h.m.ops.unlock(d.ID)
		if stillPaused {
			h.awaitPaused(t, d.ID, IOErrorPause, 2*time.Second) // VM still paused after the operation
			continue
		}
		time.Sleep(200 * time.Millisecond) // the check after unlock has run
		if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
			t.Errorf("VM running again after the operation: desktop %s", got.State)
		}
	}
}

// TestHibernateShrinksARunningGuestFirst: hibernating a running desktop
// drops its guest's page cache before the save (a smaller image, restored
// faster); a frozen one was trimmed before it froze and is saved as it is;
// a guest that does not answer is hibernated anyway.
func TestHibernateShrinksARunningGuestFirst(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "shrink").ID)
	order := func() []string {
		var out []string
		for _, c := range h.hv.callList() {
			if m, _, _ := strings.Cut(c, " "); m == "GuestExec" || m == "Hibernate" {
				out = append(out, m)
			}
		}
		return out
	}
	h.m.Hibernate(ctx, d.ID, "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateHibernated {
		t.Fatalf("hibernate: %+v", got)
	}
	if got := order(); !slices.Equal(got, []string{"GuestExec", "Hibernate"}) {
		t.Errorf("running desktop: %v, want the guest trimmed, then saved", got)
	}

	h.m.Resume(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.m.Pause(ctx, d.ID, "alice")
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	if got := order(); !slices.Equal(got, []string{"GuestExec", "Hibernate", "Hibernate"}) {
		t.Errorf("paused desktop: %v, want saved without a trim", got)
	}

	h.m.Resume(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.hv.fail("GuestExec")
	h.m.Hibernate(ctx, d.ID, "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateHibernated {
		t.Errorf("a guest that does not answer the trim: %s", got.State)
	}
}
