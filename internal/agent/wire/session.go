package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
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

// HostSession starts bureau's end of the session over a connection whose
// handshake is done: r is the reader Dial returned, c the connection.
//
// bureau opens every stream; the agent opens none. So the session takes
// no stream from the guest: it says go away before it reads a byte, after
// which yamux resets each stream the guest opens at once, registering
// nothing and dropping its data unbuffered. (Otherwise a hostile guest
// could park a full receive window in each of the accept backlog's
// streams that no one accepts: 256 × 256 KiB per desktop.) The refusals
// are counted and logged on log at most once a minute.
func HostSession(r io.Reader, c io.ReadWriteCloser, log *slog.Logger) (*yamux.Session, error) {
	s, _, err := hostSession(r, c, log, time.Minute)
	return s, err
}

func hostSession(r io.Reader, c io.ReadWriteCloser, log *slog.Logger, every time.Duration) (*yamux.Session, *refusals, error) {
	ref := &refusals{log: log, every: every}
	w := &synWatch{r: r, open: make(chan struct{}), onSYN: ref.add}
	// Until the go away is said, yamux would queue the guest's streams for
	// an Accept that never comes: it reads nothing before.
	defer close(w.open)
	s, err := yamux.Client(Joined{R: w, C: c}, Config(true))
	if err != nil {
		return nil, nil, err
	}
	if err := s.GoAway(); err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("agent/wire: starting the session: %w", err)
	}
	return s, ref, nil
}

// refusals counts the streams a guest tried to open and logs them at a
// low rate.
type refusals struct {
	n     atomic.Uint64
	log   *slog.Logger
	every time.Duration
	last  time.Time // of the last log, in the session's read loop only
}

func (r *refusals) add() {
	n := r.n.Add(1)
	if now := time.Now(); now.Sub(r.last) >= r.every {
		r.last = now
		r.log.Warn("bureau-agent opened a stream toward bureau, which takes none: refused", "refused", n)
	}
}

// yamux frames (see yamux's spec.md): a header of version, type, flags,
// stream ID and length, followed by length bytes for a data frame.
const (
	yamuxHeader = 12
	yamuxData   = 0
	yamuxWindow = 1
	yamuxSYN    = 1
)

// synWatch passes a session's incoming bytes to yamux once open is
// closed, and calls onSYN for each frame that opens a stream (SYN on a
// data or window update frame): only the guest's do, as bureau's own
// streams are acknowledged (ACK). It reads what yamux reads, in yamux's
// read loop, and follows yamux's framing without changing a byte.
type synWatch struct {
	r     io.Reader
	open  chan struct{}
	onSYN func()
	hdr   [yamuxHeader]byte
	have  int    // header bytes seen
	skip  uint32 // body bytes of a data frame still to pass
}

func (w *synWatch) Read(p []byte) (int, error) {
	<-w.open
	n, err := w.r.Read(p)
	w.scan(p[:n])
	return n, err
}

func (w *synWatch) scan(b []byte) {
	for len(b) > 0 {
		if w.skip > 0 {
			k := uint32(min(uint64(len(b)), uint64(w.skip)))
			w.skip -= k
			b = b[k:]
			continue
		}
		k := copy(w.hdr[w.have:], b)
		w.have += k
		b = b[k:]
		if w.have < yamuxHeader {
			return
		}
		w.have = 0
		typ, flags := w.hdr[1], binary.BigEndian.Uint16(w.hdr[2:])
		if typ == yamuxData {
			w.skip = binary.BigEndian.Uint32(w.hdr[8:])
		}
		if (typ == yamuxData || typ == yamuxWindow) && flags&yamuxSYN != 0 {
			w.onSYN()
		}
	}
}
