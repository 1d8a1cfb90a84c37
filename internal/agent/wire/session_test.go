package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// yamux's wire format (its spec.md): a 12-byte header of version, type,
// flags, stream ID and length, then length bytes of body for data frames.
const (
	yData   byte = 0
	yWindow byte = 1
	yPing   byte = 2
	yGoAway byte = 3

	ySYN uint16 = 1
	yACK uint16 = 2
	yFIN uint16 = 4
	yRST uint16 = 8

	yWindow0 = 256 << 10 // a stream's first receive window
)

func yframe(typ byte, flags uint16, id, length uint32, body []byte) []byte {
	b := make([]byte, 12, 12+len(body))
	b[1] = typ
	binary.BigEndian.PutUint16(b[2:], flags)
	binary.BigEndian.PutUint32(b[4:], id)
	binary.BigEndian.PutUint32(b[8:], length)
	return append(b, body...)
}

// hostileGuest speaks yamux by hand on the guest's end: it answers the
// streams bureau opens (acknowledging them and echoing their data), and
// opens streams of its own whatever bureau says.
type hostileGuest struct {
	conn   net.Conn
	wmu    sync.Mutex // one frame at a time
	out    chan []byte
	mu     sync.Mutex
	resets map[uint32]bool // streams bureau reset
	goAway bool
}

func newHostileGuest(conn net.Conn) *hostileGuest {
	g := &hostileGuest{conn: conn, out: make(chan []byte, 1024), resets: map[uint32]bool{}}
	go func() {
		for f := range g.out {
			g.write(f)
		}
	}()
	go g.read()
	return g
}

func (g *hostileGuest) write(f []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	_, err := g.conn.Write(f)
	return err
}

// read never blocks on a write, or bureau's reads could wait on its own.
func (g *hostileGuest) read() {
	defer close(g.out)
	var h [12]byte
	for {
		if _, err := io.ReadFull(g.conn, h[:]); err != nil {
			return
		}
		typ, flags := h[1], binary.BigEndian.Uint16(h[2:])
		id, n := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
		var body []byte
		if typ == yData && n > 0 {
			body = make([]byte, n)
			if _, err := io.ReadFull(g.conn, body); err != nil {
				return
			}
		}
		if flags&yRST != 0 {
			g.mu.Lock()
			g.resets[id] = true
			g.mu.Unlock()
		}
		switch {
		case typ == yGoAway:
			g.mu.Lock()
			g.goAway = true
			g.mu.Unlock()
		case typ == yPing && flags&ySYN != 0:
			g.out <- yframe(yPing, yACK, 0, n, nil)
		case (typ == yData || typ == yWindow) && flags&ySYN != 0:
			g.out <- yframe(yWindow, yACK, id, 0, nil)
		}
		if typ == yData && len(body) > 0 {
			g.out <- yframe(yData, 0, id, uint32(len(body)), body)
		}
		if flags&yFIN != 0 {
			g.out <- yframe(yWindow, yFIN, id, 0, nil)
		}
	}
}

func (g *hostileGuest) state() (resets int, goAway bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.resets), g.goAway
}

// opens returns the frames that open stream id and fill its first window:
// as yamux opens a stream (a window update with SYN, then data) or with
// SYN on the data frame itself.
func opens(id uint32, synOnData bool) []byte {
	body := bytes.Repeat([]byte{'x'}, yWindow0)
	if synOnData {
		return yframe(yData, ySYN, id, yWindow0, body)
	}
	return append(yframe(yWindow, ySYN, id, 0, nil), yframe(yData, 0, id, yWindow0, body)...)
}

// echo opens a stream from bureau's side and checks the guest echoes it.
func echo(sess *yamux.Session, msg string) error {
	st, err := sess.OpenStream()
	if err != nil {
		return fmt.Errorf("bureau opens a stream: %w", err)
	}
	defer st.Close()
	st.SetDeadline(time.Now().Add(10 * time.Second))
	werr := make(chan error, 1)
	go func() {
		_, err := io.WriteString(st, msg)
		werr <- err
	}()
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(st, b); err != nil || string(b) != msg {
		return fmt.Errorf("bureau reads back %.20q: %v", b, err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("bureau writes: %w", err)
	}
	return nil
}

type countHandler struct{ n atomic.Int64 }

func (h *countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countHandler) WithGroup(string) slog.Handler             { return h }

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A guest that opens streams toward bureau, hundreds of them each filled
// to its window, holds no memory of bureau's: every such stream is reset
// at once and its data dropped, even streams opened before bureau's
// session started; bureau's own streams keep working in the same session,
// and the refusals are counted and logged once per interval.
func TestHostRefusesStreamsTheGuestOpens(t *testing.T) {
	host, guest := net.Pipe()
	defer host.Close()
	defer guest.Close()
	const early, late = 4, 300

	// Streams the guest opened right after the handshake, before bureau's
	// session could say it takes none.
	var pre []byte
	id := uint32(2)
	for i := 0; i < early; i++ {
		pre = append(pre, opens(id, i%2 == 1)...)
		id += 2
	}

	before := heap()
	logs := &countHandler{}
	g := newHostileGuest(guest)
	sess, ref, err := hostSession(io.MultiReader(bytes.NewReader(pre), host), host, slog.New(logs), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	pre = nil

	flooded := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < late && err == nil; i++ {
			err = g.write(opens(id, i%2 == 1))
			id += 2
		}
		flooded <- err
	}()
	if err := echo(sess, "during the flood"); err != nil {
		t.Fatal(err)
	}
	if err := <-flooded; err != nil {
		t.Fatalf("the guest's flood: %v", err)
	}
	// bureau reads this after every frame of the flood.
	if err := echo(sess, "after the flood"); err != nil {
		t.Fatal(err)
	}

	const total = early + late
	if n := ref.n.Load(); n != total {
		t.Errorf("%d refusals counted, want %d", n, total)
	}
	if n := sess.NumStreams(); n > 2 {
		t.Errorf("bureau's session holds %d streams, want at most its own 2", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resets, goAway := g.state()
		if resets == total && goAway {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest saw %d of %d streams reset, go away %v", resets, total, goAway)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The guest sent ~76 MiB; bureau kept none of it.
	if grew := int64(heap()) - int64(before); grew > 16<<20 {
		t.Errorf("bureau's heap grew by %d MiB", grew>>20)
	}
	if n := logs.n.Load(); n != 1 {
		t.Errorf("%d log records for the refusals, want 1 (one per interval)", n)
	}
	runtime.KeepAlive(sess)
}

// bureau-agent's own end (yamux's server) works as before with bureau's
// session; a stream it tries to open fails at once on its side.
func TestHostSessionWithTheAgentsEnd(t *testing.T) {
	host, guest := net.Pipe()
	defer host.Close()
	defer guest.Close()
	agent, err := yamux.Server(guest, Config(false))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	go func() {
		for {
			st, err := agent.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				defer st.Close()
				io.Copy(st, st)
			}()
		}
	}()
	sess, ref, err := hostSession(host, host, slog.New(&countHandler{}), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	big := string(bytes.Repeat([]byte("0123456789abcdef"), 64<<10)) // past the first window
	var wg sync.WaitGroup
	for _, msg := range []string{"hello", big, "concurrent", big, "again"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := echo(sess, msg); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := agent.OpenStream(); !errors.Is(err, yamux.ErrRemoteGoAway) {
		t.Errorf("the agent opened a stream: %v", err)
	}
	if n := ref.n.Load(); n != 0 {
		t.Errorf("%d refusals of a well-behaved agent", n)
	}
}
