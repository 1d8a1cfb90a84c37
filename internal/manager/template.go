package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	Key       string    `json:"key"`
	Image     string    `json:"image"`
	VCPUs     int       `json:"vcpus"`
	MemoryMiB int       `json:"memory_mib"`
	State     string    `json:"state"` // building, ready, failed
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	BuildTime string    `json:"build_time,omitempty"`
	// Spares is how many of its desktops are restored ahead (spares.go).
	Spares int `json:"spares"`
}

const (
	templateHost     = "bureau-template"
	templateDataGiB  = 1
	templateMetaFile = "template.json"
)

func templateKey(image string, vcpus, mem int) string {
	return fmt.Sprintf("%s-%dc-%dm", image, vcpus, mem)
}

func (m *Manager) templateDir(key string) string {
	return filepath.Join(m.cfg.DataDir, "templates", key)
}

// Templates lists the templates on this host.
func (m *Manager) Templates(context.Context) ([]*Template, error) {
	entries, err := os.ReadDir(filepath.Join(m.cfg.DataDir, "templates"))
	if errors.Is(err, os.ErrNotExist) {
		return []*Template{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []*Template{}
	for _, e := range entries {
		if t, err := m.readTemplate(e.Name()); err == nil {
			t.Spares = m.spares.count(t.Key)
			out = append(out, t)
		}
	}
	return out, nil
}

func (m *Manager) readTemplate(key string) (*Template, error) {
	b, err := os.ReadFile(filepath.Join(m.templateDir(key), templateMetaFile))
	if err != nil {
		return nil, err
	}
	var t Template
	return &t, json.Unmarshal(b, &t)
}

func (m *Manager) writeTemplate(t *Template) error {
	b, _ := json.MarshalIndent(t, "", "  ")
	tmp := filepath.Join(m.templateDir(t.Key), templateMetaFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(m.templateDir(t.Key), templateMetaFile))
}

// abandonTemplateBuilds runs at start-up: a template build a previous
// process did not finish is marked failed and its VM removed.
func (m *Manager) abandonTemplateBuilds(ctx context.Context) {
	ts, err := m.Templates(ctx)
	if err != nil {
		return
	}
	for _, t := range ts {
		if t.State == "building" {
			t.State, t.Error = "failed", "interrupted by a bureau restart; build it again"
			m.writeTemplate(t)
		}
	}
	vms, err := m.hv.List(ctx)
	if err != nil {
		return
	}
	for name := range vms {
		if strings.HasPrefix(name, "bureau-tmpl-") {
			m.hv.Destroy(ctx, name)
			m.hv.Undefine(ctx, name)
		}
	}
}

// readyTemplate returns the ready template for this image and size, if any.
func (m *Manager) readyTemplate(image string, vcpus, mem int) *Template {
	return m.readyTemplateKey(templateKey(image, vcpus, mem))
}

// readyTemplateKey is the ready template named key, if any.
func (m *Manager) readyTemplateKey(key string) *Template {
	t, err := m.readTemplate(key)
	if err != nil || t.State != "ready" {
		return nil
	}
	return t
}

// BuildTemplate boots a desktop of image and size once, waits for its
// session, and saves it with its RAM, in the background.
func (m *Manager) BuildTemplate(ctx context.Context, image string, vcpus, mem int) (*Template, error) {
	if image == "" {
		image = m.cfg.DefaultImage
	}
	spec := desktop.Spec{Image: image, VCPUs: vcpus, MemoryMiB: mem, DataDiskGiB: templateDataGiB}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	img, err := m.store.GetImage(ctx, image)
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
	if err := m.lock("template/"+key, "build"); err != nil {
		return nil, err
	}
	if t, err := m.readTemplate(key); err == nil && t.State == "ready" {
		m.unlock("template/" + key)
		return t, nil
	}
	dir := m.templateDir(key)
	os.RemoveAll(dir) // a failed or interrupted build starts over
	if err := os.MkdirAll(dir, 0o750); err != nil {
		m.unlock("template/" + key)
		return nil, err
	}
	t := &Template{Key: key, Image: image, VCPUs: vcpus, MemoryMiB: mem, State: "building", CreatedAt: time.Now().UTC()}
	if err := m.writeTemplate(t); err != nil {
		m.unlock("template/" + key)
		return nil, err
	}
	cp := *t
	m.background("template/"+key, func(ctx context.Context) {
		begun := time.Now()
		if err := m.buildTemplate(ctx, &cp, img.Path); err != nil {
			cp.State, cp.Error = "failed", err.Error()
			m.log.Error("template build failed", "template", key, "err", err)
		} else {
			cp.State, cp.BuildTime = "ready", time.Since(begun).Round(time.Second).String()
			m.log.Info("template ready", "template", key, "took", cp.BuildTime)
		}
		m.writeTemplate(&cp)
		m.fillSpares(key)
	})
	return t, nil
}

func (m *Manager) buildTemplate(ctx context.Context, t *Template, base string) error {
	dir := m.templateDir(t.Key)
	d := &desktop.Desktop{ID: "tmpl-" + newID(), Name: templateHost, Spec: desktop.Spec{VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB},
		Accelerator: string(m.cfg.Accelerator), Dir: dir, DataDiskPath: filepath.Join(dir, "data.qcow2"), VMUID: templateUID}
	vm := m.VMConfig(d, newUUID())
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		m.hv.Destroy(cleanup, vm.Name)
		m.hv.Undefine(cleanup, vm.Name)
	}()
	if err := m.disks.CreateDataDisk(ctx, d.DataDiskPath, templateDataGiB); err != nil {
		return err
	}
	if err := m.disks.CreateOverlay(ctx, base, vm.OSDisk, m.cfg.OSDiskGiB); err != nil {
		return err
	}
	if err := m.seeds.WriteSeed(ctx, vm.SeedISO, Seed{DesktopID: d.ID, Hostname: templateHost}); err != nil {
		return err
	}
	if err := m.hv.Define(ctx, vm); err != nil {
		return err
	}
	if err := m.hv.Start(ctx, vm.Name); err != nil {
		return err
	}
	// Ready means: cloud-init finished and the desktop session is drawn.
	ready := "cloud-init status | grep -q 'status: done' && pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop"
	deadline := time.Now().Add(15 * time.Minute)
	for {
		res, err := m.hv.GuestExec(ctx, vm.Name, desktop.Exec{Argv: []string{"/bin/sh", "-c", ready}})
		if err == nil && res.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the template's desktop session did not come up: %v", err)
		}
		time.Sleep(3 * time.Second)
	}
	time.Sleep(m.cfg.TemplateSettle) // let the session finish drawing and settle
	// Every warm create copies and restores the saved RAM: drop the guest's
	// page cache first so the pages it frees are saved as zero pages.
	if err := m.trim(ctx, vm.Name); err != nil {
		m.log.Warn("trim before saving the template", "template", t.Key, "err", err)
	} else {
		sleep(ctx, m.cfg.TrimSettle)
	}
	if err := m.hv.SaveTo(ctx, vm.Name, filepath.Join(dir, "ram.save")); err != nil {
		return err
	}
	return shareTemplate(dir, vm.OSDisk)
}

