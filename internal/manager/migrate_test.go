package manager

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// fakeMover moves nothing: it reports progress, then succeeds, fails with
// err, or (block) waits for its context to end.
type fakeMover struct {
	mu      sync.Mutex
	err     error
	block   bool
	dests   []Destination
	bounced []string
	started chan struct{}
}

func (f *fakeMover) Migrate(ctx context.Context, name string, dest Destination, progress func(MoveProgress)) (*MoveResult, error) {
	f.mu.Lock()
	f.dests = append(f.dests, dest)
	block, err := f.block, f.err
	f.mu.Unlock()
	progress(MoveProgress{Phase: "memory", Percent: 50})
	if f.started != nil {
		close(f.started)
	}
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return &MoveResult{Took: 3 * time.Second, Downtime: 120 * time.Millisecond, Bytes: 900 << 20}, nil
}

func (f *fakeMover) DiskSizes(context.Context, string) (map[string]int64, error) {
	return map[string]int64{"vda": 40 << 30, "vdb": 5 << 30, "hdc": 374784}, nil
}

func (f *fakeMover) BounceLink(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bounced = append(f.bounced, name)
	return nil
}

func newMoveHarness(t *testing.T) (*harness, *fakeMover, *fakeHostFiles, *fakeAddresses, *fakeFirewall, *desktop.Desktop) {
	h, files, fw, addrs, sites := newRemoteHarness(t)
	mv := &fakeMover{}
	h.m.moves.live = mv
	sites.site.Address = "127.0.0.1"
	var moved []string
	h.m.moves.onMoved = func(id, host string) { moved = append(moved, id+"→"+host) }
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "mover", Actor: "test",
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}})
	if err != nil {
		t.Fatal(err)
	}
	return h, mv, files, addrs, fw, h.settle(t, d.ID)
}

