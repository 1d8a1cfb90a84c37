package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Desktops keeps the desktops themselves: their settings, state and VM
// identity.
type Desktops struct{ *conn }

var errNotFound = desktop.ErrNotFound

const desktopCols = `id, owner, name, image, vcpus, memory_mib, data_disk_gib, state, desired_state,
operation, last_error, accelerator, dir, data_disk_path, created_at, updated_at, deleted_at, idle_timeout_s, restart_on_crash, network_policy, vm_uid, net_ip, version, op_step, keyboard_layout, op_started_at, nap_after_s, sleep_after_s, host, renew_address`

// CreateDesktop inserts d; a name already used by a live desktop of the same
// owner is desktop.ErrNameTaken.
func (s *Desktops) CreateDesktop(ctx context.Context, d *desktop.Desktop) error {
	return insertDesktop(ctx, s.exec, d)
}

func insertDesktop(ctx context.Context, exec execFunc, d *desktop.Desktop) error {
	_, err := exec(ctx, `INSERT INTO desktops (`+desktopCols+`)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		d.ID, d.Owner, d.Name, d.Image, d.VCPUs, d.MemoryMiB, d.DataDiskGiB, string(d.State), string(d.DesiredState),
		d.Operation, d.LastError, d.Accelerator, d.Dir, d.DataDiskPath, millis(d.CreatedAt), millis(d.UpdatedAt), nullMillis(d.DeletedAt),
		d.IdleTimeoutSeconds, d.RestartOnCrash, policyJSON(d.Network), d.VMUID, d.NetIP, d.Version, d.Step, layoutOrDefault(d.KeyboardLayout), nullMillis(d.OperationStartedAt),
		d.NapAfterSeconds, d.SleepAfterSeconds, hostOrLocal(d.Host), d.RenewAddress)
	if isUniqueViolation(err) {
		return fmt.Errorf("desktop %q: %w", d.Name, desktop.ErrNameTaken)
	}
	if err != nil {
		return fmt.Errorf("insert desktop: %w", err)
	}
	return nil
}

// UpdateDesktop writes d's state and stamps UpdatedAt: every mutable field
// but its settings (idle timeout, restart policy), which only
// UpdateDesktopSettings writes, so an operation saving the copy it began
// with never undoes a setting changed meanwhile, nor the other way round.
func (s *Desktops) UpdateDesktop(ctx context.Context, d *desktop.Desktop) error {
	updated := time.Now().UTC()
	res, err := s.exec(ctx, `UPDATE desktops SET image=?, vcpus=?, memory_mib=?, data_disk_gib=?, state=?, desired_state=?,
operation=?, op_step=?, op_started_at=?, last_error=?, accelerator=?, data_disk_path=?, updated_at=?, deleted_at=?, version=version+1
WHERE id=? AND version=?`,
		d.Image, d.VCPUs, d.MemoryMiB, d.DataDiskGiB, string(d.State), string(d.DesiredState),
		d.Operation, d.Step, nullMillis(d.OperationStartedAt), d.LastError, d.Accelerator, d.DataDiskPath, millis(updated), nullMillis(d.DeletedAt), d.ID, d.Version)
	if err != nil {
		return fmt.Errorf("update desktop %s: %w", d.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		cur, gerr := s.GetDesktop(ctx, d.ID)
		if gerr != nil {
			return gerr
		}
		return fmt.Errorf("desktop %s: wrote from version %d, the store has %d (%s): %w", d.ID, d.Version, cur.Version, cur.State, desktop.ErrConflict)
	}
	d.UpdatedAt = updated
	d.Version++
	return nil
}

// UpdateDesktopSettings writes only d's idle tiers and timeout, restart
// policy, network policy and keyboard layout.
func (s *Desktops) UpdateDesktopSettings(ctx context.Context, d *desktop.Desktop) error {
	res, err := s.exec(ctx, `UPDATE desktops SET idle_timeout_s=?, nap_after_s=?, sleep_after_s=?, restart_on_crash=?, network_policy=?, keyboard_layout=? WHERE id=?`,
		d.IdleTimeoutSeconds, d.NapAfterSeconds, d.SleepAfterSeconds, d.RestartOnCrash, policyJSON(d.Network), layoutOrDefault(d.KeyboardLayout), d.ID)
	if err != nil {
		return fmt.Errorf("update settings of desktop %s: %w", d.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("desktop %s: %w", d.ID, desktop.ErrNotFound)
	}
	return nil
}

// GetDesktop returns a desktop by id, deleted ones included.
func (s *Desktops) GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error) {
	d, err := scanDesktop(s.queryRow(ctx, `SELECT `+desktopCols+` FROM desktops WHERE id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("desktop %s: %w", id, notFound(err))
	}
	return d, nil
}

