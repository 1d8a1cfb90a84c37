package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// A spare is a warm desktop made before anyone asked for it: a template's
// RAM restored under an id, QEMU user and address of its own, its vCPUs
// stopped before the guest ran an instruction (so it needs no network rules
// yet and costs no CPU). A create of the template's image and size takes it:
// the desktop gets the spare's id, its seed and network rules are put in
// place, the VM resumes and the desktop's identity is applied — the restore
// (~2 s under emulation) is already done. A spare is never a desktop: it has
// no record, and bureau removes or adopts it at start-up.
type spare struct {
	Template string `json:"template"`
	ID       string `json:"id"`
	VMUID    int    `json:"vm_uid"`
	NetIP    string `json:"net_ip"`
}

// spareFile marks a desktop folder as a spare's while it has no record.
const spareFile = "spare.json"

// spares holds the ready spares by template key.
type spares struct {
	mu      sync.Mutex
	ready   map[string][]*spare
	filling map[string]bool
}

func (s *spares) take(key string) *spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.ready[key]
	if len(l) == 0 {
		return nil
	}
	sp := l[0]
	s.ready[key] = l[1:]
	return sp
}

func (s *spares) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ready[key])
}

func (s *spares) add(sp *spare) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil {
		s.ready = map[string][]*spare{}
	}
	s.ready[sp.Template] = append(s.ready[sp.Template], sp)
}

// takeAny removes one spare of any template (for memory pressure).
func (s *spares) takeAny() *spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, l := range s.ready {
		if len(l) > 0 {
			s.ready[key] = l[1:]
			return l[0]
		}
	}
	return nil
}

// startFill marks key as being filled; false when a fill already runs.
func (s *spares) startFill(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling == nil {
		s.filling = map[string]bool{}
	}
	if s.filling[key] {
		return false
	}
	s.filling[key] = true
	return true
}

func (s *spares) endFill(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.filling, key)
}

// spareDesktop is the desktop record a spare would have (never stored).
func (w *WarmPool) spareDesktop(t *Template, sp *spare) *desktop.Desktop {
	dir := desktopFolder(w.dataDir, sp.ID)
	return &desktop.Desktop{ID: sp.ID, Spec: desktop.Spec{Image: t.Image, VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB, DataDiskGiB: templateDataGiB},
		Accelerator: string(w.accel), Dir: dir, DataDiskPath: filepath.Join(dir, "data.qcow2"), VMUID: sp.VMUID, NetIP: sp.NetIP}
}

// fill makes spares of template key, in the background, until
// Config.WarmSpares are ready or the host has no memory for another.
func (w *WarmPool) fill(key string) {
	if w.keep <= 0 || !w.spares.startFill(key) {
		return
	}
	w.ops.spawn(10*time.Minute, func(ctx context.Context) {
		defer w.spares.endFill(key)
		for ctx.Err() == nil && w.spares.count(key) < w.keep {
			t, err := w.read(ctx, key)
			if err != nil || t.State != "ready" {
				return
			}
			if !w.memory.keepsMargin(t.MemoryMiB) {
				return
			}
			sp, err := w.makeSpare(ctx, t)
			if err != nil {
				w.log.Warn("warm spare not made", "template", key, "err", err)
				return
			}
			w.spares.add(sp)
			w.log.Info("warm spare ready", "template", key, "spare", sp.ID)
		}
	})
}

// makeSpare restores template t paused under a new id, QEMU user and
// address. Whatever it made is removed again if a step fails.
func (w *WarmPool) makeSpare(ctx context.Context, t *Template) (*spare, error) {
	sp := &spare{Template: t.Key, ID: newID(), VMUID: newVMUID(), NetIP: w.net.newNetIP()}
	d := w.spareDesktop(t, sp)
	vm := w.vmConfigs.VMConfig(d, newUUID())
	if err := w.local.MkdirAll(ctx, d.Dir, 0o700); err != nil {
		return nil, err
	}
	err := func() error {
		b, _ := json.Marshal(sp)
		if err := w.local.WriteFile(ctx, filepath.Join(d.Dir, spareFile), b, 0o600); err != nil {
			return err
		}
		// On failure dropSpare removes the VM and the whole folder.
		var undo reverter
		if err := w.files(ctx, t, d, vm, Seed{DesktopID: sp.ID, Hostname: templateHost}, &undo); err != nil {
			return err
		}
		// The seed is overwritten with the desktop's own when the spare is
		// taken (rewriteSeed), with room to spare.
		if err := w.local.Grow(ctx, vm.SeedISO, spareSeedRoom); err != nil {
			return fmt.Errorf("cloud-init seed: %w", err)
		}
		// A shutdown waits for the restore rather than leave libvirt
		// restoring for a client that is gone.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if err := w.vms.RestoreAs(rctx, filepath.Join(w.dir(t.Key), "ram.save"), vm, filepath.Join(d.Dir, "restore.save"), true); err != nil {
			return err
		}
		// Reserved now, not while a create waits: a DHCP update costs
		// ~0.45 s (libvirt rewrites dnsmasq's hosts and signals it).
		return w.reserveAddress(rctx, sp)
	}()
	if err != nil {
		w.dropSpare(context.WithoutCancel(ctx), sp)
		return nil, err
	}
	return sp, nil
}

