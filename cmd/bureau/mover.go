package main

import (
	"context"

	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/moves"
	"github.com/bureau/bureau/internal/manager"
)

// mover moves desktops' VMs between hosts: live with the hypervisor's
// migration, cold by copying their files through the hosts' storage pools.
type mover struct{ h *hv.Hypervisor }

func (mv mover) Migrate(ctx context.Context, name string, dest manager.Destination, progress func(manager.MoveProgress)) (*manager.MoveResult, error) {
	res, err := mv.h.Migrate(ctx, name, moves.MigrateOptions{To: dest.Host, Address: dest.Address, Tap: dest.Tap,
		Progress: func(p moves.MigrateProgress) {
			pct := 0
			if p.DataTotal > 0 {
				pct = int(min(p.DataProcessed*100/p.DataTotal, 100))
			}
			progress(manager.MoveProgress{Phase: p.Phase, Percent: pct, Iteration: p.MemIteration})
		}})
	if err != nil {
		return nil, err
	}
	return &manager.MoveResult{Took: res.Took, Downtime: res.Downtime, Bytes: res.DataBytes}, nil
}

func (mv mover) DiskSizes(ctx context.Context, name string) (map[string]int64, error) {
	return mv.h.DiskSizes(ctx, name)
}

func (mv mover) BounceLink(ctx context.Context, name string) error { return mv.h.BounceLink(ctx, name) }

func (mv mover) CopyFile(ctx context.Context, from, to, path string, uid, gid int, progress func(done, total int64)) error {
	return mv.h.CopyFile(ctx, from, to, path, uid, gid, progress)
}

func (mv mover) DefineOn(ctx context.Context, name, from, to, tap string, progress func(done, total int64)) error {
	return mv.h.DefineOn(ctx, name, from, to, tap, progress)
}

func (mv mover) UndefineOn(ctx context.Context, name, host string) error {
	return mv.h.UndefineOn(ctx, name, host)
}
