package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/placement"
)

// fakeHostFiles keeps a remote host's files as a set of paths.
type fakeHostFiles struct {
	mu    sync.Mutex
	files map[string]string // path → what made it
	calls []string
	fail  string // method that fails
	// alloc is what Allocated says a file takes; every call adds 1 MiB.
	alloc map[string]int64
	// other holds a path where another build of the image is: EnsureImage
	// asks replace, and keeps it if refused.
	other string
}

func (f *fakeHostFiles) note(call, path, what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call+" "+path)
	if f.fail == call {
		return fmt.Errorf("%s %s: injected", call, path)
	}
	if what != "" {
		if _, ok := f.files[path]; ok && call != "EnsureImage" {
			return fmt.Errorf("%s: file exists", path)
		}
		f.files[path] = what
	}
	return nil
}

func (f *fakeHostFiles) EnsureImage(ctx context.Context, path string, replace func(context.Context, string) error, progress func(done, total int64)) error {
	f.mu.Lock()
	other := f.other == path
	f.mu.Unlock()
	if other {
		if err := replace(ctx, "another build: sha256 89ef5450ccc8a140, this host's 7d9da73de640b020"); err != nil {
			return err
		}
		f.mu.Lock()
		f.other = ""
		f.mu.Unlock()
	}
	if progress != nil {
		progress(50, 100)
		progress(100, 100)
	}
	return f.note("EnsureImage", path, "image")
}
func (f *fakeHostFiles) MakeDir(_ context.Context, dir string, uid, gid int) error {
	return f.note("MakeDir", dir, fmt.Sprintf("dir %d:%d", uid, gid))
}
func (f *fakeHostFiles) Exists(_ context.Context, path string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[path]
	return ok, nil
}
func (f *fakeHostFiles) CreateOverlay(_ context.Context, base, path string, _, uid, _ int) error {
	return f.note("CreateOverlay", path, fmt.Sprintf("overlay of %s for %d", base, uid))
}
func (f *fakeHostFiles) CreateDataDisk(_ context.Context, path string, size, uid, _ int) error {
	return f.note("CreateDataDisk", path, fmt.Sprintf("data %d GiB for %d", size, uid))
}
func (f *fakeHostFiles) Upload(_ context.Context, local, path string, uid, _ int) error {
	b, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.files, path)
	f.mu.Unlock()
	return f.note("Upload", path, string(b))
}
func (f *fakeHostFiles) Remove(_ context.Context, path string) error {
	f.mu.Lock()
	delete(f.files, path)
	f.mu.Unlock()
	return f.note("Remove", path, "")
}
func (f *fakeHostFiles) RemoveAllBut(_ context.Context, dir, keep string) (bool, error) {
	if err := f.note("RemoveAllBut", dir+" keep="+keep, ""); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, kept := f.files[keep]
	for p := range f.files {
		if strings.HasPrefix(p, dir+"/") && p != keep || p == dir && !kept {
			delete(f.files, p)
		}
	}
	return kept, nil
}

func (f *fakeHostFiles) has(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[path]
	return ok
}

// As StoppedDisks: calls noted as "Snapshot path name".
func (f *fakeHostFiles) Snapshot(_ context.Context, path, name string) error {
	return f.note("Snapshot", path+" "+name, "")
}
func (f *fakeHostFiles) RevertSnapshot(_ context.Context, path, name string) error {
	return f.note("RevertSnapshot", path+" "+name, "")
}
func (f *fakeHostFiles) DeleteSnapshot(_ context.Context, path, name string) error {
	return f.note("DeleteSnapshot", path+" "+name, "")
}
func (f *fakeHostFiles) Resize(_ context.Context, path string, sizeGiB int) error {
	return f.note("Resize", fmt.Sprint(path, " ", sizeGiB), "")
}