// dropSpare removes a spare's VM and files.
func (w *WarmPool) dropSpare(ctx context.Context, sp *spare) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	name := (&desktop.Desktop{ID: sp.ID}).DomainName()
	w.vms.Destroy(ctx, name)
	w.vms.Undefine(ctx, name)
	if err := w.net.releaseAddress(ctx, &desktop.Desktop{ID: sp.ID, NetIP: sp.NetIP}); err != nil {
		w.log.Warn("releasing a removed spare's address", "spare", sp.ID, "err", err)
	}
	w.local.RemoveAllBut(ctx, desktopFolder(w.dataDir, sp.ID), "")
}

// take hands a ready spare of template t to desktop d (not yet
// recorded): d gets the spare's id, folder, QEMU user and address. A spare
// whose VM is no longer paused as made (QEMU died) is removed instead.
func (w *WarmPool) take(ctx context.Context, t *Template, d *desktop.Desktop) *spare {
	if t == nil {
		return nil
	}
	var sp *spare
	for sp = w.spares.take(t.Key); sp != nil; sp = w.spares.take(t.Key) {
		st, err := w.vms.State(ctx, (&desktop.Desktop{ID: sp.ID}).DomainName())
		if err == nil && st == desktop.VMPaused {
			break
		}
		w.log.Warn("warm spare lost its VM: removed", "spare", sp.ID, "vm", st, "err", err)
		lost := sp
		w.ops.spawn(time.Minute, func(ctx context.Context) {
			w.dropSpare(ctx, lost)
			w.fill(lost.Template)
		})
	}
	if sp == nil {
		return nil
	}
	sd := w.spareDesktop(t, sp)
	d.ID, d.Dir, d.DataDiskPath, d.VMUID, d.NetIP = sp.ID, sd.Dir, sd.DataDiskPath, sp.VMUID, sp.NetIP
	return sp
}

// giveBack returns a spare a create took but could not record (why):
// kept for the next create, unless its QEMU user or address clashed with
// another desktop's, or enough spares are ready already.
func (w *WarmPool) giveBack(ctx context.Context, sp *spare, why error) {
	if errors.Is(why, errSpareClash) || w.spares.count(sp.Template) >= w.keep {
		w.dropSpare(ctx, sp)
		w.fill(sp.Template)
		return
	}
	w.spares.add(sp)
}

// reserveAddress reserves a spare's address in DHCP under the name
// "spare-<id>", which the desktop taking it replaces (renameAddress).
func (w *WarmPool) reserveAddress(ctx context.Context, sp *spare) error {
	return w.net.reserveAddress(ctx, &desktop.Desktop{ID: sp.ID, Name: "spare-" + sp.ID, NetIP: sp.NetIP})
}

// renameAddress puts the desktop's name on the DHCP reservation its spare
// made, in the background: the address stays the same.
func (w *WarmPool) renameAddress(d *desktop.Desktop) {
	cp := *d
	w.ops.spawn(time.Minute, func(ctx context.Context) {
		if err := w.net.reserveAddress(ctx, &cp); err != nil {
			w.log.Warn("naming a desktop's DHCP reservation", "desktop", cp.ID, "err", err)
		}
	})
}

// claim makes a taken spare's folder the recorded desktop's. The next
// spare is made once the desktop is built (build): made at once, its
// restore took the CPU the desktop's identity needs (~1.5 s longer on two
// cores under emulation).
func (w *WarmPool) claim(ctx context.Context, d *desktop.Desktop) {
	w.local.Remove(ctx, filepath.Join(d.Dir, spareFile))
}