// ListDesktops returns desktops ordered by creation time.
func (s *Desktops) ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error) {
	query := `SELECT ` + desktopCols + ` FROM desktops WHERE 1=1`
	var args []any
	if f.Owner != "" {
		query += ` AND owner=?`
		args = append(args, f.Owner)
	}
	if f.Host != "" {
		query += ` AND host=?`
		args = append(args, f.Host)
	}
	if !f.IncludeDeleted {
		query += ` AND deleted_at IS NULL`
	}
	rows, err := s.query(ctx, query+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list desktops: %w", err)
	}
	defer rows.Close()
	var out []*desktop.Desktop
	for rows.Next() {
		d, err := scanDesktop(rows)
		if err != nil {
			return nil, fmt.Errorf("list desktops: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// SetVMIdentity gives a desktop made before bureau isolated desktops its
// QEMU user and network address, each only if it has none yet; one another
// desktop has is ErrIdentityTaken (draw another).
func (s *Desktops) SetVMIdentity(ctx context.Context, id string, uid int, ip string) error {
	_, err := s.exec(ctx, `UPDATE desktops SET vm_uid=CASE WHEN vm_uid=0 THEN ? ELSE vm_uid END,
net_ip=CASE WHEN net_ip='' THEN ? ELSE net_ip END WHERE id=?`, uid, ip, id)
	if isUniqueViolation(err) {
		return fmt.Errorf("uid %d or address %s: %w", uid, ip, ErrIdentityTaken)
	}
	if err != nil {
		return fmt.Errorf("set the QEMU user and address of desktop %s: %w", id, err)
	}
	return nil
}

// ErrIdentityTaken: another desktop runs as that host user or has that
// address.
var ErrIdentityTaken = errors.New("taken by another desktop")

type scanner interface{ Scan(...any) error }

func scanDesktop(r scanner) (*desktop.Desktop, error) {
	var d desktop.Desktop
	var state, desired string
	var created, updated int64
	var deleted, opStarted sql.NullInt64
	var policy string
	err := r.Scan(&d.ID, &d.Owner, &d.Name, &d.Image, &d.VCPUs, &d.MemoryMiB, &d.DataDiskGiB, &state, &desired,
		&d.Operation, &d.LastError, &d.Accelerator, &d.Dir, &d.DataDiskPath, &created, &updated, &deleted, &d.IdleTimeoutSeconds, &d.RestartOnCrash,
		&policy, &d.VMUID, &d.NetIP, &d.Version, &d.Step, &d.KeyboardLayout, &opStarted,
		&d.NapAfterSeconds, &d.SleepAfterSeconds, &d.Host, &d.RenewAddress)
	if err != nil {
		return nil, err
	}
	if d.Network, err = parsePolicy(policy); err != nil {
		return nil, fmt.Errorf("desktop %s: network policy: %w", d.ID, err)
	}
	d.State, d.DesiredState = desktop.State(state), desktop.State(desired)
	d.CreatedAt, d.UpdatedAt, d.DeletedAt = fromMillis(created), fromMillis(updated), fromNullMillis(deleted)
	d.OperationStartedAt = fromNullMillis(opStarted)
	return &d, nil
}

// hostOrLocal records a desktop made without a host on the local one.
func hostOrLocal(h string) string {
	if h == "" {
		return desktop.LocalHost
	}
	return h
}

func layoutOrDefault(l string) string {
	if l == "" {
		return desktop.DefaultKeyboardLayout
	}
	return l
}
