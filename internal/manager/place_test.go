package manager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/placement"
)

// staleLoads is a placement source whose loads lag behind the store: what
// placement saw a moment before other creates were recorded.
type staleLoads struct{ *harness }

func (s staleLoads) ListHosts(ctx context.Context) ([]hosts.Host, error) {
	return s.store.ListHosts(ctx)
}
func (staleLoads) HostLoads(context.Context) (map[string]placement.Load, error) {
	return map[string]placement.Load{}, nil
}

// newPlacementHarness has bureau's own host (4 GiB, 3.5 GiB for desktops)
// and host two (labelled zone=b, 16 GiB), placement on.
func newPlacementHarness(t *testing.T) *harness {
	h, _, _, _, _ := newRemoteHarness(t)
	ctx := context.Background()
	for _, rec := range []*hosts.Host{
		{Name: hosts.LocalName, URI: "qemu:///system", State: hosts.StateConnecting, Labels: map[string]string{}, CreatedAt: time.Now()},
	} {
		if err := h.store.InsertHost(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	two, _ := h.store.GetHost(ctx, "two")
	h.store.DeleteHost(ctx, "two")
	two.Labels = map[string]string{"zone": "b"}
	if err := h.store.InsertHost(ctx, two); err != nil {
		t.Fatal(err)
	}
	h.m.place.placement.Auto = true
	h.m.place.placement.Hosts = placement.Lister{Source: h.store, LocalMemory: func() (int64, int64, error) { return 4096, 4096, nil }}
	return h
}

func TestPlacementPutsACreateOnTheEmptierHost(t *testing.T) {
	h := newPlacementHarness(t)
	ctx := context.Background()
	create := func(name string, labels map[string]string) (*desktop.Desktop, error) {
		return h.m.Create(ctx, CreateRequest{Owner: "alice", Name: name, Actor: "test", PlaceLabels: labels,
			Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 2048, DataDiskGiB: 5}})
	}
	// Host two has more memory left: it weighs more.
	a, err := create("a", nil)
	if err != nil || a.Host != "two" || a.Accelerator != "kvm" {
		t.Fatalf("first create: %+v, %v; want it on host two, under its KVM", a, err)
	}
	// Now two runs a desktop and bureau's own host none: memory still
	// favours two (14 GiB left against 3.5), and fewest desktops local;
	// labels pick two whatever the weights say.
	b, err := create("b", map[string]string{"zone": "b"})
	if err != nil || b.Host != "two" {
		t.Fatalf("labelled zone=b: %+v, %v", b, err)
	}
	_, err = create("c", map[string]string{"zone": "c"})
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "local: labels: no zone") || !strings.Contains(err.Error(), "two: labels: zone=b, not c") {
		t.Fatalf("no host labelled zone=c: %v", err)
	}
	var ve *desktop.ValidationError
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "d", Host: "two", PlaceLabels: map[string]string{"zone": "b"},
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}}); !errors.As(err, &ve) || ve.Field != "placement" {
		t.Fatalf("a host and labels: %v", err)
	}
	for _, id := range []string{a.ID, b.ID} {
		h.settle(t, id)
	}
	// Events say where and why.
	evs, _ := h.store.ListEvents(ctx, b.ID, 10)
	found := false
	for _, e := range evs {
		found = found || strings.Contains(e.Message, "on host two, placed by weight among hosts labelled zone=b")
	}
	if !found {
		t.Errorf("no placement event among %+v", evs)
	}
	// Placement off: labels are refused, a plain create stays home.
	h.m.place.placement.Auto = false
	if _, err := create("e", map[string]string{"zone": "b"}); !errors.As(err, &ve) || ve.Field != "placement" {
		t.Fatalf("labels with placement off: %v", err)
	}
	if e, err := create("e", nil); err != nil || e.Host != desktop.LocalHost {
		t.Fatalf("placement off: %+v, %v", e, err)
	}
}

// A host placement chose from loads a moment old may turn out full as
// the desktop is recorded: the create goes to the next host.
func TestPlacementTriesTheNextHostWhenOneFilledUp(t *testing.T) {
	h := newPlacementHarness(t)
	ctx := context.Background()
	h.hostMemory(t, "two", 3000, 8192)
	h.m.place.placement.Hosts = placement.Lister{Source: staleLoads{h}, LocalMemory: func() (int64, int64, error) { return 4096, 4096, nil }}
	spec := desktop.Spec{VCPUs: 1, MemoryMiB: 2048, DataDiskGiB: 5}
	// Local: 3584 MiB for desktops, 3584 free; two: 2488 for desktops.
	// Local wins.
	a, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "a", Spec: spec})
	if err != nil || a.Host != desktop.LocalHost {
		t.Fatalf("first: %+v, %v", a, err)
	}
	// Placement still sees local empty, but it holds 2048 of 3584 MiB now.
	b, err := h.m.Create(ctx, CreateRequest{Owner: "bob", Name: "b", Spec: spec})
	if err != nil || b.Host != "two" {
		t.Fatalf("second: %+v, %v; want it on two once local turned out full", b, err)
	}
	// And when every host is full, the refusal names them.
	_, err = h.m.Create(ctx, CreateRequest{Owner: "carol", Name: "c", Spec: spec})
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "local: full as it was recorded there: memory: its desktops hold 2048 MiB of the 3584 MiB") ||
		!strings.Contains(err.Error(), "two: full as it was recorded there: memory: its desktops hold 2048 MiB of the 2488 MiB") {
		t.Fatalf("third: %v", err)
	}
	h.settle(t, a.ID)
	h.settle(t, b.ID)
}

// By default (BUREAU_PLACEMENT=auto) a create that names no host stays on
// bureau's own host until bureau has a remote host; then it is placed.
func TestPlacementAutoOnceThereIsARemoteHost(t *testing.T) {
	h, _, _, _, _ := newRemoteHarness(t)
	ctx := context.Background()
	if err := h.store.DeleteHost(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	h.m.place.placement.Auto, h.m.place.placement.WithHosts = false, true
	create := func(name string) *desktop.Desktop {
		t.Helper()
		d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: name, Actor: "test", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 5}})
		if err != nil {
			t.Fatal(err)
		}
		h.settle(t, d.ID)
		return d
	}
	if a := create("a"); a.Host != desktop.LocalHost {
		t.Errorf("with bureau's own host only: on %s", a.Host)
	}
	h.hostFree(t, "two", 8192)
	// As much memory free on both; two runs fewer desktops.
	if b := create("b"); b.Host != "two" {
		t.Errorf("with host two there: on %s, want two (fewer desktops)", b.Host)
	}
	// Off: bureau's own host whatever the others.
	h.m.place.placement.WithHosts = false
	if c := create("c"); c.Host != desktop.LocalHost {
		t.Errorf("placement off: on %s", c.Host)
	}
}
