package manager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bureau/bureau/internal/desktop"
)

// cloneSource checks a clone request's source desktop and snapshot.
func (m *Manager) cloneSource(ctx context.Context, req CreateRequest) (*clone, error) {
	src, err := m.ops.live(ctx, req.From.DesktopID)
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
	snap, err := m.store.GetSnapshot(ctx, src.ID, req.From.Snapshot)
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
func (m *Manager) makeDataDisk(ctx context.Context, d *desktop.Desktop, cl *clone) error {
	if cl == nil || cl.snap.Scope == desktop.ScopeOS {
		return m.disks.CreateDataDisk(ctx, d.DataDiskPath, d.DataDiskGiB)
	}
	if err := m.disks.CopySnapshot(ctx, cl.src.DataDiskPath, cl.snap.Name, d.DataDiskPath, ""); err != nil {
		return err
	}
	if d.DataDiskGiB > cl.src.DataDiskGiB {
		return m.disks.Resize(ctx, d.DataDiskPath, d.DataDiskGiB)
	}
	return nil
}

// makeOSDisk creates a desktop's OS disk: a fresh overlay of the image, or
// for a clone an overlay holding what the source's OS disk had changed at
// the snapshot. Cloud-init gives the clone its own identity at first boot
// (new instance: hostname, SSH host keys, machine id).
func (m *Manager) makeOSDisk(ctx context.Context, path, base string, cl *clone) error {
	if cl == nil || cl.snap.Scope == desktop.ScopeData {
		return m.disks.CreateOverlay(ctx, base, path, m.cfg.OSDiskGiB)
	}
	return m.disks.CopySnapshot(ctx, filepath.Join(cl.src.Dir, "os.qcow2"), cl.snap.Name, path, base)
}
