package manager

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// forget drops every ready spare from the list (as a new process starts
// with none listed); their VMs and files stay. A new process has no fill
// under way either: forget waits for the fills to end first, else one
// would see the list empty and make a spare alongside the start-up's.
func (s *spares) forget(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		if len(s.filling) == 0 {
			s.ready = nil
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("spares still being made")
		}
	}
}

// readyWithSpare builds a template with one spare kept and waits for it.
func readyWithSpare(t *testing.T, h *harness) *Template {
	t.Helper()
	h.m.warm.keep = 1
	tp, err := h.m.WarmPool().BuildTemplate(context.Background(), "base", 2, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.waitTemplate(t, tp.Key); got.State != "ready" {
		t.Fatalf("template: %+v", got)
	}
	h.waitSpares(t, tp.Key, 1)
	return tp
}

func (h *harness) waitSpares(t *testing.T, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.m.warm.spares.count(key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("template %s: %d spares, want %d", key, h.m.warm.spares.count(key), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// spareDirs lists the desktop folders marked as spares.
func (h *harness) spareDirs() []string {
	var out []string
	entries, _ := os.ReadDir(filepath.Join(h.dir, "desktops"))
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(h.dir, "desktops", e.Name(), spareFile)); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestSpareTakenByCreate(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp := readyWithSpare(t, h)
	spares := h.spareDirs()
	if len(spares) != 1 {
		t.Fatalf("spare folders %v", spares)
	}
	id := spares[0]
	name := (&desktop.Desktop{ID: id}).DomainName()
	if st, _ := h.hv.State(ctx, name); st != desktop.VMPaused {
		t.Fatalf("spare VM %s, want paused (its guest must not run before it is a desktop)", st)
	}
	if ts, _ := h.m.WarmPool().Templates(ctx); len(ts) != 1 || ts[0].Spares != 1 {
		t.Errorf("templates %+v", ts)
	}
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "quick", SSHKeys: []string{"ssh-ed25519 AAAA k"},
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != id {
		t.Fatalf("desktop %s did not take the spare %s", d.ID, id)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning || got.Dir != filepath.Join(h.dir, "desktops", id) {
		t.Fatalf("desktop from the spare: %+v", got)
	}
	calls := h.hv.callList()
	for _, want := range []string{"Resume " + name, "GuestExec " + name, "ResizeDisk " + name + " data.qcow2 21474836480"} {
		if !slices.Contains(calls, want) {
			t.Errorf("no %q in %v", want, calls)
		}
	}
	if slices.Contains(calls, "RestoreAs "+name) {
		t.Error("the spare was restored again")
	}
	if st, _ := h.hv.State(ctx, name); st != desktop.VMRunning {
		t.Errorf("VM %s", st)
	}
	// The seed QEMU has open is the desktop's now, in the same file.
	seedISO := filepath.Join(got.Dir, "seed.iso")
	if b, _ := os.ReadFile(seedISO); !bytes.HasPrefix(b, []byte("seed of quick\x00")) || len(b) != len("seed of "+templateHost)+spareSeedRoom {
		t.Errorf("seed file after the take: %d bytes, %q…", len(b), b[:min(len(b), 20)])
	}
	for _, f := range []string{spareFile, "identity.keys", "seed.iso.new"} {
		if _, err := os.Stat(filepath.Join(got.Dir, f)); err == nil {
			t.Errorf("%s left in the desktop's folder", f)
		}
	}
	evs, _ := h.m.Events(ctx, d.ID, 10)
	if last := evs[len(evs)-1]; !strings.Contains(last.Message, "a spare restored ahead") {
		t.Errorf("created event: %q", last.Message)
	}
	// Another spare is made for the next create.
	h.waitSpares(t, tp.Key, 1)
	if next := h.spareDirs(); len(next) != 1 || next[0] == id {
		t.Errorf("spares after the take: %v", next)
	}
	// A delete takes the desktop's files; the spare stays.
	if _, err := h.m.Delete(ctx, d.ID, "alice", true); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	if _, err := os.Stat(got.Dir); err == nil {
		t.Error("the desktop's folder is left after delete")
	}
	if h.m.warm.spares.count(tp.Key) != 1 {
		t.Error("the spare went with the desktop")
	}
}

func TestSpareAdoptedOrRemovedAtStartUp(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp := readyWithSpare(t, h)
	kept := h.spareDirs()[0]
	// A new process finds the paused spare and keeps it.
	h.m.warm.spares.forget(t)
	h.m.warm.adopt(ctx)
	h.waitSpares(t, tp.Key, 1)
	if got := h.spareDirs(); len(got) != 1 || got[0] != kept {
		t.Fatalf("after start-up: %v, want %s kept", got, kept)
	}
	// One whose VM is gone is removed, and a new one made.
	h.m.warm.spares.forget(t)
	h.hv.Undefine(ctx, (&desktop.Desktop{ID: kept}).DomainName())
	h.m.warm.adopt(ctx)
	h.waitSpares(t, tp.Key, 1)
	if got := h.spareDirs(); len(got) != 1 || got[0] == kept {
		t.Fatalf("after start-up without the VM: %v", got)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "desktops", kept)); err == nil {
		t.Error("the broken spare's folder is left")
	}
}

// varMemory is host memory a test changes while the manager reads it.
type varMemory struct{ avail atomic.Int64 }

func (v *varMemory) AvailableMemoryMiB() (int, error) { return int(v.avail.Load()), nil }

func TestSpareGoesFirstUnderMemoryPressure(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	mem := &varMemory{}
	mem.avail.Store(64 << 10)
	h.m.idle.memory, h.m.idle.lowMiB = mem, 2048
	tp := readyWithSpare(t, h)
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "busy", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	mem.avail.Store(100)
	h.m.idle.relieve([]candidate{{d: d, cur: tierAwake, quiet: time.Hour, since: time.Now()}})
	if n := h.m.warm.spares.count(tp.Key); n != 0 {
		t.Errorf("%d spares under memory pressure", n)
	}
	if len(h.spareDirs()) != 0 {
		t.Error("the spare's folder is left")
	}
	if got, _ := h.m.Get(context.Background(), d.ID); got.State != desktop.StateRunning {
		t.Errorf("a desktop moved down while a spare could go: %s", got.State)
	}
	// No new spare while memory stays short.
	h.m.warm.fill(tp.Key)
	time.Sleep(50 * time.Millisecond)
	if h.m.warm.spares.count(tp.Key) != 0 || len(h.spareDirs()) != 0 {
		t.Error("a spare made with memory short")
	}
}

func TestSpareRefusedCreateGivesItBack(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp := readyWithSpare(t, h)
	id := h.spareDirs()[0]
	req := CreateRequest{Owner: "alice", Name: "quick", Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}}
	h.m.quota.capacity = fakeCapacity{memFree: 100, diskFree: 10}
	if _, err := h.m.Create(ctx, req); !errors.Is(err, desktop.ErrCapacity) {
		t.Fatalf("create on a full disk: %v", err)
	}
	if got := h.spareDirs(); h.m.warm.spares.count(tp.Key) != 1 || len(got) != 1 || got[0] != id {
		t.Fatalf("after a refused create: spares %v", got)
	}
	// 100 MiB free is enough for a desktop taking the spare: its VM holds
	// its memory already.
	h.m.quota.capacity = fakeCapacity{memFree: 100}
	d, err := h.m.Create(ctx, req)
	if err != nil || d.ID != id {
		t.Fatalf("create taking the spare: %v, %+v", err, d)
	}
	h.settle(t, d.ID)
}

func TestSpareClashingWithADesktopIsRemoved(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp := readyWithSpare(t, h)
	id := h.spareDirs()[0]
	o, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "other", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	other := h.settle(t, o.ID)
	// The spare drew the QEMU user the other desktop has since been given.
	sp := h.m.warm.spares.take(tp.Key)
	sp.VMUID = other.VMUID
	h.m.warm.spares.add(sp)
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "quick", Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if d.ID == id || d.VMUID == sp.VMUID {
		t.Fatalf("the desktop took a spare whose QEMU user is another desktop's: %+v", d)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("desktop: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "desktops", id)); err == nil {
		t.Error("the clashing spare's folder is left")
	}
}

// loggedHold is a CPUHold that notes its holds and releases in the fake
// hypervisor's call list, so a test sees them in order with the VM calls.
type loggedHold struct{ hv *fakeHV }

func (l loggedHold) Hold() func() {
	l.hv.step("Hold", "cpu")
	return func() { l.hv.step("Release", "cpu") }
}

func TestSpareTakenUnderTheCPUHoldAndRefilledAfterIt(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	h.m.warm.cpuHold = loggedHold{h.hv}
	tp := readyWithSpare(t, h)
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "held", Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	h.waitSpares(t, tp.Key, 1)
	calls := h.hv.callList()
	at := func(call string) int {
		i := slices.Index(calls, call)
		if i < 0 {
			t.Fatalf("no %q in %v", call, calls)
		}
		return i
	}
	name := d.DomainName()
	hold, release := at("Hold cpu"), at("Release cpu")
	if resume, exec := at("Resume "+name), at("GuestExec "+name); !(hold < resume && exec < release) {
		t.Errorf("the resume and identity ran outside the hold: %v", calls)
	}
	// The next spare's restore waits for the desktop: made at once, it
	// took the CPU the identity needs.
	restored := -1
	for i, c := range calls {
		if strings.HasPrefix(c, "RestorePausedAs ") && c != "RestorePausedAs "+name {
			restored = i
		}
	}
	if restored < release {
		t.Errorf("the next spare was restored before the desktop's identity was applied: %v", calls)
	}
}

// A spare's address is reserved when it is made (a DHCP update costs
// ~0.45 s, too long to wait for in a create); the desktop that takes it
// keeps the address and puts its name on it; a removed spare's goes.
func TestSpareAddressReservedAhead(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	addrs := &fakeAddresses{ips: map[string]string{}}
	h.m.ident.addresses, h.m.ident.subnet = addrs, netip.MustParsePrefix("10.120.0.0/16")
	tp := readyWithSpare(t, h)
	id := h.spareDirs()[0]
	ip, name := addrs.reserved(desktop.MAC(id))
	if ip == "" || name != "spare-"+id {
		t.Fatalf("spare %s reservation: %q %q", id, ip, name)
	}
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "named", Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 1}})
	if err != nil || d.ID != id || d.NetIP != ip {
		t.Fatalf("create %+v %v: want the spare %s with %s", d, err, id, ip)
	}
	h.settle(t, d.ID)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got, name := addrs.reserved(desktop.MAC(id)); got == ip && name == "named" {
			break
		}
		if time.Now().After(deadline) {
			got, name := addrs.reserved(desktop.MAC(id))
			t.Fatalf("desktop's reservation %q %q, want %s named", got, name, ip)
		}
	}
	h.waitSpares(t, tp.Key, 1)
	next := h.spareDirs()[0]
	if ip, _ := addrs.reserved(desktop.MAC(next)); ip == "" {
		t.Fatal("the next spare has no reservation")
	}
	if !h.m.warm.relieve(0) {
		t.Fatal("no spare dropped")
	}
	if ip, _ := addrs.reserved(desktop.MAC(next)); ip != "" {
		t.Errorf("a removed spare's address is still reserved: %s", ip)
	}
}
