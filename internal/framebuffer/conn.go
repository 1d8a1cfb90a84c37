// Package framebuffer keeps a live copy of a desktop's screen: an RFB
// client on the display's VNC socket receives the changed rectangles as the
// guest draws them, so a screenshot reads memory instead of asking the
// hypervisor for a fresh dump, and "settled" means no damage for a while
// instead of comparing screenshots.
//
// QEMU's VNC server scans for changes every 30 ms after input, backing off
// by 50 ms per quiet scan to 3 s; only VNC input brings it back to 30 ms.
// bureau's input reaches the guest through QMP, not VNC, so a Conn nudges
// the server with a key release nobody pressed (QEMU drops it before the
// guest, see Nudge) whenever it needs the scans frequent.
package framebuffer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"net"
	"sync"
	"time"
)

// maxSide bounds a screen a server may announce.
const maxSide = 8192

// maxCutText bounds a server clipboard message that is skipped.
const maxCutText = 16 << 20

// RFB encodings this client asks for.
const (
	encRaw         = 0
	encDesktopSize = -223
)

// nudgeKey is the key Nudge releases: Help (QEMU's key number 0xf5), which
// no viewer holds down. Sent as QEMU's extended key event, by number, so no
// keymap is consulted (a keysym QEMU's keymap lacks logs a warning).
const nudgeKey = 0xf5

// ErrClosed is returned once a Conn has ended.
var ErrClosed = errors.New("framebuffer connection closed")

// Conn is a live framebuffer: one RFB session whose screen copy is kept
// current by a reader goroutine.
type Conn struct {
	c  net.Conn
	wr sync.Mutex // serializes writes

	mu      sync.Mutex
	changed *sync.Cond
	img     *image.RGBA
	version uint64    // bumped by every update that changed pixels
	damaged time.Time // when pixels last changed
	updates uint64    // complete FramebufferUpdate messages read
	// A Sync's forced request is out (one at a time: the server answers
	// several sent before its next scan with one update); answers counts
	// the updates that answered one.
	forcing bool
	answers uint64
	err     error
	done    chan struct{}
}

// Dial connects to an RFB server (QEMU's VNC on a unix socket, without
// authentication), shares the session with other viewers, and returns once
// the whole screen has arrived.
func Dial(ctx context.Context, network, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("framebuffer: %w", err)
	}
	c, err := NewConn(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// NewConn runs an RFB session on nc (see Dial); nc is the caller's to close
// when it fails.
func NewConn(ctx context.Context, nc net.Conn) (*Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	br := bufio.NewReaderSize(nc, 256<<10)
	w, h, err := handshake(nc, br)
	if err != nil {
		return nil, fmt.Errorf("framebuffer handshake: %w", err)
	}
	nc.SetDeadline(time.Time{})
	c := &Conn{c: nc, img: image.NewRGBA(image.Rect(0, 0, w, h)), done: make(chan struct{})}
	c.changed = sync.NewCond(&c.mu)
	// Little-endian 32-bit true colour with red at bit 16: QEMU's own
	// format, which it copies without converting.
	pf := []byte{0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}
	enc := []int32{encRaw, encDesktopSize}
	msg := make([]byte, 4+4*len(enc))
	msg[0] = 2
	binary.BigEndian.PutUint16(msg[2:], uint16(len(enc)))
	for i, e := range enc {
		binary.BigEndian.PutUint32(msg[4+4*i:], uint32(e))
	}
	if err := c.write(append(pf, msg...)); err != nil {
		return nil, err
	}
	if err := c.request(false, w, h); err != nil {
		return nil, err
	}
	go c.read(br)
	// The first update is the whole screen.
	if err := c.waitUpdates(ctx, 1); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// handshake runs RFB 3.8's version, security (None) and init exchanges,
// asking to share the display, and returns the screen size.
func handshake(nc net.Conn, br *bufio.Reader) (int, int, error) {
	ver := make([]byte, 12)
	if _, err := io.ReadFull(br, ver); err != nil {
		return 0, 0, err
	}
	if string(ver[:4]) != "RFB " {
		return 0, 0, fmt.Errorf("not an RFB server: %q", ver)
	}
	if _, err := nc.Write([]byte("RFB 003.008\n")); err != nil {
		return 0, 0, err
	}
	n, err := br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("server refused: %s", reason(br))
	}
	types := make([]byte, n)
	if _, err := io.ReadFull(br, types); err != nil {
		return 0, 0, err
	}
	none := false
	for _, t := range types {
		none = none || t == 1
	}
	if !none {
		return 0, 0, fmt.Errorf("server wants authentication (security types %v)", types)
	}
	if _, err := nc.Write([]byte{1}); err != nil {
		return 0, 0, err
	}
	var res [4]byte
	if _, err := io.ReadFull(br, res[:]); err != nil {
		return 0, 0, err
	}
	if binary.BigEndian.Uint32(res[:]) != 0 {
		return 0, 0, fmt.Errorf("security handshake failed: %s", reason(br))
	}
	if _, err := nc.Write([]byte{1}); err != nil { // shared
		return 0, 0, err
	}
	var init [24]byte
	if _, err := io.ReadFull(br, init[:]); err != nil {
		return 0, 0, err
	}
	w, h := int(binary.BigEndian.Uint16(init[0:])), int(binary.BigEndian.Uint16(init[2:]))
	if w < 1 || h < 1 || w > maxSide || h > maxSide {
		return 0, 0, fmt.Errorf("server announced a %dx%d screen", w, h)
	}
	if _, err := io.CopyN(io.Discard, br, int64(binary.BigEndian.Uint32(init[20:]))); err != nil {
		return 0, 0, err
	}
	return w, h, nil
}

// reason reads a server's failure reason string.
func reason(br *bufio.Reader) string {
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return "(no reason given)"
	}
	b := make([]byte, min(binary.BigEndian.Uint32(n[:]), 1024))
	io.ReadFull(br, b)
	return string(b)
}

