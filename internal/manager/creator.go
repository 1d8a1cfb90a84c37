package manager

import (
	"context"
	"io/fs"
	"net/netip"

	"github.com/bureau/bureau/internal/desktop"
)

// creator makes new desktops: it records one where placement puts it,
// within its owner's quota and with an identity of its own, then builds it
// in the background: cold from an image or a clone's snapshot, warm from a
// template or a spare (template.go, spares.go), or on a remote host
// (remote.go). It holds the operation core and what creates need beside
// it, each by the role it plays here.
type creator struct {
	ops    *runner
	store  createStore
	vms    createVMs
	local  createFiles
	seeds  SeedWriter
	hosts  createHosts
	place  hostChooser
	quota  newRecords
	net    newIdentity
	clones cloneDisks
	warm   warmCreates
	defs   vmConfigs
	// From Config: new desktops' idle tiers (NapAfter, SleepAfter), the
	// image of a create that names none (DefaultImage), where desktops'
	// folders are (DataDir) and an OS disk's size (OSDiskGiB).
	napAfter, sleepAfter int
	defaultImage         string
	dataDir              string
	osDiskGiB            int
}

// createStore reads a create's image, and the owner's desktops whose
// names it may not take.
type createStore interface {
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// createVMs defines and starts a new desktop's VM, and removes it again
// when the create fails.
type createVMs interface {
	Define(ctx context.Context, c desktop.VMConfig) error
	Undefine(ctx context.Context, name string) error
	Start(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
}

// createFiles makes a new desktop's folder on bureau's own host and
// removes what a failed create made there.
type createFiles interface {
	MkdirAll(ctx context.Context, dir string, mode fs.FileMode) error
	Exists(ctx context.Context, path string) (bool, error)
	Remove(ctx context.Context, path string) error
	RemoveAllBut(ctx context.Context, dir, keep string) (kept bool, err error)
}

// createHosts reaches a new desktop's files on its host, and sends its
// base image and seed to a remote one (desktopHosts).
type createHosts interface {
	filesOf(ctx context.Context, d *desktop.Desktop) (desktopFiles, error)
	imageOn(ctx context.Context, files HostFiles, d *desktop.Desktop, host, path string, label func(step string) string) error
	uploadSeed(ctx context.Context, files HostFiles, path string, seed Seed, uid, gid int) error
}

// hostChooser decides the host a create runs on (placer.where, place.go).
type hostChooser interface {
	where(ctx context.Context, req CreateRequest, clone bool, skip map[string]string) (spot, error)
}

// newRecords records a new desktop if its owner's quota and its host have
// room for it (quotas.recordNew, quota.go).
type newRecords interface {
	recordNew(ctx context.Context, d *desktop.Desktop, unlimited, memHeld bool) error
}

// newIdentity gives a new desktop its address, rules and, restored from a
// template, its own identity in the guest (identities).
type newIdentity interface {
	subnetOf(ctx context.Context, d *desktop.Desktop) (netip.Prefix, error)
	armNetwork(ctx context.Context, d *desktop.Desktop, reserved bool) error
	applyIdentity(ctx context.Context, d *desktop.Desktop) error
}

// cloneDisks checks a clone's source and makes a new desktop's disks,
// copied from it for a clone (diskMaker, clone.go).
type cloneDisks interface {
	cloneSource(ctx context.Context, req CreateRequest) (*clone, error)
	makeDataDisk(ctx context.Context, d *desktop.Desktop, cl *clone) error
	makeOSDisk(ctx context.Context, path, base string, cl *clone) error
}

// warmCreates is what a warm create takes from the warm pool: a ready
// template, a spare of it (taken, given back or claimed), the desktop made
// from either, and the CPU held meanwhile (WarmPool).
type warmCreates interface {
	ready(ctx context.Context, image string, vcpus, mem int) *Template
	take(ctx context.Context, t *Template, d *desktop.Desktop) *spare
	giveBack(ctx context.Context, sp *spare, why error)
	claim(ctx context.Context, d *desktop.Desktop)
	fromSpare(ctx context.Context, d *desktop.Desktop, seed Seed, took *warmTimes) error
	fromTemplate(ctx context.Context, d *desktop.Desktop, t *Template, seed Seed, undo *reverter, took *warmTimes) error
	renameAddress(d *desktop.Desktop)
	fill(key string)
	holdCPU() (release func())
}