// shareTemplate gives a built template's files back to root: its OS disk
// becomes a read-only base every warm desktop's QEMU reads (as an image is);
// its RAM and data disk only bureau reads, to copy them.
func shareTemplate(dir, osDisk string) error {
	disown(dir)
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	return os.Chmod(osDisk, 0o644)
}

// warmBuild makes a desktop from a ready template: overlay of its OS disk,
// a copy of its data disk, its saved RAM restored as this desktop's VM, then
// this desktop's identity and data disk size applied in the running guest.
func (m *Manager) warmBuild(ctx context.Context, d *desktop.Desktop, t *Template, seed Seed, undo *reverter, took *warmTimes) error {
	begun := time.Now()
	m.step(ctx, d, stepWarmDisks)
	vm := m.VMConfig(d, newUUID())
	if err := m.warmFiles(ctx, t, d, vm, seed, undo); err != nil {
		return err
	}
	if err := keepIdentityKeys(d, seed); err != nil {
		return err
	}
	undo.add(func(context.Context) { os.Remove(identityKeys(d)) })
	m.step(ctx, d, stepWarmRestore)
	restoreAt := time.Now()
	took.disks = restoreAt.Sub(begun)
	if err := m.hv.RestoreAs(ctx, filepath.Join(m.templateDir(t.Key), "ram.save"), vm, filepath.Join(d.Dir, "restore.save"), false); err != nil {
		return err
	}
	m.failpoint("create:after-restore")
	took.restore = time.Since(restoreAt)
	return m.identityTimed(ctx, d, took)
}

// warmFiles makes d's disks from template t (a copy of its data disk, an
// overlay of its OS disk), writes its seed and defines its VM; undo gets
// a step back for each.
func (m *Manager) warmFiles(ctx context.Context, t *Template, d *desktop.Desktop, vm desktop.VMConfig, seed Seed, undo *reverter) error {
	dir := m.templateDir(t.Key)
	if err := m.disks.Copy(ctx, filepath.Join(dir, "data.qcow2"), d.DataDiskPath); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	undo.add(func(context.Context) { os.Remove(d.DataDiskPath) })
	if err := m.disks.CreateOverlay(ctx, filepath.Join(dir, "os.qcow2"), vm.OSDisk, m.cfg.OSDiskGiB); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	undo.add(func(context.Context) { os.Remove(vm.OSDisk) })
	if err := m.seeds.WriteSeed(ctx, vm.SeedISO, seed); err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	undo.add(func(context.Context) { os.Remove(vm.SeedISO); os.Remove(vm.SerialLog) })
	if err := m.hv.Define(ctx, vm); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { m.hv.Undefine(ctx, vm.Name) })
	return nil
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
