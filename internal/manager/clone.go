package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// diskMaker makes a clone's disks from its source's snapshot (clone.go),
// gives a desktop a fresh OS disk (Reimage) and grows its data disk
// (ResizeDataDisk, reimage.go). It holds the operation core and what those
// need beside it, each by the role it plays here.
type diskMaker struct {
	ops   *runner
	store diskStore
	disks imageDisks
	local osDiskFiles
	seeds SeedWriter
	hosts reimageHosts
	vms   diskVMs
	power powerSwitch
	snaps snapshotDropper
	quota dataDiskQuota
	defs  vmConfigs
	log   *slog.Logger
	// From Config: an OS disk's size (OSDiskGiB), and how long a guest may
	// take to shut down before a reimage forces it off (StopTimeout).
	osDiskGiB   int
	stopTimeout time.Duration
}

// diskStore reads a clone's snapshot and a reimage's image, and forgets
// the snapshots a reimage deletes.
type diskStore interface {
	GetSnapshot(ctx context.Context, desktopID, name string) (*desktop.Snapshot, error)
	ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error)
	DeleteSnapshot(ctx context.Context, id string) error
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
}

// imageDisks makes disk files on bureau's own host (qemu-img): overlays of
// an image, empty data disks, copies of a disk at a snapshot, and bigger
// ones.
type imageDisks interface {
	CreateOverlay(ctx context.Context, base, path string, sizeGiB int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB int) error
	CopySnapshot(ctx context.Context, src, name, dst, backing string) error
	Resize(ctx context.Context, path string, sizeGiB int) error
}

// osDiskFiles swaps a reimage's new OS disk in on bureau's own host.
type osDiskFiles interface {
	Remove(ctx context.Context, path string) error
	Rename(ctx context.Context, from, to string) error
}

// reimageHosts reaches a desktop's files on whichever host they are, and
// sends an image and a seed there (desktopHosts).
type reimageHosts interface {
	diskHosts
	imageOn(ctx context.Context, files HostFiles, d *desktop.Desktop, host, path string, label func(step string) string) error
	uploadSeed(ctx context.Context, files HostFiles, path string, seed Seed, uid, gid int) error
}

// diskVMs starts a reimaged VM, and grows a running one's data disk and
// its filesystem in the guest.
type diskVMs interface {
	Start(ctx context.Context, name string) error
	ResizeDisk(ctx context.Context, name, file string, bytes int64) error
	guestExec
}

// snapshotDropper deletes a snapshot from a desktop's disks
// (Snapshots.drop).
type snapshotDropper interface {
	drop(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot) error
}

// dataDiskQuota records a data disk's new size if its owner's quota has
// room for it (quotas.reserveDataDisk, quota.go).
type dataDiskQuota interface {
	reserveDataDisk(ctx context.Context, d *desktop.Desktop, sizeGiB int, unlimited bool) error
}

// cloneSource checks a clone request's source desktop and snapshot.
func (dm *diskMaker) cloneSource(ctx context.Context, req CreateRequest) (*clone, error) {
	src, err := dm.ops.live(ctx, req.From.DesktopID)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, &desktop.ValidationError{Field: "from.desktop", Message: fmt.Sprintf("no desktop %q", req.From.DesktopID)}
	}
	if err != nil {
		return nil, err
	}
	// A clone's disks are copied from the source's with qemu-img, here.
	if err := localOnly(src, "a clone of its snapshots (move it to host "+desktop.LocalHost+" first)"); err != nil {
		return nil, err
	}
	snap, err := dm.store.GetSnapshot(ctx, src.ID, req.From.Snapshot)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, &desktop.ValidationError{Field: "from.snapshot", Message: fmt.Sprintf("desktop %s has no snapshot %q", src.Name, req.From.Snapshot)}
	}
	if err != nil {
		return nil, err
	}
	if req.Spec.Image != "" && req.Spec.Image != src.Image {
		return nil, &desktop.ValidationError{Field: "image", Message: fmt.Sprintf("a clone uses its source's image %q", src.Image)}
	}
	return &clone{src: src, snap: snap}, nil
}

// makeDataDisk creates a desktop's data disk: empty, or for a clone a copy
// of the source's data disk at the snapshot (grown to the requested size).
func (dm *diskMaker) makeDataDisk(ctx context.Context, d *desktop.Desktop, cl *clone) error {
	if cl != nil && cl.fill != nil {
		return cl.fill(ctx, d.DataDiskPath)
	}
	if cl == nil || cl.snap.Scope == desktop.ScopeOS {
		return dm.disks.CreateDataDisk(ctx, d.DataDiskPath, d.DataDiskGiB)
	}
	if err := dm.disks.CopySnapshot(ctx, cl.src.DataDiskPath, cl.snap.Name, d.DataDiskPath, ""); err != nil {
		return err
	}
	if d.DataDiskGiB > cl.src.DataDiskGiB {
		return dm.disks.Resize(ctx, d.DataDiskPath, d.DataDiskGiB)
	}
	return nil
}

// makeOSDisk creates a desktop's OS disk: a fresh overlay of the image, or
// for a clone an overlay holding what the source's OS disk had changed at
// the snapshot. Cloud-init gives the clone its own identity at first boot
// (new instance: hostname, SSH host keys, machine id).
func (dm *diskMaker) makeOSDisk(ctx context.Context, path, base string, cl *clone) error {
	if cl == nil || cl.snap == nil || cl.snap.Scope == desktop.ScopeData {
		return dm.disks.CreateOverlay(ctx, base, path, dm.osDiskGiB)
	}
	return dm.disks.CopySnapshot(ctx, filepath.Join(cl.src.Dir, "os.qcow2"), cl.snap.Name, path, base)
}
