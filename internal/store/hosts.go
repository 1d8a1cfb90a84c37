package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/hosts"
)

// Hosts keeps the hosts desktops run on and their health.
type Hosts struct{ *conn }

const hostColumns = `name, uri, labels, state, hostname, libvirt_version, accelerator, cpus, memory_mib, free_memory_mib, last_error, last_seen_at, created_at, ssh_address, ssh_host_key, bridge, subnet, ready, ready_error, disk_mib, free_disk_mib, draining`

// ListHosts returns every host, the local one first, then by name.
func (s *Hosts) ListHosts(ctx context.Context) ([]hosts.Host, error) {
	rows, err := s.query(ctx, `SELECT `+hostColumns+` FROM hosts ORDER BY CASE WHEN name='`+hosts.LocalName+`' THEN 0 ELSE 1 END, name`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	defer rows.Close()
	var out []hosts.Host
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		out = append(out, *h)
	}
	return out, rows.Err()
}

// GetHost returns one host; hosts.ErrNotFound when there is none.
func (s *Hosts) GetHost(ctx context.Context, name string) (*hosts.Host, error) {
	h, err := scanHost(s.queryRow(ctx, `SELECT `+hostColumns+` FROM hosts WHERE name=?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("host %s: %w", name, hosts.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	return h, nil
}

// InsertHost records a new host; hosts.ErrExists when its name or URI is
// taken.
func (s *Hosts) InsertHost(ctx context.Context, h *hosts.Host) error {
	labels, err := json.Marshal(h.Labels)
	if err != nil {
		return fmt.Errorf("host %s labels: %w", h.Name, err)
	}
	_, err = s.exec(ctx, `INSERT INTO hosts (`+hostColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		h.Name, h.URI, string(labels), string(h.State), h.Hostname, h.LibvirtVersion, h.Accelerator, h.CPUs, h.MemoryMiB, h.FreeMemoryMiB,
		h.LastError, nullMillis(h.LastSeenAt), millis(h.CreatedAt), h.SSH.Address, h.SSH.HostKey, h.Network.Bridge, h.Network.Subnet, h.Ready, h.ReadyError,
		h.DiskMiB, h.FreeDiskMiB, h.Draining)
	if isUniqueViolation(err) || isPrimaryKeyViolation(err) {
		return fmt.Errorf("host %s (%s): a host of that name or URI is there already: %w", h.Name, h.URI, hosts.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("add host %s: %w", h.Name, err)
	}
	return nil
}

// DeleteHost forgets a host.
func (s *Hosts) DeleteHost(ctx context.Context, name string) error {
	res, err := s.exec(ctx, `DELETE FROM hosts WHERE name=?`, name)
	if err != nil {
		return fmt.Errorf("remove host %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("host %s: %w", name, hosts.ErrNotFound)
	}
	return nil
}

// UpdateHostHealth records a check of h: its state, error, readiness and,
// when it answered, its facts and the time.
func (s *Hosts) UpdateHostHealth(ctx context.Context, h *hosts.Host) error {
	res, err := s.exec(ctx, `UPDATE hosts SET state=?, hostname=?, libvirt_version=?, accelerator=?, cpus=?, memory_mib=?, free_memory_mib=?, disk_mib=?, free_disk_mib=?, last_error=?, last_seen_at=?, ready=?, ready_error=? WHERE name=?`,
		string(h.State), h.Hostname, h.LibvirtVersion, h.Accelerator, h.CPUs, h.MemoryMiB, h.FreeMemoryMiB, h.DiskMiB, h.FreeDiskMiB, h.LastError,
		nullMillis(h.LastSeenAt), h.Ready, h.ReadyError, h.Name)
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("host %s: %w", h.Name, hosts.ErrNotFound)
	}
	return nil
}

// SetHostDraining marks a host draining (placement passes it over) or
// not.
func (s *Hosts) SetHostDraining(ctx context.Context, name string, on bool) error {
	res, err := s.exec(ctx, `UPDATE hosts SET draining=? WHERE name=?`, on, name)
	if err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("host %s: %w", name, hosts.ErrNotFound)
	}
	return nil
}

func scanHost(row interface{ Scan(...any) error }) (*hosts.Host, error) {
	var h hosts.Host
	var labels, state string
	var seen sql.NullInt64
	var created int64
	if err := row.Scan(&h.Name, &h.URI, &labels, &state, &h.Hostname, &h.LibvirtVersion, &h.Accelerator, &h.CPUs, &h.MemoryMiB, &h.FreeMemoryMiB,
		&h.LastError, &seen, &created, &h.SSH.Address, &h.SSH.HostKey, &h.Network.Bridge, &h.Network.Subnet, &h.Ready, &h.ReadyError,
		&h.DiskMiB, &h.FreeDiskMiB, &h.Draining); err != nil {
		return nil, err
	}
	h.State, h.LastSeenAt, h.CreatedAt = hosts.State(state), fromNullMillis(seen), fromMillis(created)
	if err := json.Unmarshal([]byte(labels), &h.Labels); err != nil || h.Labels == nil {
		h.Labels = map[string]string{}
	}
	return &h, nil
}
