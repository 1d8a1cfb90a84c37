package console

import (
	"context"
	"fmt"
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
	cancel                     context.CancelCauseFunc
}

// Attach registers a live session for t. The returned context ends with a
// *CloseError cause when the token expires or is revoked or the desktop
// stops; call done when the session is over.
func (s *Service) Attach(ctx context.Context, t *desktop.ConsoleToken) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ss := &session{tokenID: t.ID, desktopID: t.DesktopID, madeBy: t.MadeBy, cancel: cancel}
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
