package framebuffer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"time"
)

// read runs the session's server-to-client half until it fails.
func (c *Conn) read(br *bufio.Reader) {
	defer close(c.done)
	var scratch []byte
	for {
		t, err := br.ReadByte()
		if err != nil {
			c.fail(err)
			return
		}
		switch t {
		case 0: // FramebufferUpdate
			scratch, err = c.update(br, scratch)
		case 1: // SetColourMapEntries: not used in true colour
			var h [5]byte
			if _, err = io.ReadFull(br, h[:]); err == nil {
				_, err = br.Discard(6 * int(binary.BigEndian.Uint16(h[3:])))
			}
		case 2: // Bell
		case 3: // ServerCutText
			var h [7]byte
			if _, err = io.ReadFull(br, h[:]); err == nil {
				n := binary.BigEndian.Uint32(h[3:])
				if n > maxCutText {
					err = fmt.Errorf("server clipboard message of %d bytes", n)
				} else {
					_, err = br.Discard(int(n))
				}
			}
		case 150: // EndOfContinuousUpdates
		default:
			err = fmt.Errorf("unknown server message type %d", t)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// update reads one FramebufferUpdate into the screen copy, then asks for
// the next one.
func (c *Conn) update(br *bufio.Reader, scratch []byte) ([]byte, error) {
	var h [3]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return scratch, err
	}
	n := int(binary.BigEndian.Uint16(h[1:]))
	changed, origin := false, false
	for range n {
		var r [12]byte
		if _, err := io.ReadFull(br, r[:]); err != nil {
			return scratch, err
		}
		x, y := int(binary.BigEndian.Uint16(r[0:])), int(binary.BigEndian.Uint16(r[2:]))
		w, hh := int(binary.BigEndian.Uint16(r[4:])), int(binary.BigEndian.Uint16(r[6:]))
		switch enc := int32(binary.BigEndian.Uint32(r[8:])); enc {
		case encRaw:
			size := w * hh * 4
			if cap(scratch) < size {
				scratch = make([]byte, size)
			}
			px := scratch[:size]
			if _, err := io.ReadFull(br, px); err != nil {
				return scratch, err
			}
			diff, err := c.paint(image.Rect(x, y, x+w, y+hh), px)
			if err != nil {
				return scratch, err
			}

			changed = changed || diff
			origin = origin || (x == 0 && y == 0 && w > 0 && hh > 0)
		case encDesktopSize:
			if w < 1 || hh < 1 || w > maxSide || hh > maxSide {
				return scratch, fmt.Errorf("server resized the screen to %dx%d", w, hh)
			}
			c.mu.Lock()
			c.img = image.NewRGBA(image.Rect(0, 0, w, hh))
			c.mu.Unlock()
			changed = true
		default:
			return scratch, fmt.Errorf("server sent encoding %d, not asked for", enc)
		}
	}
	c.mu.Lock()
	c.updates++
	if changed {
		c.version++
		c.damaged = time.Now()
	}
	// The top-left pixel answers the forced request that is out (or an
	// incremental update that happened to include it, at most a scan
	// before the answer would have come).
	if origin && c.forcing {
		c.forcing = false
		c.answers++
	}
	w, hh := c.img.Rect.Dx(), c.img.Rect.Dy()
	c.changed.Broadcast()
	c.mu.Unlock()
	return scratch, c.request(true, w, hh)
}

// paint copies a raw rectangle (QEMU's BGRX pixels) into the screen copy
// as opaque RGBA, and says whether any pixel changed.
func (c *Conn) paint(r image.Rectangle, px []byte) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !r.In(c.img.Rect) {
		return false, fmt.Errorf("server sent rectangle %v outside the %v screen", r, c.img.Rect)
	}
	w := r.Dx() * 4
	changed := false
	row := make([]byte, w)
	for y := 0; y < r.Dy(); y++ {
		src := px[y*w : (y+1)*w]
		for i := 0; i < w; i += 4 {
			row[i], row[i+1], row[i+2], row[i+3] = src[i+2], src[i+1], src[i], 0xff
		}
		off := c.img.PixOffset(r.Min.X, r.Min.Y+y)
		dst := c.img.Pix[off : off+w]
		if !changed && !bytes.Equal(dst, row) {
			changed = true
		}
		copy(dst, row)
	}
	return changed, nil
}
