// Package agenttest serves bureau-agent in-process, for tests: every dial
// gets a real agent server over a pipe, and the "desktop" is this
// machine (its commands run here, as the test's user).
package agenttest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
)

// Dialer connects to Server in-process.
type Dialer struct{ Server *server.Server }

// DialAgent serves a new connection.
func (d Dialer) DialAgent(context.Context, string) (net.Conn, error) {
	a, b := net.Pipe()
	go d.Server.ServeConn(context.Background(), b)
	return a, nil
}

// NoAgent is a desktop without bureau-agent.
type NoAgent struct{}

// DialAgent fails as for a domain without the channel.
func (NoAgent) DialAgent(context.Context, string) (net.Conn, error) {
	return nil, errors.New("no channel")
}

// Client is a bureau-agent client whose every desktop is this machine.
func Client(t testing.TB) *client.Client {
	t.Helper()
	srv := &server.Server{Info: wire.Info{SHA256: "x", Version: "test"}, StateDir: t.TempDir(), RunDir: t.TempDir()}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	return ClientOf(t, Dialer{srv})
}

// ClientOf is a client over d.
func ClientOf(t testing.TB, d client.Dialer) *client.Client {
	t.Helper()
	c, err := client.New(d, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
