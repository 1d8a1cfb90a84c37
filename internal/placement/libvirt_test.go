package placement_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/placement"
	"github.com/bureau/bureau/internal/store/storetest"
)

// Two hosts as libvirt's test:///default driver reports itself (a fixed
// 16-CPU, 3 GiB node), recorded in a real store: creates placed one at a
// time, each reserved in its insert's transaction, alternate between the
// hosts (the emptier weighs more) and fill both exactly to what the
// policy allows, and the next is refused naming both.
func TestPlacementFillsLibvirtTestHostsEvenly(t *testing.T) {
	ctx := context.Background()
	link, err := hv.DialHost(ctx, "test:///default")
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	facts, err := link.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The test driver answers virNodeGetFreeMemory in KiB where the API
	// says bytes (3 GiB free reads as 3 MiB): take it as all but 512 MiB
	// of its RAM free, as a host at rest would be.
	if facts.FreeMemoryMiB < 64 {
		facts.FreeMemoryMiB = facts.MemoryMiB - 512
	}
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	for i, name := range []string{"a", "b"} {
		h := &hosts.Host{Name: name, URI: fmt.Sprintf("test:///default?%d", i), State: hosts.StateUp, Ready: true, Facts: facts,
			Labels: map[string]string{}, CreatedAt: time.Now()}
		if err := st.InsertHost(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	policy := placement.Policy{MemoryRatio: 1.5, ReserveMiB: 512}
	lister := placement.Lister{Source: st}
	req := placement.Request{MemoryMiB: 512}
	// Each desktop being created counts against the host's reported free
	// memory until it runs, and against what its desktops may hold.
	per := min((int64(float64(facts.MemoryMiB)*1.5)-512)/req.MemoryMiB, (facts.FreeMemoryMiB-512)/req.MemoryMiB)
	if per < 2 {
		t.Fatalf("test:///default reports %+v: too small to place two desktops", facts)
	}
	var order []string
	for i := 0; ; i++ {
		cands, err := lister.Candidates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, err := policy.Choose(cands, req)
		var none *placement.NoHostError
		if errors.As(err, &none) {
			if len(none.Refusals) != 2 {
				t.Errorf("refusal names %d hosts: %v", len(none.Refusals), err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d := &desktop.Desktop{ID: fmt.Sprint("d", i), Owner: fmt.Sprint("o", i), Name: "d", Host: h.Name, State: desktop.StateCreating,
			Spec: desktop.Spec{Image: "img", VCPUs: 1, MemoryMiB: int(req.MemoryMiB), DataDiskGiB: 1}, Dir: fmt.Sprint("/d/", i), CreatedAt: time.Now(), UpdatedAt: time.Now()}
		err = st.CreateDesktopChecked(ctx, d, func(*desktop.Quota, desktop.Usage) error { return nil }, func(l placement.Load) error {
			h.Load = l
			return policy.Fits(h, req)
		})
		if err != nil {
			t.Fatalf("create %d on %s: %v", i, h.Name, err)
		}
		order = append(order, h.Name)
	}
	if int64(len(order)) != 2*per {
		t.Fatalf("placed %d desktops of %d MiB, want %d on each of two hosts of %+v", len(order), req.MemoryMiB, per, facts)
	}
	for i, name := range order {
		if want := []string{"a", "b"}[i%2]; name != want {
			t.Fatalf("placement order %v: the emptier host should take each next one", order)
		}
	}
}