func (c *Conn) write(b []byte) error {
	c.wr.Lock()
	defer c.wr.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.c.Write(b)
	return err
}

// request asks for the next update: the changes since the last one
// (incremental), or the whole of the given area.
func (c *Conn) request(incremental bool, w, h int) error {
	msg := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if incremental {
		msg[1] = 1
	}
	binary.BigEndian.PutUint16(msg[6:], uint16(w))
	binary.BigEndian.PutUint16(msg[8:], uint16(h))
	return c.write(msg)
}

// size is the screen's current size.
func (c *Conn) size() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.img.Rect.Dx(), c.img.Rect.Dy()
}

// Nudge brings the server's change scans back to every 30 ms for a while:
// QEMU does that on any key event, and drops the release of a key that is
// not down before it reaches the guest.
func (c *Conn) Nudge() error {
	msg := []byte{255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[8:], nudgeKey)
	return c.write(msg)
}

// Sync returns once the copy holds everything the server has seen up to a
// scan after the call: it nudges the server and forces an answer. Syncs
// take turns: each waits for the one before it to be answered.
func (c *Conn) Sync(ctx context.Context) error {
	c.mu.Lock()
	if err := c.waitLocked(ctx, func() bool { return !c.forcing }); err != nil {
		c.mu.Unlock()
		return err
	}
	c.forcing = true
	want := c.answers + 1
	c.mu.Unlock()
	err := c.Nudge()
	if err == nil {
		// The top-left pixel, asked for whole: the server answers it
		// (with whatever else changed) at its next scan even when
		// nothing did.
		err = c.request(false, 1, 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		err = c.waitLocked(ctx, func() bool { return c.answers >= want })
	}
	if err != nil && c.forcing && c.answers < want {
		// Not answered: the next Sync asks again.
		c.forcing = false
		c.changed.Broadcast()
	}
	return err
}

// waitUpdates waits until n updates have been read.
func (c *Conn) waitUpdates(ctx context.Context, n uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitLocked(ctx, func() bool { return c.updates >= n })
}

// waitLocked waits (c.mu held) until ok, the connection ends or ctx is done.
func (c *Conn) waitLocked(ctx context.Context, ok func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.changed.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	for !ok() {
		if c.err != nil {
			return c.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c.changed.Wait()
	}
	return nil
}

// WaitChange waits until the screen's version passes v or ctx is done.
func (c *Conn) WaitChange(ctx context.Context, v uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitLocked(ctx, func() bool { return c.version > v })
}

// State is the screen's version (bumped by each change) and when it last
// changed.
func (c *Conn) State() (version uint64, damaged time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version, c.damaged
}

// Snapshot copies the screen and says which version it is.
func (c *Conn) Snapshot() (*image.RGBA, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := image.NewRGBA(c.img.Rect)
	copy(cp.Pix, c.img.Pix)
	return cp, c.version
}

// Done is closed when the connection has ended; Err says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it runs).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Conn) Close() error {
	err := c.c.Close()
	<-c.done
	return err
}

// fail ends the connection with err (the first error wins).
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %v", ErrClosed, err)
		}
		c.err = err
	}
	c.changed.Broadcast()
	c.mu.Unlock()
	c.c.Close()
}
