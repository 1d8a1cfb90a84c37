package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/placement"
)

// Placement keeps where desktops run: hosts' loads and desktops' moves
// between hosts.
type Placement struct{ *conn }

// loadColumns sum what live desktops take on a host, over rows of
// loadRows: how many, the memory of those holding RAM (not stopped,
// hibernated, crashed or failed), of those starting or arriving in a move
// (not yet in what the host reports), and how many are being created.
const loadColumns = `COUNT(*),
COALESCE(SUM(CASE WHEN state IN ('stopped','hibernated','crashed','error') THEN 0 ELSE memory_mib END),0),
COALESCE(SUM(CASE WHEN state IN ('creating','starting','resuming') OR arriving=1 THEN memory_mib ELSE 0 END),0),
COUNT(CASE WHEN state='creating' THEN 1 END)`

// loadRows are the live desktops by the host they take memory on: their
// own, and the one a running desktop is moving to (ReserveMove), where it
// counts as arriving.
const loadRows = `(SELECT host AS on_host, state, memory_mib, 0 AS arriving FROM desktops WHERE deleted_at IS NULL
UNION ALL
SELECT moving_to, state, memory_mib, 1 FROM desktops WHERE deleted_at IS NULL AND moving_to <> '') AS loads`

// HostLoads says what bureau's live desktops take on each host that has
// any.
func (s *Placement) HostLoads(ctx context.Context) (map[string]placement.Load, error) {
	rows, err := s.query(ctx, `SELECT on_host, `+loadColumns+` FROM `+loadRows+` GROUP BY on_host`)
	if err != nil {
		return nil, fmt.Errorf("host loads: %w", err)
	}
	defer rows.Close()
	out := map[string]placement.Load{}
	for rows.Next() {
		var host string
		var l placement.Load
		if err := rows.Scan(&host, &l.Desktops, &l.CommittedMiB, &l.PendingMiB, &l.Creating); err != nil {
			return nil, fmt.Errorf("host loads: %w", err)
		}
		out[host] = l
	}
	return out, rows.Err()
}

// hostLoad locks host's row until tx ends (PostgreSQL; SQLite's immediate
// transaction holds the whole database already) and says what its live
// desktops take: every create placing a desktop there waits for the one
// before to commit, and then counts it.
func (c *conn) hostLoad(ctx context.Context, tx *sql.Tx, host string) (placement.Load, error) {
	var l placement.Load
	lock := `SELECT name FROM hosts WHERE name=?`
	if c.postgres {
		lock += ` FOR UPDATE`
	}
	var name string
	err := c.txQueryRow(tx)(ctx, lock, host).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("host %s: %w", host, hosts.ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("lock host %s: %w", host, err)
	}
	err = c.txQueryRow(tx)(ctx, `SELECT `+loadColumns+` FROM `+loadRows+` WHERE on_host=?`, host).
		Scan(&l.Desktops, &l.CommittedMiB, &l.PendingMiB, &l.Creating)
	if err != nil {
		return l, fmt.Errorf("load of host %s: %w", host, err)
	}
	return l, nil
}

// MoveDesktop records that desktop id now runs on host with address ip
// (a migration finished, its reservation there ended); renew says its
// guest still holds its old host's address and asks for the new one after
// its next wake (RenewedAddress). An address another desktop has is
// ErrIdentityTaken.
func (s *Placement) MoveDesktop(ctx context.Context, id, host, ip string, renew bool) error {
	res, err := s.exec(ctx, `UPDATE desktops SET host=?, net_ip=?, renew_address=?, moving_to='', version=version+1 WHERE id=? AND deleted_at IS NULL`, host, ip, renew, id)
	if isUniqueViolation(err) {
		return fmt.Errorf("address %s: %w", ip, ErrIdentityTaken)
	}
	if err != nil {
		return fmt.Errorf("move desktop %s to host %s: %w", id, host, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	return nil
}

// RenewedAddress records that a moved desktop's guest asked its new host
// for its address.
func (s *Placement) RenewedAddress(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `UPDATE desktops SET renew_address=? WHERE id=?`, false, id); err != nil {
		return fmt.Errorf("desktop %s: %w", id, err)
	}
	return nil
}
