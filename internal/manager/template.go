package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Template is a desktop booted once and saved with its RAM, from which new
// desktops of the same image and size start in seconds instead of booting
// ("warm create"). Its files are never changed once it is ready: desktops'
// OS disks are overlays of its OS disk.
type Template struct {
	Key       string
	Image     string
	VCPUs     int
	MemoryMiB int
	State     string // building, ready, failed
	Error     string
	CreatedAt time.Time
	BuildTime string
	// Spares is how many of its desktops are restored ahead (spares.go).
	Spares int
}

// templateRecord is a template's template.json: the file format, apart
// from the type so that a renamed field does not orphan the templates on
// disk (the API shows templates as apiv1.Template).
type templateRecord struct {
	Key       string    `json:"key"`
	Image     string    `json:"image"`
	VCPUs     int       `json:"vcpus"`
	MemoryMiB int       `json:"memory_mib"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	BuildTime string    `json:"build_time,omitempty"`
	Spares    int       `json:"spares"`
}

const (
	templateHost     = "bureau-template"
	templateDataGiB  = 1
	templateMetaFile = "template.json"
)

func templateKey(image string, vcpus, mem int) string {
	return fmt.Sprintf("%s-%dc-%dm", image, vcpus, mem)
}

// WarmPool builds warm templates and keeps spares of them restored ahead
// (spares.go), for warm creates to take; its exported methods are the
// API's Templates. It holds the operation core and what templates and
// spares need beside it, each by the role it plays here.
type WarmPool struct {
	ops       *runner
	vms       warmVMs
	disks     warmDisks
	local     warmFiles
	seeds     SeedWriter
	store     warmStore
	vmConfigs vmConfigs
	net       spareNetwork
	identity  identityApplier
	memory    memoryMargin
	log       *slog.Logger

	// From Config: where templates and desktops' folders are, what new
	// desktops run under and default to, an OS disk's size, how long a
	// template's session and a trim settle, how many spares of each ready
	// template are kept (keep), and what a warm create holds off the CPU.
	dataDir, defaultImage string
	accel                 desktop.Accelerator
	osDiskGiB             int
	settle, trimSettle    time.Duration
	keep                  int
	cpuHold               CPUHold

	spares spares // the ready spares
}

// warmVMs defines, restores, saves and removes the VMs of templates, spares
// and warm desktops, and runs commands in their guests.
type warmVMs interface {
	Define(ctx context.Context, c desktop.VMConfig) error
	Undefine(ctx context.Context, name string) error
	State(ctx context.Context, name string) (desktop.VMState, error)
	List(ctx context.Context) (map[string]desktop.VMState, error)
	Start(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	SaveTo(ctx context.Context, name, path string) error
	RestoreAs(ctx context.Context, image string, c desktop.VMConfig, scratch string, paused bool) error
	guestExec
}

// warmDisks makes a template's disks and a warm desktop's from them.
type warmDisks interface {
	CreateOverlay(ctx context.Context, base, path string, sizeGiB int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB int) error
	Copy(ctx context.Context, src, dst string) error
}

// warmFiles keeps templates' and spares' files where they are, on
// bureau's own host: their records, their folders, a warm create's SSH
// keys and a spare's seed (hostfiles.Local).
type warmFiles interface {
	LocalFiles
	Remove(ctx context.Context, path string) error
	RemoveAllBut(ctx context.Context, dir, keep string) (kept bool, err error)
}

// warmStore reads the images templates are built from and tells a spare
// from a desktop that took it.
type warmStore interface {
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
}

// vmConfigs is the VM definition of a desktop (vmDefs.VMConfig).
type vmConfigs interface {
	VMConfig(d *desktop.Desktop, uuid string) desktop.VMConfig
}

// spareNetwork draws a spare's address and reserves and releases it in its
// host's DHCP (network.go).
type spareNetwork interface {
	newNetIP() string
	reserveAddress(ctx context.Context, d *desktop.Desktop) error
	releaseAddress(ctx context.Context, d *desktop.Desktop) error
}

// identityApplier gives a guest restored from a template its desktop's own
// identity (identities.applyIdentity, identity.go).
type identityApplier interface {
	applyIdentity(ctx context.Context, d *desktop.Desktop) error
}

// memoryMargin says whether the host keeps its low-memory margin with
// memMiB more resident (idler.keepsMargin, pressure.go).
type memoryMargin interface {
	keepsMargin(memMiB int) bool
}

// WarmPool builds and lists warm templates and keeps their spares (the
// API's Templates).
func (m *Manager) WarmPool() *WarmPool { return m.warm }

// dir is template key's folder.
func (w *WarmPool) dir(key string) string {
	return filepath.Join(w.dataDir, "templates", key)
}

// Templates lists the templates on this host.
func (w *WarmPool) Templates(ctx context.Context) ([]*Template, error) {
	keys, err := w.local.ReadDir(ctx, filepath.Join(w.dataDir, "templates"))
	if err != nil {
		return nil, err
	}
	out := []*Template{}
	for _, key := range keys {
		if t, err := w.read(ctx, key); err == nil {
			t.Spares = w.spares.count(t.Key)
			out = append(out, t)
		}
	}
	return out, nil
}

func (w *WarmPool) read(ctx context.Context, key string) (*Template, error) {
	b, err := w.local.ReadFile(ctx, filepath.Join(w.dir(key), templateMetaFile))
	if err != nil {
		return nil, err
	}
	var r templateRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	t := Template(r)
	return &t, nil
}

// write replaces t's record at once: a crash leaves the old or the new.
func (w *WarmPool) write(ctx context.Context, t *Template) error {
	b, _ := json.MarshalIndent(templateRecord(*t), "", "  ")
	tmp := filepath.Join(w.dir(t.Key), templateMetaFile+".tmp")
	if err := w.local.WriteFile(ctx, tmp, b, 0o600); err != nil {
		return err
	}
	return w.local.Rename(ctx, tmp, filepath.Join(w.dir(t.Key), templateMetaFile))
}

// abandonBuilds runs at start-up: a template build a previous
// process did not finish is marked failed and its VM removed.
func (w *WarmPool) abandonBuilds(ctx context.Context) {
	ts, err := w.Templates(ctx)
	if err != nil {
		return
	}
	for _, t := range ts {
		if t.State == "building" {
			t.State, t.Error = "failed", "interrupted by a bureau restart; build it again"
			w.write(ctx, t)
		}
	}
	vms, err := w.vms.List(ctx)
	if err != nil {
		return
	}
	for name := range vms {
		if strings.HasPrefix(name, "bureau-tmpl-") {
			w.vms.Destroy(ctx, name)
			w.vms.Undefine(ctx, name)
		}
	}
}

// ready returns the ready template for this image and size, if any.
func (w *WarmPool) ready(ctx context.Context, image string, vcpus, mem int) *Template {
	return w.readyKey(ctx, templateKey(image, vcpus, mem))
}

// readyKey is the ready template named key, if any.
func (w *WarmPool) readyKey(ctx context.Context, key string) *Template {
	t, err := w.read(ctx, key)
	if err != nil || t.State != "ready" {
		return nil
	}
	return t
}

// BuildTemplate boots a desktop of image and size once, waits for its
// session, and saves it with its RAM, in the background.
func (w *WarmPool) BuildTemplate(ctx context.Context, image string, vcpus, mem int) (*Template, error) {
	if image == "" {
		image = w.defaultImage
	}
	spec := desktop.Spec{Image: image, VCPUs: vcpus, MemoryMiB: mem, DataDiskGiB: templateDataGiB}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	img, err := w.store.GetImage(ctx, image)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, &desktop.ValidationError{Field: "image", Message: fmt.Sprintf("no image named %q", image)}
	}
	if err != nil {
		return nil, err
	}
	if img.RecipeHash == "" {
		return nil, &desktop.ValidationError{Field: "image", Message: "templates need an image built by bureau (imported images install their desktop on first boot)"}
	}
	key := templateKey(image, vcpus, mem)
	if err := w.ops.lock("template/"+key, "build"); err != nil {
		return nil, err
	}
	if t, err := w.read(ctx, key); err == nil && t.State == "ready" {
		w.ops.unlock("template/" + key)
		return t, nil
	}
	dir := w.dir(key)
	w.local.RemoveAllBut(ctx, dir, "") // a failed or interrupted build starts over
	if err := w.local.MkdirAll(ctx, dir, 0o750); err != nil {
		w.ops.unlock("template/" + key)
		return nil, err
	}
	t := &Template{Key: key, Image: image, VCPUs: vcpus, MemoryMiB: mem, State: "building", CreatedAt: time.Now().UTC()}
	if err := w.write(ctx, t); err != nil {
		w.ops.unlock("template/" + key)
		return nil, err
	}
	cp := *t
	w.ops.background("template/"+key, func(ctx context.Context) {
		begun := time.Now()
		if err := w.bootAndSave(ctx, &cp, img.Path); err != nil {
			cp.State, cp.Error = "failed", err.Error()
			w.log.Error("template build failed", "template", key, "err", err)
		} else {
			cp.State, cp.BuildTime = "ready", time.Since(begun).Round(time.Second).String()
			w.log.Info("template ready", "template", key, "took", cp.BuildTime)
		}
		w.write(ctx, &cp)
		w.fill(key)
	})
	return t, nil
}

// bootAndSave boots t's VM from base, waits for its session and saves
// its RAM; its VM is removed either way.
func (w *WarmPool) bootAndSave(ctx context.Context, t *Template, base string) error {
	dir := w.dir(t.Key)
	d := &desktop.Desktop{ID: "tmpl-" + newID(), Name: templateHost, Spec: desktop.Spec{VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB},
		Accelerator: string(w.accel), Dir: dir, DataDiskPath: filepath.Join(dir, "data.qcow2"), VMUID: templateUID}
	vm := w.vmConfigs.VMConfig(d, newUUID())
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		w.vms.Destroy(cleanup, vm.Name)
		w.vms.Undefine(cleanup, vm.Name)
	}()
	if err := w.disks.CreateDataDisk(ctx, d.DataDiskPath, templateDataGiB); err != nil {
		return err
	}
	if err := w.disks.CreateOverlay(ctx, base, vm.OSDisk, w.osDiskGiB); err != nil {
		return err
	}
	if err := w.seeds.WriteSeed(ctx, vm.SeedISO, Seed{DesktopID: d.ID, Hostname: templateHost}); err != nil {
		return err
	}
	if err := w.vms.Define(ctx, vm); err != nil {
		return err
	}
	if err := w.vms.Start(ctx, vm.Name); err != nil {
		return err
	}
	// Ready means: cloud-init finished and the desktop session is drawn.
	ready := "cloud-init status | grep -q 'status: done' && pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop"
	deadline := time.Now().Add(15 * time.Minute)
	for {
		res, err := w.vms.GuestExec(ctx, vm.Name, desktop.Exec{Argv: []string{"/bin/sh", "-c", ready}})
		if err == nil && res.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the template's desktop session did not come up: %v", err)
		}
		time.Sleep(3 * time.Second)
	}
	time.Sleep(w.settle) // let the session finish drawing and settle
	// Every warm create copies and restores the saved RAM: drop the guest's
	// page cache first so the pages it frees are saved as zero pages.
	if err := trim(ctx, w.vms, vm.Name); err != nil {
		w.log.Warn("trim before saving the template", "template", t.Key, "err", err)
	} else {
		sleep(ctx, w.trimSettle)
	}
	if err := w.vms.SaveTo(ctx, vm.Name, filepath.Join(dir, "ram.save")); err != nil {
		return err
	}
	return w.share(ctx, dir, vm.OSDisk)
}

// share gives a built template's files back to root: its OS disk becomes
// a read-only base every warm desktop's QEMU reads (as an image is); its
// RAM and data disk only bureau reads, to copy them.
func (w *WarmPool) share(ctx context.Context, dir, osDisk string) error {
	w.local.Disown(ctx, dir)
	if err := w.local.Chmod(ctx, dir, 0o711); err != nil {
		return err
	}
	return w.local.Chmod(ctx, osDisk, 0o644)
}

// fromTemplate makes a desktop from a ready template: overlay of its OS disk,
// a copy of its data disk, its saved RAM restored as this desktop's VM, then
// this desktop's identity and data disk size applied in the running guest.
func (w *WarmPool) fromTemplate(ctx context.Context, d *desktop.Desktop, t *Template, seed Seed, undo *reverter, took *warmTimes) error {
	begun := time.Now()
	w.ops.step(ctx, d, stepWarmDisks)
	vm := w.vmConfigs.VMConfig(d, newUUID())
	if err := w.files(ctx, t, d, vm, seed, undo); err != nil {
		return err
	}
	if err := keepIdentityKeys(ctx, w.local, d, seed); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { w.local.Remove(ctx, identityKeys(d)) })
	w.ops.step(ctx, d, stepWarmRestore)
	restoreAt := time.Now()
	took.disks = restoreAt.Sub(begun)
	if err := w.vms.RestoreAs(ctx, filepath.Join(w.dir(t.Key), "ram.save"), vm, filepath.Join(d.Dir, "restore.save"), false); err != nil {
		return err
	}
	w.ops.failpoint("create:after-restore")
	took.restore = time.Since(restoreAt)
	return w.identityTimed(ctx, d, took)
}

// files makes d's disks from template t (a copy of its data disk, an
// overlay of its OS disk), writes its seed and defines its VM; undo gets
// a step back for each.
func (w *WarmPool) files(ctx context.Context, t *Template, d *desktop.Desktop, vm desktop.VMConfig, seed Seed, undo *reverter) error {
	dir := w.dir(t.Key)
	if err := w.disks.Copy(ctx, filepath.Join(dir, "data.qcow2"), d.DataDiskPath); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	undo.add(func(ctx context.Context) { w.local.Remove(ctx, d.DataDiskPath) })
	if err := w.disks.CreateOverlay(ctx, filepath.Join(dir, "os.qcow2"), vm.OSDisk, w.osDiskGiB); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	undo.add(func(ctx context.Context) { w.local.Remove(ctx, vm.OSDisk) })
	if err := w.seeds.WriteSeed(ctx, vm.SeedISO, seed); err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	undo.add(func(ctx context.Context) { w.local.Remove(ctx, vm.SeedISO); w.local.Remove(ctx, vm.SerialLog) })
	if err := w.vms.Define(ctx, vm); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { w.vms.Undefine(ctx, vm.Name) })
	return nil
}

// identityTimed applies d's identity as the last step of a warm create
// and logs the steps' times.
func (w *WarmPool) identityTimed(ctx context.Context, d *desktop.Desktop, took *warmTimes) error {
	begun := time.Now()
	err := w.identity.applyIdentity(ctx, d)
	took.identity = time.Since(begun)
	w.log.Info("warm create steps", "desktop", d.ID, "steps", took.String())
	return err
}

// warmTimes is how long each step of a warm create took; spare: it took a
// spare (restored ahead), which only resumed.
type warmTimes struct {
	disks, restore, identity time.Duration
	spare                    bool
}

func (w warmTimes) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	if w.spare {
		return fmt.Sprintf("a spare restored ahead: seed %s, resumed %s, identity and data disk %s", r(w.disks), r(w.restore), r(w.identity))
	}
	return fmt.Sprintf("disks and definition %s, RAM restored %s, identity and data disk %s", r(w.disks), r(w.restore), r(w.identity))
}

// Steps of a warm create: a restart that finds a desktop between restore
// and identity applies the identity before the desktop counts as created.
const (
	stepWarmDisks    = "warm-disks"
	stepWarmRestore  = "warm-restore"
	stepWarmIdentity = "warm-identity"
)
