package console

import (
	"encoding/binary"
	"fmt"
	"regexp"
)

// maxCutText bounds one client clipboard message; noVNC sends far less.
const maxCutText = 1 << 20

var rfbVersion = regexp.MustCompile(`^RFB 003\.00[3-8]\n$`)

// Filter parses the client→server half of an RFB session (RFC 6143 plus the
// QEMU and noVNC extensions QEMU's VNC server knows). It forwards whole
// messages only, forces the shared flag so one viewer never disconnects the
// others, drops keyboard, pointer, clipboard and resize messages when view
// only, and rejects anything it cannot parse: a client that sends garbage
// is disconnected instead of confusing the server.
type Filter struct {
	ViewOnly bool
	// Input, when set, is asked about each input message a viewer that is
	// not view-only sends (keyboard, pointer, clipboard; not resize): false
	// drops it. It must be quick: it runs for every mouse move.
	Input func(Input) bool

	stage   int // 0 version, 1 security type, 2 client init, 3 messages
	v33     bool
	pending []byte
	// Dropped counts messages withheld from the server.
	Dropped int
}

// Feed takes bytes from the client and returns those to send on, which may
// be none while a message is incomplete.
func (f *Filter) Feed(p []byte) ([]byte, error) {
	f.pending = append(f.pending, p...)
	var out []byte
	for {
		n, forward, err := f.next(f.pending)
		if err != nil {
			return nil, err
		}
		if n == 0 { // incomplete
			break
		}
		if forward {
			out = append(out, f.pending[:n]...)
		} else {
			f.Dropped++
		}
		f.pending = f.pending[n:]
	}
	if len(f.pending) == 0 {
		f.pending = nil // let a large message's buffer go
	}
	return out, nil
}

// next returns the length of the next complete unit in b (0 if incomplete)
// and whether to forward it.
func (f *Filter) next(b []byte) (int, bool, error) {
	switch f.stage {
	case 0:
		if len(b) < 12 {
			return 0, false, nil
		}
		if !rfbVersion.Match(b[:12]) {
			return 0, false, fmt.Errorf("not an RFB client: bad protocol version %q", b[:12])
		}
		f.v33 = b[10] == '3'
		f.stage = 1
		if f.v33 { // the server picks the security type
			f.stage = 2
		}
		return 12, true, nil
	case 1:
		if len(b) < 1 {
			return 0, false, nil
		}
		if b[0] != 1 { // None: the only type bureau's VNC servers offer
			return 0, false, fmt.Errorf("RFB security type %d not offered", b[0])
		}
		f.stage = 2
		return 1, true, nil
	case 2:
		if len(b) < 1 {
			return 0, false, nil
		}
		b[0] = 1 // shared: never take the display from other viewers
		f.stage = 3
		return 1, true, nil
	}
	if len(b) < 1 {
		return 0, false, nil
	}
	need, input, err := messageLen(b)
	if err != nil || need == 0 || len(b) < need {
		return 0, false, err
	}
	if input && f.ViewOnly {
		return need, false, nil
	}
	if input && f.Input != nil {
		if in, ok := inputOf(b[:need]); ok && !f.Input(in) {
			return need, false, nil
		}
	}
	return need, true, nil
}

// Input is one input message from a viewer: a key pressed or released, a
// pointer event with the buttons held, or clipboard text.
type Input struct {
	Key       bool
	KeyDown   bool
	Pointer   bool
	Buttons   uint8
	Clipboard bool
}

// inputOf says what a whole input message is (ok false: not one the
// Input hook is asked about, such as a resize).
func inputOf(m []byte) (Input, bool) {
	switch m[0] {
	case 4: // KeyEvent: down-flag at 1
		return Input{Key: true, KeyDown: m[1] != 0}, true
	case 5: // PointerEvent: button mask at 1
		return Input{Pointer: true, Buttons: m[1]}, true
	case 6:
		return Input{Clipboard: true}, true
	case 255: // QEMU extended key event: down-flag at 2-3
		return Input{Key: true, KeyDown: m[2] != 0 || m[3] != 0}, true
	}
	return Input{}, false
}

// messageLen returns a client message's full length (0 while its header is
// incomplete) and whether it is input a view-only viewer may not send.
func messageLen(b []byte) (int, bool, error) {
	have := func(n int) bool { return len(b) >= n }
	switch t := b[0]; t {
	case 0: // SetPixelFormat
		return 20, false, nil
	case 2: // SetEncodings
		if !have(4) {
			return 0, false, nil
		}
		return 4 + 4*int(binary.BigEndian.Uint16(b[2:4])), false, nil
	case 3: // FramebufferUpdateRequest
		return 10, false, nil
	case 4: // KeyEvent
		return 8, true, nil
	case 5: // PointerEvent
		return 6, true, nil
	case 6: // ClientCutText (negative length: extended clipboard)
		if !have(8) {
			return 0, false, nil
		}
		n := int64(int32(binary.BigEndian.Uint32(b[4:8])))
		if n < 0 {
			n = -n
		}
		if n > maxCutText {
			return 0, false, fmt.Errorf("clipboard message of %d bytes is over the %d limit", n, maxCutText)
		}
		return 8 + int(n), true, nil
	case 150: // EnableContinuousUpdates
		return 10, false, nil
	case 248: // ClientFence
		if !have(9) {
			return 0, false, nil
		}
		if b[8] > 64 {
			return 0, false, fmt.Errorf("fence payload of %d bytes is over 64", b[8])
		}
		return 9 + int(b[8]), false, nil
	case 251: // SetDesktopSize: changes the guest's resolution
		if !have(8) {
			return 0, false, nil
		}
		return 8 + 16*int(b[6]), true, nil
	case 255: // QEMU client message
		if !have(2) {
			return 0, false, nil
		}
		switch b[1] {
		case 0: // extended key event
			return 12, true, nil
		case 1: // audio
			if !have(4) {
				return 0, false, nil
			}
			switch op := binary.BigEndian.Uint16(b[2:4]); op {
			case 0, 1:
				return 4, false, nil
			case 2:
				return 10, false, nil
			default:
				return 0, false, fmt.Errorf("unknown QEMU audio operation %d", op)
			}
		}
		return 0, false, fmt.Errorf("unknown QEMU client message %d", b[1])
	default:
		return 0, false, fmt.Errorf("unknown RFB client message type %d", t)
	}
}
