package manager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// CreateRequest asks for a new desktop.
type CreateRequest struct {
	Owner   string
	Name    string
	Spec    desktop.Spec
	SSHKeys []string
	Actor   string
	// IdleTimeout is the idle hibernation timeout in seconds; nil means
	// desktop.DefaultIdleTimeout, 0 never. NapAfter and SleepAfter are the
	// idle tiers before it; nil means the host's defaults, 0 skip.
	IdleTimeout, NapAfter, SleepAfter *int
	// From makes the desktop a clone of another desktop's snapshot.
	From *CloneSource
	// Restore fills its data disk from a backup (Backups.Restore).
	Restore *RestoreSource
	// Unlimited skips the owner's quota (admins).
	Unlimited bool
	// Cold boots the desktop even when a template for its image and size is
	// ready.
	Cold bool
	// Network is what the desktop may reach outside.
	Network desktop.NetworkPolicy
	// KeyboardLayout is the guest's XKB layout ("" = us).
	KeyboardLayout string
	// Host is the host to run it on ("" = bureau's own, or the one
	// placement chooses when it is on).
	Host string
	// PlaceLabels are labels the chosen host must carry (placement on,
	// no Host named).
	PlaceLabels map[string]string
}

// CloneSource names the snapshot a new desktop starts from.
type CloneSource struct {
	DesktopID string
	Snapshot  string
}

// clone is what build copies from when it makes a clone, or, for a
// restore, what fills its data disk (src and snap nil).
type clone struct {
	src  *desktop.Desktop
	snap *desktop.Snapshot
	fill func(ctx context.Context, path string) error
}

// Create records a new desktop in state creating and builds and boots it in
// the background (creator.Create).
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*desktop.Desktop, error) {
	return m.creator.Create(ctx, req)
}

