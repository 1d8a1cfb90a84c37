package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/migrations"
	"github.com/pressly/goose/v3"
)

func TestHostsRoundTrip(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			two := &hosts.Host{Name: "two", URI: "qemu+tcp://10.0.0.2:16509/system", Labels: map[string]string{"zone": "b"}, State: hosts.StateUp,
				Facts: hosts.Facts{Hostname: "h2", LibvirtVersion: "9.0.0", Accelerator: "kvm", CPUs: 64, MemoryMiB: 262144, FreeMemoryMiB: 200000,
					DiskMiB: 1 << 22, FreeDiskMiB: 3 << 20},
				SSH:     hosts.SSH{Address: "root@10.0.0.2:22", HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH"},
				Network: hosts.Network{Bridge: "bureau1", Subnet: "10.121.0.0/16"}, Ready: true,
				LastSeenAt: &now, CreatedAt: now}
			local := &hosts.Host{Name: hosts.LocalName, URI: "qemu:///system", State: hosts.StateConnecting, CreatedAt: now}
			for _, h := range []*hosts.Host{two, local} {
				if err := s.InsertHost(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.InsertHost(ctx, &hosts.Host{Name: "two", URI: "qemu+tcp://other/system", CreatedAt: now}); !errors.Is(err, hosts.ErrExists) {
				t.Errorf("same name: %v", err)
			}
			if err := s.InsertHost(ctx, &hosts.Host{Name: "three", URI: two.URI, CreatedAt: now}); !errors.Is(err, hosts.ErrExists) {
				t.Errorf("same URI: %v", err)
			}
			list, err := s.ListHosts(ctx)
			if err != nil || len(list) != 2 || list[0].Name != hosts.LocalName || list[1].Name != "two" {
				t.Fatalf("list %+v %v (want local first)", list, err)
			}
			got := list[1]
			if got.URI != two.URI || got.Labels["zone"] != "b" || got.Facts != two.Facts || got.State != hosts.StateUp ||
				got.LastSeenAt == nil || !got.LastSeenAt.Equal(now) || !got.CreatedAt.Equal(now) ||
				got.SSH != two.SSH || got.Network != two.Network || !got.Ready {
				t.Errorf("read back %+v", got)
			}
			if list[0].LastSeenAt != nil || list[0].Labels == nil {
				t.Errorf("local: %+v", list[0])
			}
			got.State, got.LastError, got.FreeMemoryMiB, got.FreeDiskMiB = hosts.StateUnreachable, "connection lost", 1, 2
			got.Ready, got.ReadyError = false, "nft: not found"
			if err := s.UpdateHostHealth(ctx, &got); err != nil {
				t.Fatal(err)
			}
			back, err := s.GetHost(ctx, "two")
			if err != nil || back.State != hosts.StateUnreachable || back.LastError != "connection lost" || back.FreeMemoryMiB != 1 ||
				back.DiskMiB != 1<<22 || back.FreeDiskMiB != 2 ||
				back.Ready || back.ReadyError != "nft: not found" {
				t.Errorf("after update %+v %v", back, err)
			}
			if back.Draining {
				t.Errorf("a new host is draining")
			}
			if err := s.SetHostDraining(ctx, "two", true); err != nil {
				t.Fatal(err)
			}
			// A health check leaves the flag as it is.
			if err := s.UpdateHostHealth(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if back, err := s.GetHost(ctx, "two"); err != nil || !back.Draining {
				t.Errorf("draining: %+v %v", back, err)
			}
			if err := s.SetHostDraining(ctx, "nope", true); !errors.Is(err, hosts.ErrNotFound) {
				t.Errorf("draining an unknown host: %v", err)
			}
			if err := s.DeleteHost(ctx, "two"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetHost(ctx, "two"); !errors.Is(err, hosts.ErrNotFound) {
				t.Errorf("get after delete: %v", err)
			}
			if err := s.DeleteHost(ctx, "two"); !errors.Is(err, hosts.ErrNotFound) {
				t.Errorf("delete twice: %v", err)
			}
			if err := s.UpdateHostHealth(ctx, &got); !errors.Is(err, hosts.ErrNotFound) {
				t.Errorf("update of a removed host: %v", err)
			}
		})
	}
}

func TestDesktopsKeepTheirHost(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			here, there := newDesktop("d1", "alice", "here"), newDesktop("d2", "alice", "there")
			there.Host = "two"
			for _, d := range []*desktop.Desktop{here, there} {
				if err := s.CreateDesktop(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			if d, err := s.GetDesktop(ctx, "d1"); err != nil || d.Host != desktop.LocalHost || d.Remote() {
				t.Errorf("a desktop made without a host: %+v %v", d, err)
			}
			if d, err := s.GetDesktop(ctx, "d2"); err != nil || d.Host != "two" || !d.Remote() {
				t.Errorf("a desktop on host two: %+v %v", d, err)
			}
			if ds, err := s.ListDesktops(ctx, desktop.Filter{Host: "two"}); err != nil || len(ds) != 1 || ds[0].ID != "d2" {
				t.Errorf("host two's desktops: %+v %v", ds, err)
			}
			// Moved while hibernated: it renews its address after its next
			// wake, once.
			if err := s.MoveDesktop(ctx, "d1", "two", "10.121.0.9", true); err != nil {
				t.Fatal(err)
			}
			if d, err := s.GetDesktop(ctx, "d1"); err != nil || d.Host != "two" || d.NetIP != "10.121.0.9" || !d.RenewAddress {
				t.Errorf("moved: %+v %v", d, err)
			}
			if err := s.RenewedAddress(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if d, err := s.GetDesktop(ctx, "d1"); err != nil || d.RenewAddress {
				t.Errorf("renewed: %+v %v", d, err)
			}
		})
	}
}

func TestHostDiskMigratesDownAndUp(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			dialect := goose.DialectSQLite3
			if s.postgres {
				dialect = goose.DialectPostgres
			}
			p, err := goose.NewProvider(dialect, s.db, migrations.FS)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.DownTo(ctx, 23); err != nil {
				t.Fatal(err)
			}
			if _, err := s.exec(ctx, `SELECT disk_mib FROM hosts`); err == nil {
				t.Error("disk_mib still there after the down migration")
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.InsertHost(ctx, &hosts.Host{Name: hosts.LocalName, URI: "qemu:///system", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if h, err := s.GetHost(ctx, hosts.LocalName); err != nil || h.DiskMiB != 0 || h.FreeDiskMiB != 0 {
				t.Errorf("unmeasured host %+v %v", h, err)
			}
		})
	}
}
