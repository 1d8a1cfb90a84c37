package manager

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// fakeColdMover records what it copies and (un)defines where; fail names
// the method that fails. The VM itself stays in the fake hypervisor,
// which serves every host.
type fakeColdMover struct {
	mu    sync.Mutex
	calls []string
	fail  string
	files *fakeHostFiles // host two's files, where copies land
	// block makes CopyFile wait for its context to end; copying is
	// closed when it starts to.
	block   bool
	copying chan struct{}
}

func (f *fakeColdMover) note(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if strings.HasPrefix(call, f.fail+" ") {
		return fmt.Errorf("%s: injected", call)
	}
	return nil
}

func (f *fakeColdMover) CopyFile(ctx context.Context, from, to, path string, uid, gid int, progress func(done, total int64)) error {
	if err := f.note(fmt.Sprintf("CopyFile %s→%s %s %d:%d", from, to, filepath.Base(path), uid, gid)); err != nil {
		return err
	}
	if f.block {
		close(f.copying)
		<-ctx.Done()
		return ctx.Err()
	}
	progress(1<<20, 1<<20)
	if to == "two" {
		return f.files.note("Copy", path, "copied from "+from)
	}
	return nil
}

func (f *fakeColdMover) DefineOn(_ context.Context, name, from, to, tap string, progress func(done, total int64)) error {
	progress(10, 10)
	return f.note(fmt.Sprintf("DefineOn %s→%s tap %s", from, to, tap))
}

func (f *fakeColdMover) UndefineOn(_ context.Context, name, host string) error {
	return f.note("UndefineOn " + host)
}

func (f *fakeColdMover) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func newColdHarness(t *testing.T) (*harness, *fakeMover, *fakeColdMover, *fakeHostFiles, *desktop.Desktop) {
	h, mv, files, _, _, d := newMoveHarness(t)
	cm := &fakeColdMover{files: files}
	h.m.moves.cold = cm
	return h, mv, cm, files, d
}