// Create records a new desktop in state creating and builds and boots it in
// the background; it returns as soon as the intent is recorded.
func (c *creator) Create(ctx context.Context, req CreateRequest) (*desktop.Desktop, error) {
	if err := desktop.ValidateName(req.Name); err != nil {
		return nil, err
	}
	var cl *clone
	if req.From != nil {
		var err error
		if cl, err = c.clones.cloneSource(ctx, req); err != nil {
			return nil, err
		}
		req.Spec.Image = cl.src.Image
		// A clone's data disk is at least as large as its source's.
		req.Spec.DataDiskGiB = max(req.Spec.DataDiskGiB, cl.src.DataDiskGiB)
	}
	if req.Restore != nil {
		// A restore's disk is made here, on bureau's own host, and boots
		// cold: a warm spare brings a data disk of its own.
		cl = &clone{fill: req.Restore.Fill}
		req.Spec.DataDiskGiB = max(req.Spec.DataDiskGiB, req.Restore.DataDiskGiB)
		req.Cold = true
	}
	if err := req.Spec.Validate(); err != nil {
		return nil, err
	}
	// The host's idle tiers, then those the request names.
	tiers := desktop.Desktop{IdleTimeoutSeconds: desktop.DefaultIdleTimeout, NapAfterSeconds: c.napAfter, SleepAfterSeconds: c.sleepAfter}
	asked := IdleTiers{NapAfter: req.NapAfter, SleepAfter: req.SleepAfter, HibernateAfter: req.IdleTimeout}
	if err := asked.Check(tiers); err != nil {
		return nil, err
	}
	asked.Apply(&tiers)
	if err := req.Network.Validate(); err != nil {
		return nil, err
	}
	if req.KeyboardLayout == "" {
		req.KeyboardLayout = desktop.DefaultKeyboardLayout
	}
	if err := desktop.ValidateKeyboardLayout(req.KeyboardLayout); err != nil {
		return nil, err
	}
	if req.Spec.Image == "" {
		req.Spec.Image = c.defaultImage
	}
	img, err := c.store.GetImage(ctx, req.Spec.Image)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, &desktop.ValidationError{Field: "image", Message: fmt.Sprintf("no image named %q (see GET /api/v1/images)", req.Spec.Image)}
	}
	if err != nil {
		return nil, err
	}
	at, err := c.place.where(ctx, req, cl != nil, nil)
	if err != nil {
		return nil, err
	}
	// Refusals in the order a caller fixes them: the request, the name, the
	// owner's quota, then the host (these two as the desktop is recorded).
	if err := c.nameFree(ctx, req.Owner, req.Name); err != nil {
		return nil, err
	}
	var tmpl *Template
	if cl == nil && !req.Cold && img.RecipeHash != "" && at.host == desktop.LocalHost {
		tmpl = c.warm.ready(ctx, img.Name, req.Spec.VCPUs, req.Spec.MemoryMiB)
	}
	now := time.Now().UTC()
	id := newID()
	dir := desktopFolder(c.dataDir, id)
	through, err := desktop.Begin(desktop.OpCreate, desktop.StateNone)
	if err != nil {
		return nil, err
	}
	d := &desktop.Desktop{
		ID: id, Owner: req.Owner, Name: req.Name, Spec: req.Spec,
		State: through, DesiredState: desktop.Target(desktop.OpCreate), Operation: string(desktop.OpCreate), OperationStartedAt: &now,
		Accelerator: string(at.accel), Dir: dir, DataDiskPath: filepath.Join(dir, "data.qcow2"),
		IdleTimeoutSeconds: tiers.IdleTimeoutSeconds, NapAfterSeconds: tiers.NapAfterSeconds, SleepAfterSeconds: tiers.SleepAfterSeconds, CreatedAt: now, UpdatedAt: now,
		Network: req.Network, KeyboardLayout: req.KeyboardLayout, Host: at.host,
	}
	ctx, cancel := c.ops.detach(ctx)
	defer cancel()
	fresh := *d
	sp, err := c.lockAndRecord(ctx, d, req.Unlimited, tmpl)
	// A host placement chose may fill up before the desktop is recorded
	// there (other creates took the room): the next best is tried.
	for skip := map[string]string{}; err != nil && at.placed; {
		full, ok := fullHost(err)
		if !ok {
			break
		}
		skip[full.host] = full.why.Error()
		if at, err = c.place.where(ctx, req, false, skip); err != nil {
			return nil, err
		}
		// As it came: a spare it took went back with its identity.
		*d, tmpl = fresh, nil
		d.Host, d.Accelerator = at.host, string(at.accel)
		sp, err = c.lockAndRecord(ctx, d, req.Unlimited, nil)
	}
	if err != nil {
		return nil, err
	}
	id = d.ID
	if err := c.net.armNetwork(ctx, d, sp != nil); err != nil {
		c.ops.fail(ctx, d, "create", err)
		c.ops.unlock(id)
		return nil, err
	}
	c.ops.event(ctx, id, "create_requested", req.Actor, "create %s requested: %d vCPU, %d MiB, %d GiB data disk, image %s, %s, on host %s%s",
		d.Name, d.VCPUs, d.MemoryMiB, d.DataDiskGiB, d.Image, d.Accelerator, d.Host, placedWhy(at, req.PlaceLabels))
	cp := *d
	seed := Seed{DesktopID: id, Hostname: d.Name, SSHKeys: req.SSHKeys, InstallDesktop: img.RecipeHash == "", KeyboardLayout: d.KeyboardLayout}
	if cl != nil && cl.src != nil {
		c.ops.event(ctx, id, "clone_requested", req.Actor, "cloned from snapshot %q (scope %s) of desktop %s",
			cl.snap.Name, cl.snap.Scope, cl.src.Name)
	}
	c.ops.background(id, func(ctx context.Context) { c.build(ctx, &cp, img.Path, seed, cl, tmpl, sp != nil) })
	return d, nil
}

