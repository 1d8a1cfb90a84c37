//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/moves"
)

// TestHost2Migrate moves a tiny running domain live from host1 (the
// system libvirtd) to host2 (scripts/host2.sh) and back through
// hv.Migrate (client-driven, NON_SHARED_INC: the disks' top images are
// mirrored, the base is on both hosts), checks what arrived (the disks'
// data read on the other side, the tap renamed, the definition there and
// gone here, no event delivered as the desktop stopping), then cancels a
// throttled migration and checks the domain still runs on host1.
func TestHost2Migrate(t *testing.T) {
	// Its own folder and ports (16531, ssh 16532).
	dir, uri, _ := ownHost2(t, "bureau-e2e-host2-mig", 16531, "qemu-img", "qemu-io", "ip")
	virsh1, virsh2 := virshOn("qemu:///system"), virshOn(uri)
	var random [3]byte
	rand.Read(random[:])
	id := hex.EncodeToString(random[:])
	name := "bureau-e2e-mig-" + id
	tapA, tapB := "bmig"+id+"a", "bmig"+id+"b"

	// The folders, the base and the OS disk (0x5a at 0, 0x77 at 2 MiB).
	disks, events := tinyDomainDisks(t, dir, uri, name, func(virsh func(...string) (string, error), _ string) {
		virsh("destroy", name)
		virsh("undefine", name)
	})
	folder, base, host2Folder, on2 := disks.folder, disks.base, disks.host2Folder, disks.on2
	osDisk, dataDisk, seed := disks.osDisk, folder+"/data.qcow2", folder+"/seed.iso"

	// The data disk has 12 MiB of 0x3c (enough to throttle a copy).
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", dataDisk, "16M")
	run(t, "qemu-io", "-c", "write -P 0x3c 0 12M", dataDisk)
	// The read-only seed is never copied: the caller puts it there.
	run(t, "truncate", "-s", "1M", seed)
	run(t, "cp", seed, on2(seed))

	xmlPath := filepath.Join(t.TempDir(), "domain.xml")
	os.WriteFile(xmlPath, []byte(migDomainXML(name, osDisk, dataDisk, seed, tapA)), 0o644)
	if out, err := virsh1("define", xmlPath); err != nil {
		t.Fatalf("define on host1: %v\n%s", err, out)
	}
	begun := time.Now()
	if out, err := virsh1("start", name); err != nil {
		t.Fatalf("start on host1: %v\n%s", err, out)
	}
	t.Logf("%s (128 MiB, TCG, tap %s) started on host1 in %s", name, tapA, time.Since(begun).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	h, err := hv.Open(ctx, "qemu:///system", slog.New(slog.NewTextHandler(events.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var where atomic.Value
	where.Store("local")
	h.SetRemotes(link.Remotes{
		Where: func(d string) string {
			if d == name {
				return where.Load().(string)
			}
			return ""
		},
		Hosts: func(context.Context) (map[string]string, error) { return map[string]string{"two": uri}, nil },
	})
	go events.drain(h.Events())
	sizes, err := h.DiskSizes(ctx, name)
	if err != nil || len(sizes) != 2 || sizes["vda"] != 64<<20 || sizes["vdb"] != 16<<20 {
		t.Fatalf("DiskSizes: %v %v", sizes, err)
	}
	// The caller's part: the destination's files, fresh, at those sizes.
	prepare := func(dst string) {
		t.Helper()
		for _, f := range []string{osDisk, dataDisk} {
			os.Remove(filepath.Join(dst, filepath.Base(f)))
		}
		run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", base, "-F", "qcow2", filepath.Join(dst, "os.qcow2"), fmt.Sprint(sizes["vda"]))
		run(t, "qemu-img", "create", "-q", "-f", "qcow2", filepath.Join(dst, "data.qcow2"), fmt.Sprint(sizes["vdb"]))
	}
	migrate := func(ctx context.Context, to, tap string, progress func(moves.MigrateProgress)) (*moves.MigrateResult, error) {
		var reports []moves.MigrateProgress
		res, err := h.Migrate(ctx, name, moves.MigrateOptions{To: to, Address: "127.0.0.1", Tap: tap, Progress: func(p moves.MigrateProgress) {
			reports = append(reports, p)
			if progress != nil {
				progress(p)
			}
		}})
		for _, p := range reports {
			t.Logf("  progress %+v", p)
		}
		if err == nil {
			t.Logf("migrated to %s in %s: downtime %s, %d KiB, %d progress reports", to, res.Took.Round(time.Millisecond),
				res.Downtime, res.DataBytes>>10, len(reports))
		}
		return res, err
	}
	// checkOn: the domain runs on one host with its tap, is gone from the
	// other, and its disks read as written on the host it runs on.
	checkOn := func(virshHere, virshThere func(...string) (string, error), here, tapHere, tapThere, dst string) {
		t.Helper()
		if st, err := virshHere("domstate", name); err != nil || strings.TrimSpace(st) != "running" {
			t.Errorf("on %s: %q %v", here, st, err)
		}
		if info, _ := virshHere("dominfo", name); !strings.Contains(info, "Persistent:     yes") {
			t.Errorf("not persistent on %s:\n%s", here, info)
		}
		if st, err := virshThere("domstate", name); err == nil {
			t.Errorf("still defined on the other host: %s", st)
		}
		if out, err := exec.Command("ip", "link", "show", tapHere).CombinedOutput(); err != nil {
			t.Errorf("tap %s: %v %s", tapHere, err, out)
		}
		if exec.Command("ip", "link", "show", tapThere).Run() == nil {
			t.Errorf("tap %s still there", tapThere)
		}
		for file, reads := range map[string][]string{
			"os.qcow2":   {"read -P 0x5a 0 1M", "read -P 0x77 2M 1M", "read -P 0 3M 1M"},
			"data.qcow2": {"read -P 0x3c 0 12M", "read -P 0 12M 4M"},
		} {
			args := []string{"-r", "-U"}
			for _, r := range reads {
				args = append(args, "-c", r)
			}
			out, err := exec.Command("qemu-io", append(args, filepath.Join(dst, file))...).CombinedOutput()
			if err != nil || strings.Contains(string(out), "Pattern verification failed") {
				t.Errorf("%s on %s: %v\n%s", file, here, err, out)
			}
		}
	}

	// host1 → host2, the tap renamed (both exist at once on one kernel).
	prepare(host2Folder)
	if _, err := migrate(ctx, "two", tapB, nil); err != nil {
		t.Fatal(err)
	}
	where.Store("two")
	checkOn(virsh2, virsh1, "host2", tapB, tapA, host2Folder)
	if st, err := h.State(ctx, name); err != nil || st != desktop.VMRunning {
		t.Errorf("State through the adapter on host2: %s %v", st, err)
	}

	// host2 → host1 with its own tap back, throttled to see progress.
	prepare(folder)
	if out, err := virsh2("migrate-setspeed", name, "4"); err != nil {
		t.Fatalf("migrate-setspeed: %v %s", err, out)
	}
	var phases sync.Map
	if _, err := migrate(ctx, "local", tapA, func(p moves.MigrateProgress) { phases.Store(p.Phase, true) }); err != nil {
		t.Fatal(err)
	}
	where.Store("local")
	checkOn(virsh1, virsh2, "host1", tapA, tapB, folder)
	if _, ok := phases.Load("disks"); !ok {
		t.Error("no progress report in the disks phase")
	}

	// Cancelled: aborted, the domain still runs on host1, not on host2.
	prepare(host2Folder)
	if out, err := virsh1("migrate-setspeed", name, "1"); err != nil {
		t.Fatalf("migrate-setspeed: %v %s", err, out)
	}
	cctx, ccancel := context.WithCancel(ctx)
	var cancelled time.Time
	_, err = migrate(cctx, "two", tapB, func(p moves.MigrateProgress) {
		if cancelled.IsZero() && p.DiskProcessed > 0 {
			cancelled = time.Now()
			ccancel()
		}
	})
	ccancel()
	t.Logf("cancelled migration: %v (%s after cancel)", err, time.Since(cancelled).Round(time.Millisecond))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled migration: %v, want context.Canceled", err)
	}
	if st, err := h.State(ctx, name); err != nil || st != desktop.VMRunning {
		t.Errorf("after the cancel on host1: %s %v", st, err)
	}
	checkOn(virsh1, virsh2, "host1", tapA, tapB, folder)

	// Events: none delivered as the desktop stopping, pausing or going away.
	time.Sleep(time.Second)
	for _, ev := range events.delivered() {
		t.Logf("delivered: %s %s", ev.State, ev.Reason)
		if ev.State != desktop.VMRunning {
			t.Errorf("a migration's event delivered as the desktop %s: %s", ev.State, ev.Reason)
		}
	}
}

// migDomainXML is a tiny TCG domain with bureau's disk layout: an overlay
// vda, a data vdb, a read-only seed cdrom, and a tap NIC (no ROM to load).
func migDomainXML(name, osDisk, dataDisk, seed, tap string) string {
	disk := func(file, dev string) string {
		return fmt.Sprintf(`<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='%s'/><target dev='%s' bus='virtio'/></disk>`, file, dev)
	}
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <cpu mode='maximum' check='none' migratable='on'/>
  <devices>
    %s
    %s
    <disk type='file' device='cdrom'><driver name='qemu' type='raw'/><source file='%s'/><target dev='hdc' bus='ide'/><readonly/></disk>
    <interface type='ethernet'><target dev='%s' managed='yes'/><model type='virtio'/><rom enabled='no'/></interface>
  </devices>
</domain>
`, name, disk(osDisk, "vda"), disk(dataDisk, "vdb"), seed, tap)
}
