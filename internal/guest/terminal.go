package guest

import (
	"context"
	"fmt"
	"net"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
)

// Terminal starts a login shell for user ("" = the desktop's user) on a
// new terminal of rows×cols in the desktop.
func (s *Commands) Terminal(ctx context.Context, domain, user string, rows, cols int) (*client.Terminal, error) {
	if user == "" {
		user = s.x.User
	}
	if !userName.MatchString(user) {
		return nil, invalid("user", "not a user name")
	}
	if rows < 2 || rows > 500 || cols < 10 || cols > 1000 {
		return nil, invalid("rows", "rows must be 2..500 and cols 10..1000")
	}
	if s.x.ch == nil {
		return nil, needAgent("a terminal", client.ErrNoAgent)
	}
	t, err := s.x.ch.PTY(ctx, domain, client.Command{Argv: s.x.wrap(user, []string{"/bin/bash", "-l"}), Env: s.x.env("", nil)}, rows, cols)
	if err != nil {
		return nil, needAgent("a terminal", err)
	}
	return t, nil
}

// DialPort opens a TCP stream to 127.0.0.1:port inside the desktop.
func (s *Commands) DialPort(ctx context.Context, domain string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, invalid("port", "must be 1..65535")
	}
	if s.x.ch == nil {
		return nil, needAgent("reaching a port", client.ErrNoAgent)
	}
	c, err := s.x.ch.DialPort(ctx, domain, port)
	if err != nil {
		if noAgent(err) {
			return nil, needAgent("reaching a port", err)
		}
		return nil, fmt.Errorf("nothing answers on port %d in the desktop (%v): %w", port, err, desktop.ErrUnavailable)
	}
	return c, nil
}
