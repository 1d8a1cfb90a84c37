package store

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
)

// Teams keeps teams and their members (docs/teams.md).
type Teams struct{ s *Store }

// Teams returns the store's team records.
func (s *Store) Teams() *Teams { return &Teams{s: s} }

// CreateTeam records a team and its members in one transaction.
func (ts *Teams) CreateTeam(ctx context.Context, t *teams.Team) error {
	tx, err := ts.s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create team: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, ts.s.q(`INSERT INTO teams (name, created_at, created_by) VALUES (?,?,?)`), t.Name, millis(t.CreatedAt), t.CreatedBy)
	if isUniqueViolation(err) || isPrimaryKeyViolation(err) {
		return fmt.Errorf("team %s: %w", t.Name, desktop.ErrNameTaken)
	}
	if err != nil {
		return fmt.Errorf("create team: %w", classify(err))
	}
	for _, m := range t.Members {
		if _, err := tx.ExecContext(ctx, ts.s.q(`INSERT INTO team_members (team, member, role, added_at, added_by) VALUES (?,?,?,?,?)`),
			t.Name, m.Member, string(m.Role), millis(m.AddedAt), m.AddedBy); err != nil {
			return fmt.Errorf("create team: %w", classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create team: %w", err)
	}
	return nil
}

// Team returns a team with its members.
func (ts *Teams) Team(ctx context.Context, name string) (*teams.Team, error) {
	var t teams.Team
	var created int64
	err := ts.s.queryRow(ctx, `SELECT name, created_at, created_by FROM teams WHERE name=?`, name).Scan(&t.Name, &created, &t.CreatedBy)
	if err != nil {
		return nil, fmt.Errorf("team %s: %w", name, notFound(err))
	}
	t.CreatedAt = fromMillis(created)
	byTeam, err := ts.members(ctx, `WHERE team=?`, name)
	if err != nil {
		return nil, err
	}
	t.Members = byTeam[name]
	return &t, nil
}

// ListTeams lists the teams member is in ("" = all) by name, each with
// all its members.
func (ts *Teams) ListTeams(ctx context.Context, member string) ([]*teams.Team, error) {
	query, args := `SELECT name, created_at, created_by FROM teams`, []any{}
	if member != "" {
		query += ` WHERE name IN (SELECT team FROM team_members WHERE member=?)`
		args = append(args, member)
	}
	rows, err := ts.s.query(ctx, query+` ORDER BY name`, args...)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	var out []*teams.Team
	for rows.Next() {
		var t teams.Team
		var created int64
		if err := rows.Scan(&t.Name, &created, &t.CreatedBy); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list teams: %w", err)
		}
		t.CreatedAt = fromMillis(created)
		out = append(out, &t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	where, margs := "", []any{}
	if member != "" {
		where, margs = `WHERE team IN (SELECT team FROM team_members WHERE member=?)`, []any{member}
	}
	byTeam, err := ts.members(ctx, where, margs...)
	if err != nil {
		return nil, err
	}
	for _, t := range out {
		t.Members = byTeam[t.Name]
	}
	return out, nil
}

// members reads team members matching where, by team, oldest first.
func (ts *Teams) members(ctx context.Context, where string, args ...any) (map[string][]teams.Member, error) {
	rows, err := ts.s.query(ctx, `SELECT team, member, role, added_at, added_by FROM team_members `+where+` ORDER BY added_at, member`, args...)
	if err != nil {
		return nil, fmt.Errorf("team members: %w", err)
	}
	defer rows.Close()
	out := map[string][]teams.Member{}
	for rows.Next() {
		var team, role string
		var m teams.Member
		var added int64
		if err := rows.Scan(&team, &m.Member, &role, &added, &m.AddedBy); err != nil {
			return nil, fmt.Errorf("team members: %w", err)
		}
		m.Role, m.AddedAt = teams.Role(role), fromMillis(added)
		out[team] = append(out[team], m)
	}
	return out, rows.Err()
}

// PutMember adds a member, or changes the role of one (keeping when and
// by whom they were added).
func (ts *Teams) PutMember(ctx context.Context, team string, m teams.Member) error {
	_, err := ts.s.exec(ctx, `INSERT INTO team_members (team, member, role, added_at, added_by) VALUES (?,?,?,?,?)
		ON CONFLICT (team, member) DO UPDATE SET role=excluded.role`, team, m.Member, string(m.Role), millis(m.AddedAt), m.AddedBy)
	if err != nil {
		return fmt.Errorf("team %s: put member: %w", team, err)
	}
	return nil
}

// DeleteMember removes a member.
func (ts *Teams) DeleteMember(ctx context.Context, team, member string) error {
	res, err := ts.s.exec(ctx, `DELETE FROM team_members WHERE team=? AND member=?`, team, member)
	if err != nil {
		return fmt.Errorf("team %s: remove member: %w", team, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("member %s of team %s: %w", member, team, desktop.ErrNotFound)
	}
	return nil
}

// DeleteTeam deletes a team and its members.
func (ts *Teams) DeleteTeam(ctx context.Context, name string) error {
	tx, err := ts.s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete team: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ts.s.q(`DELETE FROM team_members WHERE team=?`), name); err != nil {
		return fmt.Errorf("delete team: %w", err)
	}
	res, err := tx.ExecContext(ctx, ts.s.q(`DELETE FROM teams WHERE name=?`), name)
	if err != nil {
		return fmt.Errorf("delete team: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("team %s: %w", name, desktop.ErrNotFound)
	}
	return tx.Commit()
}

// OwnerInUse reports whether name owns tokens or desktops (deleted ones
// too: their records keep the name) or is a team.
func (ts *Teams) OwnerInUse(ctx context.Context, name string) (bool, error) {
	var n int
	err := ts.s.queryRow(ctx, `SELECT
		(SELECT COUNT(*) FROM api_tokens WHERE owner=?) +
		(SELECT COUNT(*) FROM desktops WHERE owner=?) +
		(SELECT COUNT(*) FROM teams WHERE name=?)`, name, name, name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("owner %s in use: %w", name, err)
	}
	return n > 0, nil
}

// OwnerDesktops lists the ids of owner's desktops not deleted.
func (ts *Teams) OwnerDesktops(ctx context.Context, owner string) ([]string, error) {
	rows, err := ts.s.query(ctx, `SELECT id FROM desktops WHERE owner=? AND deleted_at IS NULL ORDER BY id`, owner)
	if err != nil {
		return nil, fmt.Errorf("desktops of %s: %w", owner, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("desktops of %s: %w", owner, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

var _ teams.Store = (*Teams)(nil)
