package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// The Checked methods below add to what an owner uses only if admit, given
// the owner's own quota (nil when it has none) and its usage at that
// moment, returns nil; its error is returned unchanged. The store provides
// only the atomicity: the quota rule is the caller's. Checking and writing
// are one transaction during which no other Checked write for the same
// owner can run, so concurrent requests cannot together pass a limit that
// each alone would fit. admit must not use the store (on SQLite the
// transaction holds its only connection).

// CreateDesktopChecked inserts d, as CreateDesktop does, if admit allows
// and then, when given, fits allows it on d.Host with what that host's
// desktops take at that moment: the host's row stays locked until the
// insert commits, so creates placed on one host never overfill it
// together.
func (s *Quotas) CreateDesktopChecked(ctx context.Context, d *desktop.Desktop, admit func(*desktop.Quota, desktop.Usage) error, fits func(placement.Load) error) error {
	return s.checked(ctx, d.Owner, admit, func(tx *sql.Tx) error {
		if fits != nil {
			l, err := s.hostLoad(ctx, tx, d.Host)
			if err != nil {
				return err
			}
			if err := fits(l); err != nil {
				return err
			}
		}
		return insertDesktop(ctx, s.txExec(tx), d)
	})
}

// GrowDataDiskChecked records desktop id's data disk (of owner) as
// sizeGiB, if admit allows, before the disk grows: the space is held while
// it is being taken.
func (s *Quotas) GrowDataDiskChecked(ctx context.Context, id, owner string, sizeGiB int, admit func(*desktop.Quota, desktop.Usage) error) error {
	return s.checked(ctx, owner, admit, func(tx *sql.Tx) error {
		res, err := s.txExec(tx)(ctx, `UPDATE desktops SET data_disk_gib=?, updated_at=? WHERE id=? AND owner=? AND deleted_at IS NULL`,
			sizeGiB, millis(time.Now()), id, owner)
		if err != nil {
			return fmt.Errorf("update desktop %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
		}
		return nil
	})
}

// CreateSnapshotChecked records sn, a snapshot of a desktop of owner, as
// CreateSnapshot does, if admit allows. sn.SizeBytes, the space it is
// expected to take, counts against later checks until SetSnapshotSize
// records what it took.
func (s *Quotas) CreateSnapshotChecked(ctx context.Context, sn *desktop.Snapshot, owner string, admit func(*desktop.Quota, desktop.Usage) error) error {
	return s.checked(ctx, owner, admit, func(tx *sql.Tx) error {
		return insertSnapshot(ctx, s.txExec(tx), sn)
	})
}

// checked runs admit and then write in one transaction that excludes every
// other checked transaction of the same owner.
//
// SQLite: Open sets _txlock=immediate, so modernc's driver starts every
// read-write transaction with BEGIN IMMEDIATE, which takes the database's
// write lock at once (waiting up to busy_timeout): no other writer, in this
// process or another, can commit between the usage read and the write. A
// deferred BEGIN would read first and, when another writer committed
// meanwhile, fail with SQLITE_BUSY at its write instead of waiting. Open's
// single connection serializes this process's transactions as well.
//
// PostgreSQL: a transaction-scoped advisory lock on the owner, taken
// first, queues every checked transaction of that owner; it works whether
// or not the owner has a quota row (SELECT … FOR UPDATE on that row would
// lock nothing for owners on the default plan). READ COMMITTED is required:
// each later statement sees what the previous holder committed before it
// released the lock, where REPEATABLE READ would keep the snapshot taken
// before the lock was granted. Another owner whose name hashes alike only
// waits a moment longer.
func (s *Quotas) checked(ctx context.Context, owner string, admit func(*desktop.Quota, desktop.Usage) error, write func(*sql.Tx) error) error {
	tx, err := s.beginLocking(ctx)
	if err != nil {
		return fmt.Errorf("begin quota check: %w", err)
	}
	defer tx.Rollback()
	if s.postgres {
		if _, err := s.txExec(tx)(ctx, `SELECT pg_advisory_xact_lock(hashtext('bureau.quota'), hashtext(?))`, owner); err != nil {
			return fmt.Errorf("lock quota of %s: %w", owner, err)
		}
	}
	q, err := s.getQuota(ctx, s.txQueryRow(tx), owner)
	if errors.Is(err, errNotFound) {
		q, err = nil, nil
	}
	if err != nil {
		return err
	}
	u, err := s.usage(ctx, s.txQueryRow(tx), owner)
	if err != nil {
		return err
	}
	if err := admit(q, u); err != nil {
		return err
	}
	if err := write(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit quota check: %w", err)
	}
	return nil
}