func (f *fakeHostFiles) Allocated(_ context.Context, path string) (int64, error) {
	if f.fail == "Allocated" {
		return 0, errors.New("Allocated: injected")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.alloc == nil {
		f.alloc = map[string]int64{}
	}
	n := f.alloc[path]
	f.alloc[path] += 1 << 20
	return n, nil
}

// called says whether every call was made, in that order.
func (f *fakeHostFiles) called(calls ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for _, c := range f.calls {
		if i < len(calls) && c == calls[i] {
			i++
		}
	}
	return i == len(calls)
}

// fakeSites has one remote host, "two".
type fakeSites struct {
	site *Site
}

func (s *fakeSites) Site(_ context.Context, host string) (*Site, error) {
	if host != "two" {
		return nil, fmt.Errorf("no host %q", host)
	}
	return s.site, nil
}

// hostFree records host (up, ready, 16 GiB) as having free MiB free at
// its last check.
func (h *harness) hostFree(t *testing.T, host string, free int64) { h.hostMemory(t, host, 16384, free) }

// hostMemory records host (up, ready) with total MiB of RAM, free MiB of
// it free at its last check.
func (h *harness) hostMemory(t *testing.T, host string, total, free int64) {
	t.Helper()
	ctx := context.Background()
	rec := &hosts.Host{Name: host, URI: "qemu+tcp://" + host + "/system", State: hosts.StateUp, Ready: true, Labels: map[string]string{},
		Facts: hosts.Facts{Accelerator: "kvm", MemoryMiB: total, FreeMemoryMiB: free}, CreatedAt: time.Now()}
	if _, err := h.store.GetHost(ctx, host); err != nil {
		if err := h.store.InsertHost(ctx, rec); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := h.store.UpdateHostHealth(ctx, rec); err != nil {
		t.Fatal(err)
	}
}

func newRemoteHarness(t *testing.T) (*harness, *fakeHostFiles, *fakeFirewall, *fakeAddresses, *fakeSites) {
	t.Helper()
	h := newHarness(t, &fakeDisks{})
	files := &fakeHostFiles{files: map[string]string{}}
	fw, addrs := &fakeFirewall{policies: map[string]desktop.NetworkPolicy{}}, &fakeAddresses{ips: map[string]string{}}
	sites := &fakeSites{}
	sites.site = &Site{Accelerator: desktop.AccelKVM, Subnet: netip.MustParsePrefix("10.121.0.0/16"), Firewall: fw, Addresses: addrs, Files: files, Disks: files, Sizes: files,
		Display: func(context.Context, string, int) (net.Conn, error) {
			return nil, errors.New("no display in this test")
		}}
	h.m.hosts.sites = sites
	h.hostFree(t, "two", 8192)
	p := Placement{Hosts: placement.Lister{Source: h.store, LocalMemory: func() (int64, int64, error) { return 16384, 8192, nil }},
		Policy: placement.Policy{MemoryRatio: 1, ReserveMiB: 512}}
	// Creates are placed, and drains choose hosts, with it.
	h.m.place.placement, h.m.moves.placement = p, p
	h.m.ident.subnet = netip.MustParsePrefix("10.120.0.0/16")
	h.m.defs.group = 64055
	return h, files, fw, addrs, sites
}

func TestCreateOnARemoteHost(t *testing.T) {
	h, files, fw, addrs, _ := newRemoteHarness(t)
	ctx := context.Background()
	create := func(host string) (*desktop.Desktop, error) {
		return h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "far", Actor: "test", Host: host,
			Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}, Network: desktop.NetworkPolicy{AllowOut: []string{"10.9.0.0/16"}}})
	}
	var ve *desktop.ValidationError
	if _, err := create("three"); !errors.As(err, &ve) || ve.Field != "host" {
		t.Fatalf("create on an unknown host: %v", err)
	}
	h.hostFree(t, "two", 1024)
	if _, err := create("two"); !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "host two has no room for it: memory: 512 MiB free") {
		t.Fatalf("create on a host without the memory: %v", err)
	}
	h.hostFree(t, "two", 8192)
	d, err := create("two")
	if err != nil {
		t.Fatal(err)
	}
	if d.Host != "two" || !d.Remote() || !netip.MustParsePrefix("10.121.0.0/16").Contains(netip.MustParseAddr(d.NetIP)) || d.Accelerator != "kvm" {
		t.Errorf("created %+v: on host two, with an address on its subnet and its accelerator", d)
	}
	if ip, name := addrs.reserved(desktop.MAC(d.ID)); ip != d.NetIP || name != "far" {
		t.Errorf("host two's DHCP: %q %q", ip, name)
	}
	if fw.policies[d.ID].AllowOut[0] != "10.9.0.0/16" {
		t.Errorf("host two's firewall: %+v", fw.policies)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateRunning || d.LastError != "" {
		t.Fatalf("after the build: %s %q", d.State, d.LastError)
	}
	uid := fmt.Sprint(d.VMUID)
	base := filepath.Join(h.dir, "base.qcow2")
	for path, want := range map[string]string{
		base:                             "image",
		d.Dir:                            "dir " + uid + ":64055",
		d.DataDiskPath:                   "data 20 GiB for " + uid,
		filepath.Join(d.Dir, "os.qcow2"): "overlay of " + base + " for " + uid,
		filepath.Join(d.Dir, "seed.iso"): "seed of far",
	} {
		files.mu.Lock()
		got := files.files[path]
		files.mu.Unlock()
		if got != want {
			t.Errorf("host two's %s: %q, want %q", path, got, want)
		}
	}
	if exists(d.Dir) {
		t.Errorf("a remote desktop's folder was made on this host: %s", d.Dir)
	}
	if vm := h.hv.vm(d.DomainName()); vm != desktop.VMRunning {
		t.Errorf("its VM: %s", vm)
	}
	evs, _ := h.store.ListEvents(ctx, d.ID, 20)
	named := false
	for _, e := range evs {
		named = named || e.Type == "create_requested" && strings.Contains(e.Message, "on host two")
	}
	if !named {
		t.Errorf("the create's request event does not name the host: %v", evs)
	}

	// A running remote desktop's snapshots go through libvirt: with memory,
	// and disk-only (QMP), both deleted the same way. What they take is
	// measured there: its two files grew by 1 MiB each (fakeHostFiles).
	for _, mem := range []bool{true, false} {
		sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: fmt.Sprint("s-", mem), Memory: &mem, Actor: "test"})
		if err != nil || sn.Memory != mem || sn.SizeBytes != 2<<20 {
			t.Fatalf("snapshot (memory %v) of a running remote desktop: %+v %v", mem, sn, err)
		}
		if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, sn.Name, "test"); err != nil {
			t.Errorf("delete it: %v", err)
		}
	}
	// Files that cannot be measured there: a snapshot with memory is
	// counted for its RAM, as before it was taken.
	files.fail = "Allocated"
	if sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "unmeasured", Actor: "test"}); err != nil || sn.SizeBytes != 2048<<20 {
		t.Errorf("snapshot whose files could not be measured: %+v %v", sn, err)
	}
	files.fail = ""
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "unmeasured", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "disks", Memory: new(bool), Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	// Its data disk grows live through libvirt there.
	if grown, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 25, Actor: "test"}); err != nil || grown.DataDiskGiB != 25 {
		t.Errorf("grow the data disk of a running remote desktop: %+v %v", grown, err)
	}
	// What bureau does to the files of a VM that is off, it does there
	// through the host's libvirtd (Site.Disks): a revert to a disk-only
	// snapshot (the VM shut down, reverted, started again)...
	osDisk := filepath.Join(d.Dir, "os.qcow2")
	if _, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "disks", "test"); err != nil {
		t.Fatal(err)
	}
	if d = h.settle(t, d.ID); d.State != desktop.StateRunning || d.LastError != "" ||
		!files.called("RevertSnapshot "+osDisk+" disks", "RevertSnapshot "+d.DataDiskPath+" disks") {
		t.Errorf("revert to a disk-only snapshot there: %s %q; calls %v", d.State, d.LastError, files.calls)
	}
	var ce *desktop.ConflictError
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "copy", Actor: "test", From: &CloneSource{DesktopID: d.ID, Snapshot: "disks"},
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "a clone of its snapshots") {
		t.Errorf("a clone of a remote desktop's snapshot: %v", err)
	}
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	// ... and, stopped: snapshots, their deletion, growing the data disk.
	if sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "s2", Actor: "test"}); err != nil || sn.Memory ||
		!files.called("Snapshot "+osDisk+" s2", "Snapshot "+d.DataDiskPath+" s2") {
		t.Errorf("snapshot of a stopped remote desktop: %+v %v; calls %v", sn, err, files.calls)
	}
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "home", Scope: desktop.ScopeData, Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "disks", "test"); err != nil || !files.called("DeleteSnapshot "+osDisk+" disks", "DeleteSnapshot "+d.DataDiskPath+" disks") {
		t.Errorf("delete a disk-only snapshot of a stopped remote desktop: %v; calls %v", err, files.calls)
	}
	if grown, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 30, Actor: "test"}); err != nil || grown.DataDiskGiB != 30 ||
		!files.called("Resize "+d.DataDiskPath+" 30") {
		t.Errorf("grow the data disk of a stopped remote desktop: %+v %v; calls %v", grown, err, files.calls)
	}

	// A reimage there: the snapshot holding the OS disk goes, the data-only
	// one stays; a new OS disk and seed are made in the old ones' places.
	// One whose new disk cannot be made leaves the desktop in error, and
	// a reimage again mends it.
	files.fail = "CreateOverlay"
	if _, err := h.m.Reimage(ctx, d.ID, "", "test"); err != nil {
		t.Fatal(err)
	}
	if d = h.settle(t, d.ID); d.State != desktop.StateError || !strings.Contains(d.LastError, "OS disk on host two") {
		t.Errorf("a reimage whose disk could not be made: %s %q", d.State, d.LastError)
	}
	files.fail = ""
	if _, err := h.m.Reimage(ctx, d.ID, "", "test"); err != nil {
		t.Fatal(err)
	}
	if d = h.settle(t, d.ID); d.State != desktop.StateStopped || d.LastError != "" {
		t.Errorf("reimage of a stopped remote desktop: %s %q", d.State, d.LastError)
	}
	if !files.called("DeleteSnapshot "+osDisk+" s2", "Upload "+filepath.Join(d.Dir, "seed.iso"), "Remove "+osDisk, "CreateOverlay "+osDisk) || !files.has(osDisk) {
		t.Errorf("reimage calls: %v", files.calls)
	}
	if snaps, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(snaps) != 1 || snaps[0].Name != "home" {
		t.Errorf("snapshots after the reimage: %v", snaps)
	}

	// Deleted without its data: the data disk stays on host two.
	res, err := h.m.Delete(ctx, d.ID, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.DataDiskKept != d.DataDiskPath || !files.has(d.DataDiskPath) || files.has(filepath.Join(d.Dir, "os.qcow2")) || files.has(filepath.Join(d.Dir, "seed.iso")) {
		t.Errorf("delete kept %q; host two has %v", res.DataDiskKept, files.files)
	}
	if _, ok := fw.policies[d.ID]; ok {
		t.Error("the deleted desktop's rules stay on host two")
	}
	if ip, _ := addrs.reserved(desktop.MAC(d.ID)); ip != "" {
		t.Error("the deleted desktop's address stays reserved on host two")
	}
}

