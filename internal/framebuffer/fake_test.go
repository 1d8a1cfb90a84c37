package framebuffer

import (
	"encoding/binary"
	"image"
	"image/color"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeServer is an RFB server that answers as QEMU's does: the whole
// screen on a full request, changed rectangles on an incremental one, the
// asked area (and what changed) on a forced one.
type fakeServer struct {
	t    *testing.T
	path string
	ln   net.Listener

	mu      sync.Mutex
	img     *image.RGBA
	dirty   []image.Rectangle
	pending bool // an incremental request waits
	conns   []net.Conn
	nudges  int
	keys    []uint32 // key events other than nudges
	resize  *image.Rectangle
	bad     bool // send a rectangle outside the screen
	// scan > 0: requests are answered at the next scan, this long after
	// the first one waiting (several forced requests, one answer), as
	// QEMU does.
	scan  time.Duration
	armed bool
}

func newFakeServer(t *testing.T, w, h int) *fakeServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vnc.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, path: path, ln: ln, img: image.NewRGBA(image.Rect(0, 0, w, h))}
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	go s.accept()
	return s
}

func (s *fakeServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *fakeServer) serve(c net.Conn) {
	defer c.Close()
	io.WriteString(c, "RFB 003.008\n")
	buf := make([]byte, 64)
	if _, err := io.ReadFull(c, buf[:12]); err != nil {
		return
	}
	c.Write([]byte{1, 1}) // one type: None
	if _, err := io.ReadFull(c, buf[:1]); err != nil || buf[0] != 1 {
		return
	}
	c.Write([]byte{0, 0, 0, 0})
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return
	}
	s.mu.Lock()
	init := make([]byte, 24, 28)
	binary.BigEndian.PutUint16(init[0:], uint16(s.img.Rect.Dx()))
	binary.BigEndian.PutUint16(init[2:], uint16(s.img.Rect.Dy()))
	binary.BigEndian.PutUint32(init[20:], 4)
	s.mu.Unlock()
	c.Write(append(init, "fake"...))
	for {
		if _, err := io.ReadFull(c, buf[:1]); err != nil {
			return
		}
		switch buf[0] {
		case 0: // SetPixelFormat
			io.ReadFull(c, buf[:19])
		case 2: // SetEncodings
			io.ReadFull(c, buf[:3])
			n := int(binary.BigEndian.Uint16(buf[1:]))
			io.ReadFull(c, make([]byte, 4*n))
		case 3: // FramebufferUpdateRequest
			io.ReadFull(c, buf[:9])
			area := image.Rect(int(binary.BigEndian.Uint16(buf[1:])), int(binary.BigEndian.Uint16(buf[3:])), 0, 0)
			area.Max = area.Min.Add(image.Pt(int(binary.BigEndian.Uint16(buf[5:])), int(binary.BigEndian.Uint16(buf[7:]))))
			s.mu.Lock()
			if buf[0] == 0 {
				s.dirty = append(s.dirty, area)
			}
			s.pending = true
			switch {
			case s.scan == 0:
				s.flushLocked(c)
			case !s.armed:
				s.armed = true
				time.AfterFunc(s.scan, func() {
					s.mu.Lock()
					s.armed = false
					s.flushLocked(c)
					s.mu.Unlock()
				})
			}
			s.mu.Unlock()
		case 4: // KeyEvent
			io.ReadFull(c, buf[:7])
			s.mu.Lock()
			s.keys = append(s.keys, binary.BigEndian.Uint32(buf[3:]))
			s.mu.Unlock()
		case 255: // QEMU: extended key event (down u16, keysym u32, key number u32)
			io.ReadFull(c, buf[:11])
			s.mu.Lock()
			if buf[0] == 0 && binary.BigEndian.Uint16(buf[1:]) == 0 && binary.BigEndian.Uint32(buf[7:]) == nudgeKey {
				s.nudges++
			} else {
				s.keys = append(s.keys, binary.BigEndian.Uint32(buf[3:]))
			}
			s.mu.Unlock()
		default:
			s.t.Errorf("fake server: unexpected client message %d", buf[0])
			return
		}
	}
}

// flushLocked sends what changed when a request waits for it.
func (s *fakeServer) flushLocked(c net.Conn) {
	if !s.pending || (len(s.dirty) == 0 && s.resize == nil) {
		return
	}
	var msg []byte
	n := len(s.dirty)
	if s.resize != nil {
		n++
	}
	if s.bad {
		n++
	}
	msg = append(msg, 0, 0, byte(n>>8), byte(n))
	rect := func(r image.Rectangle, enc int32) {
		var h [12]byte
		binary.BigEndian.PutUint16(h[0:], uint16(r.Min.X))
		binary.BigEndian.PutUint16(h[2:], uint16(r.Min.Y))
		binary.BigEndian.PutUint16(h[4:], uint16(r.Dx()))
		binary.BigEndian.PutUint16(h[6:], uint16(r.Dy()))
		binary.BigEndian.PutUint32(h[8:], uint32(enc))
		msg = append(msg, h[:]...)
	}
	if s.resize != nil {
		rect(*s.resize, encDesktopSize)
		s.resize = nil
	}
	for _, r := range s.dirty {
		r = r.Intersect(s.img.Rect)
		rect(r, encRaw)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := s.img.RGBAAt(x, y)
				msg = append(msg, p.B, p.G, p.R, 0) // QEMU's BGRX
			}
		}
	}
	if s.bad {
		r := image.Rect(s.img.Rect.Dx()-1, 0, s.img.Rect.Dx()+1, 1)
		rect(r, encRaw)
		msg = append(msg, make([]byte, 8)...)
	}
	s.dirty, s.pending = nil, false
	c.Write(msg)
}

// paint fills r with col and sends it to clients that wait for changes.
func (s *fakeServer) paint(r image.Rectangle, col color.RGBA) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			s.img.SetRGBA(x, y, col)
		}
	}
	s.dirty = append(s.dirty, r)
	for _, c := range s.conns {
		s.flushLocked(c)
	}
}

// resizeTo changes the screen's size (all of it is sent again).
func (s *fakeServer) resizeTo(w, h int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.img = image.NewRGBA(image.Rect(0, 0, w, h))
	r := s.img.Rect
	s.resize = &r
	s.dirty = append(s.dirty, r)
	for _, c := range s.conns {
		s.flushLocked(c)
	}
}

func (s *fakeServer) counts() (nudges int, keys []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nudges, append([]uint32(nil), s.keys...)
}
