package console

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// WebSocket close codes a console session ends with (4000-4999 are the
// application's own).
const (
	CodeExpired     = 4001 // the console token expired
	CodeRevoked     = 4002 // the console token was revoked
	CodeDesktopGone = 4003 // the desktop stopped, hibernated or was deleted
)

// CloseError is why a session ended: the close code and reason the browser
// receives.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string { return fmt.Sprintf("%s (%d)", e.Reason, e.Code) }

type session struct {
	tokenID, desktopID, madeBy string
	viewer                     Viewer
	cancel                     context.CancelCauseFunc
}

// Viewer is a live console session: someone watching a desktop.
type Viewer struct {
	// Session is the console token's id.
	Session string `json:"session"`
	// Name is who the link is for, or its maker's owner.
	Name     string    `json:"name"`
	ViewOnly bool      `json:"view_only"`
	Since    time.Time `json:"since"`
	// CreatedBy is who made the link ("alice/tok_…").
	CreatedBy string `json:"-"`
}

// NameOf is the name a console token's sessions go by: the name it was
// made for, or the owner part of its maker ("alice/tok_…" → "alice").
func NameOf(t *desktop.ConsoleToken) string {
	if t.Name != "" {
		return t.Name
	}
	if i := strings.IndexByte(t.CreatedBy, '/'); i > 0 {
		return t.CreatedBy[:i]
	}
	return t.CreatedBy
}

// Viewers lists a desktop's live console sessions, oldest first; a link
// open in two tabs is listed once.
func (s *Service) Viewers(desktopID string) []Viewer {
	s.mu.Lock()
	seen := map[string]bool{}
	var out []Viewer
	for ss := range s.sessions {
		if ss.desktopID == desktopID && !seen[ss.tokenID] {
			seen[ss.tokenID] = true
			out = append(out, ss.viewer)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// Attach registers a live session for t. The returned context ends with a
// *CloseError cause when the token expires or is revoked or the desktop
// stops; call done when the session is over.
func (s *Service) Attach(ctx context.Context, t *desktop.ConsoleToken) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ss := &session{tokenID: t.ID, desktopID: t.DesktopID, madeBy: t.MadeBy, cancel: cancel,
		viewer: Viewer{Session: t.ID, Name: NameOf(t), ViewOnly: t.ViewOnly, Since: s.now(), CreatedBy: t.CreatedBy}}
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	timer := time.AfterFunc(time.Until(t.ExpiresAt), func() {
		cancel(&CloseError{Code: CodeExpired, Reason: "console token expired"})
	})
	return ctx, func() {
		timer.Stop()
		cancel(nil)
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}
}

// EndMadeBy ends the live sessions of console tokens made by the API
// tokens ids, which were revoked (the store revoked their console tokens
// with them).
func (s *Service) EndMadeBy(ids []string) {
	made := make(map[string]bool, len(ids))
	for _, id := range ids {
		made[id] = true
	}
	s.end(func(ss *session) bool { return ss.madeBy != "" && made[ss.madeBy] },
		&CloseError{Code: CodeRevoked, Reason: "the token that made this console link was revoked"})
}

func (s *Service) end(match func(*session) bool, why *CloseError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		if match(ss) {
			ss.cancel(why)
		}
	}
}

// DesktopChanged reacts to a desktop's new state: stopping or deleting it
// revokes its console tokens; hibernating or failing ends live sessions but
// keeps the tokens, so opening the console again wakes the desktop.
func (s *Service) DesktopChanged(ctx context.Context, d *desktop.Desktop) {
	switch d.State {
	case desktop.StateStopping, desktop.StateStopped, desktop.StateDeleting, desktop.StateDeleted:
		if err := s.RevokeDesktop(ctx, d.ID, "desktop "+string(d.State)); err != nil {
			s.log.Warn("revoke console tokens", "desktop", d.ID, "err", err)
		}
	case desktop.StateHibernating, desktop.StateHibernated, desktop.StateError, desktop.StateCrashed,
		desktop.StateReverting, desktop.StateReimaging:
		s.end(func(ss *session) bool { return ss.desktopID == d.ID },
			&CloseError{Code: CodeDesktopGone, Reason: "desktop " + string(d.State)})
	}
}
