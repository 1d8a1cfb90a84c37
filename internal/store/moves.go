package store

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// ReserveMove records that desktop id, running, is moving to host to, if
// fits (when given) allows it there with what that host's desktops take at
// that moment: the host's row stays locked until the record commits, as
// for a create (CreateDesktopChecked), so creates and moves to one host
// never overfill it together. From then until MoveDesktop or EndMove the
// desktop's memory counts on both hosts (HostLoads).
func (s *Placement) ReserveMove(ctx context.Context, id, to string, fits func(placement.Load) error) error {
	tx, err := s.beginLocking(ctx) // the host's row lock, as checked's owner lock
	if err != nil {
		return fmt.Errorf("begin move reservation: %w", err)
	}
	defer tx.Rollback()
	if fits != nil {
		l, err := s.hostLoad(ctx, tx, to)
		if err != nil {
			return err
		}
		if err := fits(l); err != nil {
			return err
		}
	}
	res, err := s.txExec(tx)(ctx, `UPDATE desktops SET moving_to=? WHERE id=? AND deleted_at IS NULL`, to, id)
	if err != nil {
		return fmt.Errorf("reserve desktop %s's move to host %s: %w", id, to, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit move reservation: %w", err)
	}
	return nil
}

// EndMove ends desktop id's move reservation (ReserveMove), if any: its
// move failed, was cancelled, or was settled after a restart.
func (s *Placement) EndMove(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `UPDATE desktops SET moving_to='' WHERE id=? AND moving_to <> ''`, id); err != nil {
		return fmt.Errorf("end desktop %s's move reservation: %w", id, err)
	}
	return nil
}