// build makes the desktop's files and VM and boots it. Whatever it made is
// removed again if a step fails, except a data disk that existed before.
func (c *creator) build(ctx context.Context, d *desktop.Desktop, basePath string, seed Seed, cl *clone, tmpl *Template, fromSpare bool) {
	var undo reverter
	var warm warmTimes
	start := time.Now()
	err := func() error {
		// A remote host gets its base image first; warm templates, spares
		// and clones are bureau's own host's.
		if d.Remote() {
			return c.buildRemote(ctx, d, basePath, seed, &undo)
		}
		// The folder is bureau's until the VM starts: starting it gives
		// the folder and disks to the desktop's QEMU user.
		if err := c.local.MkdirAll(ctx, d.Dir, 0o700); err != nil {
			return fmt.Errorf("create desktop folder: %w", err)
		}
		if fromSpare {
			// Deferred first, so it runs last: the next spare is made
			// once the CPU hold below is released, not racing it.
			defer c.warm.fill(tmpl.Key)
		}
		if tmpl != nil {
			defer c.warm.holdCPU()()
		}
		if fromSpare {
			defer c.warm.renameAddress(d)
			// Everything in the folder is the spare's, its data disk too;
			// on failure it all goes.
			undo.add(func(ctx context.Context) {
				c.vms.Undefine(ctx, d.DomainName())
				c.local.RemoveAllBut(ctx, d.Dir, "")
			})
			return c.warm.fromSpare(ctx, d, seed, &warm)
		}
		if tmpl != nil {
			return c.warm.fromTemplate(ctx, d, tmpl, seed, &undo, &warm)
		}
		c.ops.step(ctx, d, "disks")
		if ok, err := c.local.Exists(ctx, d.DataDiskPath); err != nil {
			return fmt.Errorf("data disk: %w", err)
		} else if !ok {
			if err := c.clones.makeDataDisk(ctx, d, cl); err != nil {
				return fmt.Errorf("data disk: %w", err)
			}
			// A data disk made by this create holds nothing of the user's yet.
			undo.add(func(ctx context.Context) { c.local.Remove(ctx, d.DataDiskPath) })
		}
		c.ops.failpoint("create:after-data-disk")
		vm := c.defs.VMConfig(d, newUUID())
		if err := c.clones.makeOSDisk(ctx, vm.OSDisk, basePath, cl); err != nil {
			return fmt.Errorf("OS disk: %w", err)
		}
		c.ops.failpoint("create:after-os-disk")
		if err := c.seeds.WriteSeed(ctx, vm.SeedISO, seed); err != nil {
			return fmt.Errorf("cloud-init seed: %w", err)
		}
		c.ops.step(ctx, d, "define")
		if err := c.vms.Define(ctx, vm); err != nil {
			return err
		}
		undo.add(func(ctx context.Context) { c.vms.Undefine(ctx, vm.Name) })
		c.ops.failpoint("create:after-define")
		c.ops.step(ctx, d, "start")
		if err := c.vms.Start(ctx, vm.Name); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		return nil
	}()
	if err != nil {
		// The undo list removes what outlives the folder's clean-up (the
		// VM's definition, a data disk this create made); removeFailed
		// then removes every other file it left (disks, seed, logs).
		cleanup, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.vms.Destroy(cleanup, d.DomainName())
		undo.run(cleanup)
		c.removeFailed(cleanup, d)
		c.ops.fail(cleanup, d, "create", err)
		c.ops.observe("create", start, err)
		return
	}
	c.ops.failpoint("create:after-start")
	c.ops.end(ctx, d, desktop.OpCreate, true, "", "")
	c.ops.observe("create", start, nil)
	took := time.Since(start).Round(time.Millisecond).String()
	how := "created and started"
	if tmpl != nil {
		how, took = "created from the warm template "+tmpl.Key+" and running", took+" ("+warm.String()+")"
	}
	c.ops.event(ctx, d.ID, "created", "bureau", "desktop %s %s in %s", d.Name, how, took)
}

// lockAndRecord takes a ready spare of tmpl for d when there is one (d
// then gets the spare's id and folder), locks d and records it; it returns
// the spare taken. A spare that cannot become d goes back or, when its QEMU
// user or address clashes with another desktop's, is removed and d is
// recorded as it came.
func (c *creator) lockAndRecord(ctx context.Context, d *desktop.Desktop, unlimited bool, tmpl *Template) (*spare, error) {
	own := *d
	sp := c.warm.take(ctx, tmpl, d)
	if err := c.ops.lock(d.ID, "create"); err != nil {
		if sp != nil {
			c.warm.giveBack(ctx, sp, err)
		}
		return nil, err
	}
	err := c.recordWithIdentity(ctx, d, unlimited, sp != nil)
	if err == nil {
		if sp != nil {
			c.warm.claim(ctx, d)
		}
		return sp, nil
	}
	c.ops.unlock(d.ID)
	if sp == nil {
		return nil, err
	}
	c.warm.giveBack(ctx, sp, err)
	if !errors.Is(err, errSpareClash) {
		return nil, err
	}
	*d = own
	return c.lockAndRecord(ctx, d, unlimited, nil)
}

