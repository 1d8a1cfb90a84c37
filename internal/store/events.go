package store

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
)

// Events keeps desktops' histories.
type Events struct{ *conn }

// AddEvent appends an entry to a desktop's history.
func (s *Events) AddEvent(ctx context.Context, e *desktop.Event) error {
	_, err := s.exec(ctx, `INSERT INTO events (id, desktop_id, type, message, actor, created_at) VALUES (?,?,?,?,?,?)`,
		e.ID, e.DesktopID, e.Type, e.Message, e.Actor, millis(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("add event: %w", err)
	}
	return nil
}

// ListEvents returns the newest limit events of a desktop, oldest first.
func (s *Events) ListEvents(ctx context.Context, desktopID string, limit int) ([]*desktop.Event, error) {
	return s.listEvents(ctx, `SELECT id, desktop_id, type, message, actor, created_at FROM
(SELECT * FROM events WHERE desktop_id=? ORDER BY created_at DESC, id DESC LIMIT ?) newest ORDER BY created_at, id`, desktopID, limit)
}

// ListAllEvents returns the newest limit events of every desktop of owner
// ("" = every owner), deleted desktops included, oldest first: the audit log.
func (s *Events) ListAllEvents(ctx context.Context, owner string, limit int) ([]*desktop.Event, error) {
	return s.listEvents(ctx, `SELECT id, desktop_id, type, message, actor, created_at FROM
(SELECT e.* FROM events e JOIN desktops d ON d.id = e.desktop_id WHERE ? = '' OR d.owner = ?
 ORDER BY e.created_at DESC, e.id DESC LIMIT ?) newest ORDER BY created_at, id`, owner, owner, limit)
}

func (s *Events) listEvents(ctx context.Context, query string, args ...any) ([]*desktop.Event, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	out := []*desktop.Event{}
	for rows.Next() {
		var e desktop.Event
		var created int64
		if err := rows.Scan(&e.ID, &e.DesktopID, &e.Type, &e.Message, &e.Actor, &created); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		e.CreatedAt = fromMillis(created)
		out = append(out, &e)
	}
	return out, rows.Err()
}
