package agentwire

import (
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

// Config is the yamux configuration of both ends: wide stream windows for
// file streams, no keepalive from the agent (bureau may be away for any
// time), and no yamux logging (errors surface as call errors).
func Config(client bool) *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = 4 << 20
	c.EnableKeepAlive = client
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	c.LogOutput = io.Discard
	return c
}

// Joined is one connection read through r (which may hold bytes read
// during the handshake) and written and closed through c.
type Joined struct {
	R io.Reader
	C io.ReadWriteCloser
}

func (j Joined) Read(p []byte) (int, error)  { return j.R.Read(p) }
func (j Joined) Write(p []byte) (int, error) { return j.C.Write(p) }
func (j Joined) Close() error                { return j.C.Close() }