func TestARemoteCreateThatFailsLeavesNothingOnTheHost(t *testing.T) {
	h, files, _, _, _ := newRemoteHarness(t)
	files.fail = "Upload"
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "far", Actor: "test", Host: "two",
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	d = h.settle(t, d.ID)
	if d.State != desktop.StateError || !strings.Contains(d.LastError, "injected") {
		t.Errorf("failed create: %s %q", d.State, d.LastError)
	}
	for p := range files.files {
		if strings.HasPrefix(p, d.Dir) {
			t.Errorf("left on host two: %s", p)
		}
	}
}

func TestReconcileLeavesTheDesktopsOfAnUnreachableHost(t *testing.T) {
	h, _, _, _, _ := newRemoteHarness(t)
	d, err := h.m.Create(context.Background(), CreateRequest{Owner: "alice", Name: "far", Actor: "test", Host: "two",
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	h.hv.mu.Lock()
	h.hv.hostOf = map[string]string{d.DomainName(): "two"}
	h.hv.lost = map[string]bool{"two": true}
	h.hv.mu.Unlock()
	saved := missingRecheck
	missingRecheck = time.Millisecond
	defer func() { missingRecheck = saved }()
	if err := h.m.recon.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.m.Get(context.Background(), d.ID); got.State != desktop.StateRunning || got.LastError != "" {
		t.Errorf("a desktop whose host did not answer: %s %q (nothing is concluded from silence)", got.State, got.LastError)
	}
}

// A host holding another build of the image (rebuilt since it was copied
// there): the copy replaces it only when no other desktop there is over
// it, and a desktop over it does not move, since its OS disk would be
// read over another base.
func TestAnotherBuildOfTheImageOnAHost(t *testing.T) {
	h, files, _, _, _ := newRemoteHarness(t)
	ctx := context.Background()
	base := filepath.Join(h.dir, "base.qcow2")
	create := func(name string) (*desktop.Desktop, error) {
		return h.m.Create(ctx, CreateRequest{Owner: "alice", Name: name, Actor: "test", Host: "two",
			Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}})
	}
	files.other = base
	first, err := create("first")
	if err != nil {
		t.Fatal(err)
	}
	if first = h.settle(t, first.ID); first.State != desktop.StateRunning || files.other != "" {
		t.Fatalf("the first desktop on two: %s %q; other build kept: %v", first.State, first.LastError, files.other != "")
	}

	files.other = base // rebuilt again: two's copy is now first's base only
	second, err := create("second")
	if err != nil {
		t.Fatal(err)
	}
	second = h.settle(t, second.ID)
	if second.State != desktop.StateError || !strings.Contains(second.LastError, "host two holds another build of image "+first.Image+", the base of desktops first ("+first.ID+") there") || files.other != base {
		t.Errorf("create over first's base: %s %q; other build kept: %v", second.State, second.LastError, files.other == base)
	}
	if files.has(filepath.Join(second.Dir, "os.qcow2")) {
		t.Error("the refused create made an OS disk on two")
	}

	mv := &fakeMover{}
	h.m.moves.live, h.m.moves.hostAddress = mv, "10.0.0.1"
	_, err = h.m.moves.Migrate(ctx, first.ID, desktop.LocalHost, "test")
	var ce *desktop.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "over another build of image "+first.Image+" on host two") || !strings.Contains(err.Error(), "reimage it first") {
		t.Errorf("move of a desktop over another build: %v", err)
	}
	if d, _ := h.store.GetDesktop(ctx, first.ID); d.Host != "two" || d.State != desktop.StateRunning || len(mv.dests) != 0 {
		t.Errorf("after the refused move: %s on %s, moves %v", d.State, d.Host, mv.dests)
	}
}