func TestColdMoveOfAStoppedDesktop(t *testing.T) {
	h, mv, cm, files, d := newColdHarness(t)
	ctx := context.Background()
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	got, err := h.m.moves.Migrate(ctx, d.ID, "two", "test")
	if err != nil || got.State != desktop.StateMigrating {
		t.Fatalf("migrate: %+v %v", got, err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateStopped || d.Host != "two" || d.LastError != "" || d.RenewAddress ||
		!netip.MustParsePrefix("10.121.0.0/16").Contains(netip.MustParseAddr(d.NetIP)) {
		t.Fatalf("after the move: %s on %s at %s (%q, renew %v)", d.State, d.Host, d.NetIP, d.LastError, d.RenewAddress)
	}
	uid := fmt.Sprintf("%d:%d", d.VMUID, 64055)
	tap := desktop.TapNameOn(d.ID, "two")
	want := []string{"CopyFile local→two os.qcow2 " + uid, "CopyFile local→two data.qcow2 " + uid, "CopyFile local→two seed.iso " + uid,
		"DefineOn local→two tap " + tap, "UndefineOn local"}
	if c := cm.called(); !slices.Equal(c, want) {
		t.Errorf("cold mover calls:\n%q\nwant\n%q", c, want)
	}
	if !files.has(d.Dir) || !strings.Contains(files.files[d.DataDiskPath], "copied from local") {
		t.Errorf("host two's files: %v", files.files)
	}
	if exists(d.Dir) {
		t.Errorf("its folder stays on this host")
	}
	if len(mv.dests) != 0 || len(mv.bounced) != 0 {
		t.Errorf("a stopped desktop was moved live (%v) or bounced (%v)", mv.dests, mv.bounced)
	}
	if !saidEvent(t, h, d.ID, "migrated", "moved cold (stopped) from host local to host two") {
		t.Errorf("no migrated event")
	}
}

func TestColdMoveOfAHibernatedDesktopRenewsItsAddressAtWake(t *testing.T) {
	h, mv, cm, _, d := newColdHarness(t)
	ctx := context.Background()
	if _, err := h.m.Hibernate(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateHibernated || d.Host != "two" || !d.RenewAddress {
		t.Fatalf("after the move: %s on %s, renew %v (%q)", d.State, d.Host, d.RenewAddress, d.LastError)
	}
	if len(mv.bounced) != 0 {
		t.Errorf("bounced while hibernated: %v", mv.bounced)
	}
	if _, err := h.m.Resume(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.RenewAddress || len(mv.bounced) != 1 {
		t.Fatalf("after its wake: %s, renew %v, bounced %v", d.State, d.RenewAddress, mv.bounced)
	}
	// The next wake is an ordinary one.
	if _, err := h.m.Hibernate(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	if _, err := h.m.Resume(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	if len(mv.bounced) != 1 {
		t.Errorf("bounced again: %v", mv.bounced)
	}
	if c := cm.called(); len(c) != 5 {
		t.Errorf("calls: %q", c)
	}
}

func TestColdMoveOfARunningDesktopWithSnapshots(t *testing.T) {
	h, mv, cm, _, d := newColdHarness(t)
	ctx := context.Background()
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "before", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != "two" || d.LastError != "" || d.RenewAddress {
		t.Fatalf("after the move: %s on %s (%q, renew %v)", d.State, d.Host, d.LastError, d.RenewAddress)
	}
	calls := h.hv.callList()
	hib, start := slices.Index(calls, "Hibernate "+d.DomainName()), slices.Index(calls, "Start "+d.DomainName())
	if hib < 0 || slices.Index(calls[hib:], "Start "+d.DomainName()) < 0 || start < 0 {
		t.Errorf("not hibernated, then woken: %q", calls)
	}
	if len(mv.dests) != 0 || len(mv.bounced) != 1 {
		t.Errorf("moved live (%v), or not bounced once after its wake (%v)", mv.dests, mv.bounced)
	}
	if len(cm.called()) != 5 {
		t.Errorf("calls: %q", cm.called())
	}
	snaps, _ := h.store.ListSnapshots(ctx, d.ID)
	if len(snaps) != 1 {
		t.Errorf("its snapshot: %v", snaps)
	}
	if !saidEvent(t, h, d.ID, "migrated", "moved cold (with 1 snapshots, so hibernated first)") {
		t.Errorf("no migrated event")
	}
	// Reverted to a snapshot taken on its old host, its guest asks for the
	// address it has now.
	if _, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "before", "test"); err != nil {
		t.Fatal(err)
	}
	if d = h.settle(t, d.ID); d.State != desktop.StateRunning || len(mv.bounced) != 2 {
		t.Errorf("after a revert: %s, bounced %v", d.State, mv.bounced)
	}
}

func TestColdMoveThatFailsLeavesTheDesktopWhereItWas(t *testing.T) {
	h, mv, cm, files, d := newColdHarness(t)
	ctx := context.Background()
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "before", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	cm.fail = "DefineOn"
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != desktop.LocalHost || !strings.Contains(d.LastError, "migrate failed: define on host two") {
		t.Fatalf("after a failed move: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
	if h.hv.vm(d.DomainName()) != desktop.VMRunning {
		t.Errorf("not woken again where it was: %s", h.hv.vm(d.DomainName()))
	}
	if files.has(d.DataDiskPath) || files.has(d.Dir) {
		t.Errorf("its copies stay on host two: %v", files.files)
	}
	if !exists(d.DataDiskPath) {
		t.Fatalf("its data disk here is gone")
	}
	// DefineOn removes what it made itself when it fails.
	if c := cm.called(); slices.Contains(c, "UndefineOn local") || slices.Contains(c, "UndefineOn two") {
		t.Errorf("calls: %q", c)
	}
	if len(mv.bounced) != 0 {
		t.Errorf("bounced: %v", mv.bounced)
	}
	// A frozen desktop that fails to move stays hibernated where it was.
	cm.fail = "CopyFile"
	if _, err := h.m.Pause(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateHibernated || d.Host != desktop.LocalHost || !strings.Contains(d.LastError, "copy os.qcow2 to host two") {
		t.Fatalf("after a failed move of a paused desktop: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
}

func TestColdMoveCancelled(t *testing.T) {
	h, mv, cm, files, d := newColdHarness(t)
	ctx := context.Background()
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "before", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	cm.block, cm.copying = true, make(chan struct{})
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	<-cm.copying
	if err := h.m.moves.CancelMigration(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != desktop.LocalHost || d.LastError != "migrate failed: cancelled" {
		t.Fatalf("after a cancelled cold move: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
	if h.hv.vm(d.DomainName()) != desktop.VMRunning || files.has(d.Dir) || len(mv.bounced) != 0 {
		t.Errorf("VM %s, host two's files %v, bounced %v", h.hv.vm(d.DomainName()), files.files, mv.bounced)
	}
	if c := cm.called(); slices.ContainsFunc(c, func(s string) bool { return strings.HasPrefix(s, "DefineOn") || strings.HasPrefix(s, "UndefineOn") }) {
		t.Errorf("calls after the cancel: %q", c)
	}
}

func TestColdMoveRefusals(t *testing.T) {
	h, _, _, _, d := newColdHarness(t)
	ctx := context.Background()
	h.m.moves.cold = nil
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	var ce *desktop.ConflictError
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); !errors.As(err, &ce) || !strings.Contains(ce.Message, "is stopped: this bureau moves running desktops without snapshots only") {
		t.Errorf("a cold move without a cold mover: %v", err)
	}
	h.m.moves.cold = &fakeColdMover{}
	h.hv.fail("Start")
	if _, err := h.m.Start(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	var te *desktop.TransitionError
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); d.State != desktop.StateError || !errors.As(err, &te) {
		t.Errorf("a desktop in error (%s): %v", d.State, err)
	}
}

// saidEvent says whether desktop id has an event of type typ whose
// message has want in it.
func saidEvent(t *testing.T, h *harness, id, typ, want string) bool {
	t.Helper()
	evs, err := h.store.ListEvents(context.Background(), id, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == typ && strings.Contains(e.Message, want) {
			return true
		}
	}
	return false
}