func TestMigrateMovesARunningDesktopToAnotherHost(t *testing.T) {
	h, mv, files, addrs, fw, d := newMoveHarness(t)
	ctx := context.Background()
	if d.Host != desktop.LocalHost || !exists(d.DataDiskPath) {
		t.Fatalf("the desktop starts here: %+v", d)
	}
	var ve *desktop.ValidationError
	if _, err := h.m.moves.Migrate(ctx, d.ID, "local", "test"); !errors.As(err, &ve) {
		t.Errorf("a move to where it is: %v", err)
	}
	if _, err := h.m.moves.Migrate(ctx, d.ID, "three", "test"); !errors.As(err, &ve) || ve.Field != "host" {
		t.Errorf("a move to an unknown host: %v", err)
	}
	got, err := h.m.moves.Migrate(ctx, d.ID, "two", "test")
	if err != nil || got.State != desktop.StateMigrating {
		t.Fatalf("migrate: %+v, %v", got, err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != "two" || d.LastError != "" || !netip.MustParsePrefix("10.121.0.0/16").Contains(netip.MustParseAddr(d.NetIP)) {
		t.Fatalf("after the move: %s on %s at %s (%q)", d.State, d.Host, d.NetIP, d.LastError)
	}
	if len(mv.dests) != 1 || mv.dests[0] != (Destination{Host: "two", Address: "127.0.0.1", Tap: desktop.TapNameOn(d.ID, "two")}) {
		t.Errorf("moved to %+v", mv.dests)
	}
	// Its files were made on two at the same paths and sizes, its address
	// reserved and its rules set there; nothing of it stays here.
	for _, p := range []string{d.Dir, d.DataDiskPath, filepath.Join(d.Dir, "os.qcow2"), filepath.Join(d.Dir, "seed.iso")} {
		if !files.has(p) {
			t.Errorf("%s is not on host two", p)
		}
	}
	if !strings.Contains(files.files[d.DataDiskPath], "data 5 GiB") {
		t.Errorf("data disk on two: %q", files.files[d.DataDiskPath])
	}
	if ip, _ := addrs.reserved(desktop.MAC(d.ID)); ip != d.NetIP {
		t.Errorf("two's DHCP has %q for it, want %s", ip, d.NetIP)
	}
	if _, ok := fw.policies[d.ID]; !ok {
		t.Errorf("no rules for it on two")
	}
	if exists(d.Dir) {
		t.Errorf("its folder stays on this host")
	}
	if len(mv.bounced) != 1 {
		t.Errorf("its NIC was not bounced for the new address: %v", mv.bounced)
	}
	evs, _ := h.store.ListEvents(ctx, d.ID, 20)
	said := false
	for _, e := range evs {
		said = said || e.Type == "migrated" && strings.Contains(e.Message, "from host local to host two in 3s (downtime 120ms, 900 MiB sent); address now "+d.NetIP)
	}
	if !said {
		t.Errorf("no migrated event among %+v", evs)
	}
	// And back: two's files and rules go, this host has them again.
	if _, err := h.m.moves.Migrate(ctx, d.ID, "local", "test"); err == nil || !strings.Contains(err.Error(), "BUREAU_HOST_ADDRESS") {
		t.Fatalf("a move here without this host's address: %v", err)
	}
	h.m.moves.hostAddress = "10.0.0.1"
	if _, err := h.m.moves.Migrate(ctx, d.ID, "local", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.Host != desktop.LocalHost || !exists(d.DataDiskPath) || files.has(d.Dir) || !netip.MustParsePrefix("10.120.0.0/16").Contains(netip.MustParseAddr(d.NetIP)) {
		t.Errorf("back: on %s at %s, data disk here %v, folder on two %v", d.Host, d.NetIP, exists(d.DataDiskPath), files.has(d.Dir))
	}
	if _, ok := fw.policies[d.ID]; ok {
		t.Errorf("its rules stay on two")
	}
}

func TestMigrateThatFailsOrIsCancelledLeavesTheDesktopWhereItWas(t *testing.T) {
	h, mv, files, addrs, fw, d := newMoveHarness(t)
	ctx := context.Background()
	mv.err = errors.New("QEMU: migration failed: connection refused")
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != desktop.LocalHost || !strings.Contains(d.LastError, "connection refused") || !exists(d.DataDiskPath) {
		t.Fatalf("after a failed move: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
	if files.has(d.Dir) || files.has(d.DataDiskPath) {
		t.Errorf("files made on two stay: %v", files.files)
	}
	if ip, _ := addrs.reserved(desktop.MAC(d.ID)); ip != "" {
		t.Errorf("two's DHCP keeps %s", ip)
	}
	if _, ok := fw.policies[d.ID]; ok {
		t.Errorf("two keeps its rules")
	}

	mv.err, mv.block, mv.started = nil, true, make(chan struct{})
	if err := h.m.moves.CancelMigration(ctx, d.ID, "test"); err == nil {
		t.Errorf("cancelling a migration that is not under way")
	}
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	<-mv.started
	if err := h.m.moves.CancelMigration(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != desktop.LocalHost || d.LastError != "migrate failed: cancelled" || files.has(d.Dir) {
		t.Errorf("after a cancelled move: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
}

// A restart cut a migration short: the desktop is found still running on
// its host, recorded so, and what the migration had made on the other
// host goes.
func TestMigrateInterruptedByARestartLeavesItWhereItRuns(t *testing.T) {
	h, _, files, addrs, fw, d := newMoveHarness(t)
	ctx := context.Background()
	there := *d
	there.Host = "two"
	var undo reverter
	if err := h.m.moves.filesThere(ctx, d, &there, &undo); err != nil {
		t.Fatal(err)
	}
	if err := h.m.moves.networkThere(ctx, d, &there, &undo); err != nil {
		t.Fatal(err)
	}
	d, _ = h.store.GetDesktop(ctx, d.ID)
	d.State, d.Operation, d.Step = desktop.StateMigrating, "migrate", migrateStep("two", "memory 40%")
	if err := h.store.UpdateDesktop(ctx, d); err != nil {
		t.Fatal(err)
	}
	h.m.recon.interrupted(ctx, d, desktop.VMRunning)
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.Host != desktop.LocalHost || !strings.Contains(d.LastError, "migrate to host two was interrupted") {
		t.Errorf("after the restart: %s on %s (%q)", d.State, d.Host, d.LastError)
	}
	if files.has(d.Dir) || files.has(d.DataDiskPath) {
		t.Errorf("the interrupted migration's files stay on two")
	}
	if ip, _ := addrs.reserved(desktop.MAC(d.ID)); ip != "" {
		t.Errorf("two's DHCP keeps %s", ip)
	}
	if _, ok := fw.policies[d.ID]; ok {
		t.Errorf("two keeps its rules")
	}
	if migratingTo("copying") != "" || migratingTo(migrateStep("two", "image 5%")) != "two" {
		t.Errorf("migratingTo")
	}
}

// A running desktop's memory counts on the host it moves to from the
// start of its move: another move there that would not fit with it is
// refused meanwhile; a cancelled move gives the room back.
func TestAMoveHoldsMemoryOnItsDestination(t *testing.T) {
	h, mv, _, _, _, d := newMoveHarness(t)
	ctx := context.Background()
	h.hostMemory(t, "two", 2048, 2048) // room for one 1 GiB desktop (512 MiB kept for the host)
	b, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "second", Actor: "test", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}})
	if err != nil {
		t.Fatal(err)
	}
	h.settle(t, b.ID)
	mv.block, mv.started = true, make(chan struct{})
	if _, err := h.m.moves.Migrate(ctx, d.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	<-mv.started
	if loads, _ := h.store.HostLoads(ctx); loads["two"].CommittedMiB != 1024 || loads["two"].PendingMiB != 1024 {
		t.Errorf("host two while a desktop moves there: %+v", loads["two"])
	}
	if _, err := h.m.moves.Migrate(ctx, b.ID, "two", "test"); !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("a second move to a host with room for one: %v", err)
	}
	if err := h.m.moves.CancelMigration(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	if loads, _ := h.store.HostLoads(ctx); loads["two"].CommittedMiB != 0 {
		t.Errorf("host two after the move was cancelled: %+v", loads["two"])
	}
	mv.mu.Lock()
	mv.block, mv.started = false, nil
	mv.mu.Unlock()
	if _, err := h.m.moves.Migrate(ctx, b.ID, "two", "test"); err != nil {
		t.Fatal(err)
	}
	if b = h.settle(t, b.ID); b.Host != "two" || b.LastError != "" {
		t.Errorf("the second move, once there was room: on %s (%q)", b.Host, b.LastError)
	}
	if loads, _ := h.store.HostLoads(ctx); loads["two"].CommittedMiB != 1024 || loads["two"].PendingMiB != 0 {
		t.Errorf("host two after the move: %+v", loads["two"])
	}
}