// recordWithIdentity records a new desktop with a QEMU user and address of
// its own. Both are drawn at random; when the store's unique indexes say
// another desktop has one (the name itself being free), new ones are drawn.
//
// A desktop taking a spare keeps the spare's (its VM already runs as that
// user); when another desktop has either, errSpareClash says so.
func (c *creator) recordWithIdentity(ctx context.Context, d *desktop.Desktop, unlimited, spare bool) error {
	subnet, err := c.net.subnetOf(ctx, d)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		if !spare {
			d.VMUID, d.NetIP = newVMUID(), netIPOn(subnet)
		}
		err := c.quota.recordNew(ctx, d, unlimited, spare)
		if !errors.Is(err, desktop.ErrNameTaken) || try == 4 {
			return err
		}
		if nerr := c.nameFree(ctx, d.Owner, d.Name); nerr != nil {
			return nerr
		}
		if spare {
			return errSpareClash
		}
	}
}

// errSpareClash: a spare's QEMU user or address is another desktop's.
var errSpareClash = errors.New("the spare's QEMU user or address is taken")

// nameFree refuses a name the owner already uses for a live desktop (the
// store's unique index is the final word when two creates race).
func (c *creator) nameFree(ctx context.Context, owner, name string) error {
	ds, err := c.store.ListDesktops(ctx, desktop.Filter{Owner: owner})
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.Name == name {
			return fmt.Errorf("desktop %q: %w", name, desktop.ErrNameTaken)
		}
	}
	return nil
}

// resumeCreate finishes (or fails, with the reason) a create a restart cut
// short; the caller holds the desktop. A warm create is only finished by
// applying the desktop's own identity: a guest restored from a template is
// never left running as the template.
func (c *creator) resumeCreate(ctx context.Context, d *desktop.Desktop, vm desktop.VMState) {
	warm := strings.HasPrefix(d.Step, "warm-")
	running := vm == desktop.VMRunning || vm == desktop.VMPaused || vm == desktop.VMShutdown
	if warm && running {
		c.ops.event(ctx, d.ID, "reconciled", "bureau", "applying the desktop's own identity: a restart cut its warm create short after its RAM was restored")
		cp := *d
		c.ops.background(d.ID, func(ctx context.Context) {
			if vm == desktop.VMPaused {
				c.vms.Resume(ctx, cp.DomainName())
			}
			if err := c.net.applyIdentity(ctx, &cp); err != nil {
				c.vms.Destroy(ctx, cp.DomainName())
				c.ops.fail(ctx, &cp, "create", fmt.Errorf("interrupted by a bureau restart, and then %w; the VM was stopped so it never runs as the template: delete the desktop and create it again", err))
				return
			}
			c.created(ctx, &cp, "from a warm template, finished after a bureau restart")
		})
		return
	}
	defer c.ops.unlock(d.ID)
	switch {
	case warm:
		if vm != desktop.VMMissing {
			c.vms.Destroy(ctx, d.DomainName())
		}
		c.ops.fail(ctx, d, "create", errors.New("interrupted by a bureau restart before the desktop had its own identity; it was not started, as it would run as the template: delete it and create it again"))
	case vm == desktop.VMMissing:
		// The VM never got defined: the files made so far stay (the data
		// disk may be reused), the desktop says what happened.
		c.ops.fail(ctx, d, "create", errors.New("interrupted by a bureau restart before the VM was defined"))
	case vm == desktop.VMShutoff:
		// Everything was made: finish the create by starting the VM.
		if err := c.vms.Start(ctx, d.DomainName()); err != nil {
			c.ops.fail(ctx, d, "create", fmt.Errorf("interrupted by a bureau restart before the VM started, and starting it failed: %w", err))
			return
		}
		c.created(ctx, d, "and started, finished after a bureau restart")
	case running:
		c.created(ctx, d, "and started, finished after a bureau restart")
	default:
		c.ops.fail(ctx, d, "create", fmt.Errorf("interrupted by a bureau restart; the VM was found %s", vm))
	}
}

// created records a finished create.
func (c *creator) created(ctx context.Context, d *desktop.Desktop, how string) {
	c.ops.end(ctx, d, desktop.OpCreate, true, "", "")
	c.ops.event(ctx, d.ID, "created", "bureau", "desktop %s created %s", d.Name, how)
}
