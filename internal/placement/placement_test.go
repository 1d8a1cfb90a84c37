package placement

import (
	"errors"
	"strings"
	"testing"
)

var policy = Policy{MemoryRatio: 1.5, ReserveMiB: 512, DiskReserveMiB: 2048}

func host(name string, mutate ...func(*Host)) Host {
	h := Host{Name: name, Up: true, Ready: true, Accelerator: "tcg", Labels: map[string]string{},
		MemoryMiB: 16384, AvailableMiB: 12000, FreeDiskMiB: 100000}
	for _, m := range mutate {
		m(&h)
	}
	return h
}

func TestFitsSaysWhyAHostIsRefused(t *testing.T) {
	req := Request{MemoryMiB: 2048, DiskMiB: 1024, Labels: map[string]string{"zone": "b"}}
	cases := []struct {
		name string
		h    Host
		want string // "" fits
	}{
		{"fits", host("a", func(h *Host) { h.Labels["zone"] = "b" }), ""},
		{"down", host("a", func(h *Host) { h.Up, h.Why = false, "connection refused" }), "unreachable: connection refused"},
		{"not ready", host("a", func(h *Host) { h.Ready, h.Why = false, "nft missing" }), "not ready for desktops: nft missing"},
		{"draining", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.Draining = true }), "draining: its desktops are moving off it"},
		{"no label", host("a"), "labels: no zone"},
		{"other label", host("a", func(h *Host) { h.Labels["zone"] = "a" }), "labels: zone=a, not b"},
		{"committed full", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.CommittedMiB = 16384*3/2 - 512 - 2047 }),
			"memory: its desktops hold 22017 MiB of the 24064 MiB they may be given; 2048 MiB asked"},
		{"committed exactly full", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.CommittedMiB = 16384*3/2 - 512 - 2048 }), ""},
		{"pending eats free", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.PendingMiB = 10000 }),
			"memory: 1488 MiB free after reservations (12000 MiB reported, 10000 MiB for desktops starting, 512 MiB kept for the host); 2048 MiB asked"},
		{"disk", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.FreeDiskMiB, h.Creating = 4000, 1 }),
			"disk: 928 MiB free after reservations (4000 MiB reported, 1 desktops being created, 2048 MiB kept free); 1024 MiB asked"},
		{"disk not measured", host("a", func(h *Host) { h.Labels["zone"] = "b"; h.FreeDiskMiB = 0 }), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := policy.Fits(c.h, req)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestFitsAccelerator(t *testing.T) {
	if err := policy.Fits(host("a"), Request{Accelerator: "kvm"}); err == nil || err.Error() != "offers tcg, not kvm" {
		t.Fatalf("got %v", err)
	}
	if err := policy.Fits(host("a"), Request{Accelerator: "tcg"}); err != nil {
		t.Fatal(err)
	}
}

func TestChooseTheEmptierHost(t *testing.T) {
	busy := host("local", func(h *Host) { h.Desktops, h.CommittedMiB = 3, 6144 })
	empty := host("two")
	got, err := policy.Choose([]Host{busy, empty}, Request{MemoryMiB: 1024})
	if err != nil || got.Name != "two" {
		t.Fatalf("got %q, %v; want two", got.Name, err)
	}
	// All else equal, the first listed (the local host) wins.
	got, err = policy.Choose([]Host{host("local"), host("two")}, Request{MemoryMiB: 1024})
	if err != nil || got.Name != "local" {
		t.Fatalf("tie: got %q, %v; want local", got.Name, err)
	}
}

func TestChooseWeighsMemoryDiskAndCount(t *testing.T) {
	// Each weight counts the same: a has the most memory but the most
	// desktops, b the fewest desktops but little memory, c less disk.
	a := host("a", func(h *Host) { h.Desktops, h.AvailableMiB = 2, 14000 })
	b := host("b", func(h *Host) { h.Desktops, h.AvailableMiB = 1, 4000 })
	c := host("c", func(h *Host) { h.Desktops, h.AvailableMiB, h.FreeDiskMiB = 1, 4100, 50000 })
	got, err := policy.Choose([]Host{c, b, a}, Request{MemoryMiB: 1024})
	if err != nil || got.Name != "b" {
		// a: mem 1, disk 1, few 0 = 2; b: mem 0, disk 1, few 1 = 2; c: mem ~0.01, disk 0, few 1.
		// a and b tie at 2: the earlier listed (b) wins.
		t.Fatalf("got %q, %v; want b", got.Name, err)
	}
}

func TestChooseSaysWhyNoHostFits(t *testing.T) {
	_, err := policy.Choose([]Host{
		host("local", func(h *Host) { h.AvailableMiB = 1000 }),
		host("two", func(h *Host) { h.Up, h.Why = false, "no answer within 15s" }),
	}, Request{MemoryMiB: 2048, Skip: map[string]string{"three": "memory"}})
	var nh *NoHostError
	if !errors.As(err, &nh) || len(nh.Refusals) != 2 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"local: memory: 488 MiB free after reservations", "two: unreachable: no answer within 15s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if _, err := policy.Choose([]Host{host("a")}, Request{Skip: map[string]string{"a": "memory: 0 MiB free"}}); err == nil || !strings.Contains(err.Error(), "a: full as it was recorded there: memory: 0 MiB free") {
		t.Fatalf("skip: %v", err)
	}
}

// A host filled one reservation at a time refuses the create that would
// overfill it: what the store's transaction does with a fresh Load.
func TestReservationsFillAHostExactly(t *testing.T) {
	h := host("a", func(h *Host) { h.MemoryMiB, h.AvailableMiB = 8192, 64000 })
	req := Request{MemoryMiB: 2048}
	placed := 0
	for range 10 {
		if policy.Fits(h, req) != nil {
			break
		}
		h.Desktops++
		h.CommittedMiB += req.MemoryMiB
		placed++
	}
	// 8192 × 1.5 − 512 = 11776 MiB: five desktops of 2 GiB.
	if placed != 5 {
		t.Fatalf("placed %d, want 5", placed)
	}
}
