package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/audit"
)

// AuditLog keeps the audit log (internal/audit): who did what, from where,
// with what result.
type AuditLog struct{ *conn }

const auditColumns = `id, at, owner, subject_owner, token_id, token_name, person, client_ip, method, route, action,
	object_type, object_id, desktop_id, status, error_code, duration_ms, detail`

// auditRowsPerInsert is how many rows one INSERT statement carries (18
// parameters each: well under SQLite's and PostgreSQL's limits).
const auditRowsPerInsert = 50

// AddAudit inserts audit entries in one transaction, many rows a
// statement.
func (s *AuditLog) AddAudit(ctx context.Context, entries []*audit.Entry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add audit entries: %w", err)
	}
	defer tx.Rollback()
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", 18), ",") + ")"
	for len(entries) > 0 {
		n := min(len(entries), auditRowsPerInsert)
		args := make([]any, 0, n*18)
		for _, e := range entries[:n] {
			args = append(args, e.ID, millis(e.At), e.Owner, e.SubjectOwner, e.TokenID, e.TokenName, e.Person,
				e.ClientIP, e.Method, e.Route, e.Action, e.ObjectType, e.ObjectID, e.DesktopID, e.Status, e.ErrorCode,
				e.DurationMS, e.Detail)
		}
		q := `INSERT INTO audit_log (` + auditColumns + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+",", n), ",")
		if _, err := s.txExec(tx)(ctx, q, args...); err != nil {
			return fmt.Errorf("add audit entries: %w", err)
		}
		entries = entries[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add audit entries: %w", classify(err))
	}
	return nil
}

// ListAudit returns up to f.Limit audit entries f chooses, newest first.
func (s *AuditLog) ListAudit(ctx context.Context, f audit.Filter) ([]*audit.Entry, error) {
	where, args := auditWhere(f)
	q := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY at DESC, id DESC LIMIT ?`
	rows, err := s.query(ctx, q, append(args, f.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	defer rows.Close()
	out := []*audit.Entry{}
	for rows.Next() {
		var e audit.Entry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Owner, &e.SubjectOwner, &e.TokenID, &e.TokenName, &e.Person, &e.ClientIP,
			&e.Method, &e.Route, &e.Action, &e.ObjectType, &e.ObjectID, &e.DesktopID, &e.Status, &e.ErrorCode,
			&e.DurationMS, &e.Detail); err != nil {
			return nil, fmt.Errorf("list audit entries: %w", err)
		}
		e.At = fromMillis(at)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return out, nil
}

// auditWhere is the filter as SQL conditions and their arguments.
func auditWhere(f audit.Filter) ([]string, []any) {
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if f.Visible != "" {
		add(`(owner=? OR subject_owner=?)`, f.Visible, f.Visible)
	}
	if f.Owner != "" {
		add(`(owner=? OR subject_owner=?)`, f.Owner, f.Owner)
	}
	if f.Actor != "" {
		add(`token_id=?`, f.Actor)
	}
	if f.Desktop != "" {
		add(`(desktop_id=? OR object_id=?)`, f.Desktop, f.Desktop)
	}
	if f.Action != "" {
		// substr, not LIKE: an action's '_' or '%' is no wildcard.
		add(`substr(action, 1, ?)=?`, len(f.Action), f.Action)
	}
	switch f.Outcome {
	case audit.OutcomeOK:
		add(`status<400`)
	case audit.OutcomeError:
		add(`status>=400`)
	}
	if !f.Since.IsZero() {
		add(`at>=?`, millis(f.Since))
	}
	if !f.Until.IsZero() {
		add(`at<?`, millis(f.Until))
	}
	if f.After != nil {
		add(`(at<? OR (at=? AND id<?))`, f.After.AtMS, f.After.AtMS, f.After.ID)
	}
	return where, args
}

// PruneAudit deletes audit entries older than before.
func (s *AuditLog) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM audit_log WHERE at<?`, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune audit log: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