// fromSpare finishes a create that took a spare: the desktop's seed,
// then its VM resumed and its identity applied.
func (w *WarmPool) fromSpare(ctx context.Context, d *desktop.Desktop, seed Seed, took *warmTimes) error {
	begun := time.Now()
	w.ops.step(ctx, d, stepWarmDisks)
	vm := w.vmConfigs.VMConfig(d, "")
	if err := w.rewriteSeed(ctx, vm.SeedISO, seed); err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	if err := keepIdentityKeys(ctx, w.local, d, seed); err != nil {
		return err
	}
	// From here a restart finishes the create by applying the identity.
	w.ops.step(ctx, d, stepWarmIdentity)
	resumeAt := time.Now()
	took.disks = resumeAt.Sub(begun)
	if err := w.vms.Resume(ctx, vm.Name); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	w.ops.failpoint("create:after-restore")
	took.restore, took.spare = time.Since(resumeAt), true
	return w.identityTimed(ctx, d, took)
}

// CPUHold keeps the host's background work off the CPU until released.
type CPUHold interface {
	Hold() (release func())
}

// holdCPU holds Config.CPUHold, when there is one, until release.
func (w *WarmPool) holdCPU() (release func()) {
	if w.cpuHold == nil {
		return func() {}
	}
	return w.cpuHold.Hold()
}

// spareSeedRoom is the room a spare's seed file leaves for the desktop's
// own: SSH keys, name and layout (API requests are far smaller).
const spareSeedRoom = 4 << 20

// rewriteSeed writes seed over the seed file at path in place. The
// spare's QEMU keeps the file it opened (a file put in its place would not
// be read before QEMU restarts, and a paused guest cannot let its drive's
// tray open for a new one); the guest reads the seed at its next boot. The
// rest of the file is zeroed: ISO 9660 says where the image ends.
func (w *WarmPool) rewriteSeed(ctx context.Context, path string, seed Seed) error {
	tmp := path + ".new"
	defer w.local.Remove(context.WithoutCancel(ctx), tmp)
	if err := w.seeds.WriteSeed(ctx, tmp, seed); err != nil {
		return err
	}
	b, err := w.local.ReadFile(ctx, tmp)
	if err != nil {
		return err
	}
	if err := w.local.Overwrite(ctx, path, b); err != nil {
		return fmt.Errorf("writing the desktop's seed over the spare's: %w", err)
	}
	return nil
}

// adopt runs at start-up: spares a previous process made are kept
// when their VM is still paused as made, otherwise removed; a folder whose
// spare was taken (it has a record) is only unmarked. Then every ready
// template is filled.
func (w *WarmPool) adopt(ctx context.Context) {
	root := filepath.Join(w.dataDir, "desktops")
	names, _ := w.local.ReadDir(ctx, root)
	for _, name := range names {
		b, err := w.local.ReadFile(ctx, filepath.Join(root, name, spareFile))
		if err != nil {
			continue
		}
		var sp spare
		if json.Unmarshal(b, &sp) != nil || sp.ID != name {
			continue
		}
		if _, err := w.store.GetDesktop(ctx, sp.ID); err == nil || !errors.Is(err, desktop.ErrNotFound) {
			if err == nil {
				w.local.Remove(ctx, filepath.Join(root, name, spareFile))
			}
			continue
		}
		st, err := w.vms.State(ctx, (&desktop.Desktop{ID: sp.ID}).DomainName())
		if t := w.readyKey(ctx, sp.Template); err == nil && st == desktop.VMPaused && t != nil && w.spares.count(sp.Template) < w.keep {
			// Its address is reserved again: a spare made by an older
			// bureau had none.
			if err := w.reserveAddress(ctx, &sp); err == nil {
				w.spares.add(&sp)
				continue
			}
		}
		w.dropSpare(ctx, &sp)
	}
	ts, _ := w.Templates(ctx)
	for _, t := range ts {
		if t.State == "ready" {
			w.fill(t.Key)
		}
	}
}

// relieve drops a spare when the host runs short of memory: spares
// go before any desktop moves down a tier. It says whether it dropped one.
func (w *WarmPool) relieve(avail int) bool {
	sp := w.spares.takeAny()
	if sp == nil {
		return false
	}
	w.log.Info("warm spare removed: host memory low", "spare", sp.ID, "available_mib", avail)
	w.dropSpare(w.ops.ctx, sp)
	return true
}
