package console

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// A client stream as noVNC sends it to QEMU: handshake, then a mix of
// display requests and input.
func recordedStream() (stream []byte, display [][]byte, input [][]byte) {
	be := binary.BigEndian
	msg := func(parts ...any) []byte {
		var b bytes.Buffer
		for _, p := range parts {
			binary.Write(&b, be, p)
		}
		return b.Bytes()
	}
	handshake := [][]byte{[]byte("RFB 003.008\n"), {1}, {0}} // None, exclusive (forced shared)
	setEnc := msg(uint8(2), uint8(0), uint16(3), int32(7), int32(0), int32(-223))
	pixfmt := append(msg(uint8(0), uint8(0), uint16(0)), make([]byte, 16)...)
	fbur := msg(uint8(3), uint8(1), uint16(0), uint16(0), uint16(1280), uint16(800))
	fence := msg(uint8(248), [3]byte{}, uint32(1<<31), uint8(3), []byte("abc"))
	cont := msg(uint8(150), uint8(1), uint16(0), uint16(0), uint16(1280), uint16(800))
	key := msg(uint8(4), uint8(1), uint16(0), uint32('a'))
	ptr := msg(uint8(5), uint8(1), uint16(10), uint16(20))
	cut := msg(uint8(6), [3]byte{}, uint32(5), []byte("hello"))
	extCut := msg(uint8(6), [3]byte{}, int32(-4), uint32(1))
	qkey := msg(uint8(255), uint8(0), uint16(1), uint32('a'), uint32(30))
	resize := msg(uint8(251), uint8(0), uint16(1024), uint16(768), uint8(1), uint8(0), make([]byte, 16))
	display = [][]byte{setEnc, pixfmt, fbur, fence, cont}
	input = [][]byte{key, ptr, cut, extCut, qkey, resize}
	for _, h := range handshake {
		stream = append(stream, h...)
	}
	for i := range 6 {
		if i < len(display) {
			stream = append(stream, display[i]...)
		}
		stream = append(stream, input[i]...)
	}
	return stream, display, input
}

func feedAll(t *testing.T, f *Filter, stream []byte, chunk int) []byte {
	t.Helper()
	var out []byte
	for len(stream) > 0 {
		n := min(chunk, len(stream))
		b, err := f.Feed(bytes.Clone(stream[:n]))
		if err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		out = append(out, b...)
		stream = stream[n:]
	}
	return out
}

func TestFilterForwardsEverythingWhenInteractive(t *testing.T) {
	stream, _, _ := recordedStream()
	want := bytes.Clone(stream)
	want[13] = 1 // the shared flag is forced on
	for _, chunk := range []int{1, 3, 7, 64, len(stream)} {
		f := &Filter{}
		if got := feedAll(t, f, stream, chunk); !bytes.Equal(got, want) {
			t.Errorf("chunk %d: forwarded %d bytes, want %d", chunk, len(got), len(want))
		}
		if f.Dropped != 0 {
			t.Errorf("chunk %d: dropped %d", chunk, f.Dropped)
		}
	}
}

func TestFilterDropsInputWhenViewOnly(t *testing.T) {
	stream, display, input := recordedStream()
	want := []byte("RFB 003.008\n\x01\x01")
	for _, d := range display {
		want = append(want, d...)
	}
	for _, chunk := range []int{1, 5, len(stream)} {
		f := &Filter{ViewOnly: true}
		if got := feedAll(t, f, stream, chunk); !bytes.Equal(got, want) {
			t.Errorf("chunk %d: forwarded %x\nwant %x", chunk, got, want)
		}
		if f.Dropped != len(input) {
			t.Errorf("chunk %d: dropped %d messages, want %d", chunk, f.Dropped, len(input))
		}
	}
}

func TestFilterRFB33SkipsSecuritySelection(t *testing.T) {
	f := &Filter{ViewOnly: true}
	out := feedAll(t, f, []byte("RFB 003.003\n\x00\x04\x01\x00\x00\x00\x00\x00\x41"), 100)
	if string(out) != "RFB 003.003\n\x01" || f.Dropped != 1 {
		t.Errorf("forwarded %q, dropped %d", out, f.Dropped)
	}
}

func TestFilterRejectsGarbage(t *testing.T) {
	for name, stream := range map[string]string{
		"http":             "GET / HTTP/1.1\r\n",
		"bad security":     "RFB 003.008\n\x02",
		"unknown message":  "RFB 003.008\n\x01\x01\x07",
		"huge clipboard":   "RFB 003.008\n\x01\x01\x06\x00\x00\x00\x7f\xff\xff\xff",
		"unknown qemu msg": "RFB 003.008\n\x01\x01\xff\x09",
		"big fence":        "RFB 003.008\n\x01\x01\xf8\x00\x00\x00\x00\x00\x00\x00\xff",
	} {
		f := &Filter{}
		var err error
		for i := 0; i < len(stream) && err == nil; i++ {
			_, err = f.Feed([]byte{stream[i]})
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty error", name)
		}
	}
}

func FuzzFilter(f *testing.F) {
	stream, _, _ := recordedStream()
	f.Add(stream, true)
	f.Add([]byte("RFB 003.003\n\x01\x04\x01\x00\x00"), false)
	f.Fuzz(func(t *testing.T, b []byte, viewOnly bool) {
		whole := &Filter{ViewOnly: viewOnly}
		out1, err1 := whole.Feed(bytes.Clone(b))
		split := &Filter{ViewOnly: viewOnly}
		var out2 []byte
		var err2 error
		for i := 0; i < len(b) && err2 == nil; i++ {
			var o []byte
			o, err2 = split.Feed([]byte{b[i]})
			out2 = append(out2, o...)
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("whole err %v, byte by byte err %v", err1, err2)
		}
		if err1 == nil && !bytes.Equal(out1, out2) {
			t.Fatalf("whole forwarded %x, byte by byte %x", out1, out2)
		}
		if len(out1) > len(b) {
			t.Fatalf("forwarded more than it got")
		}
	})
}

// The Input hook sees each input message of a viewer that may type, says
// what it is, and drops those it refuses; display messages and resizes
// are never asked about.
func TestFilterInputHook(t *testing.T) {
	stream, display, input := recordedStream()
	var seen []Input
	f := &Filter{Input: func(in Input) bool {
		seen = append(seen, in)
		return !in.Key // keys refused: someone else holds the input
	}}
	out := feedAll(t, f, stream, 5)
	want := []Input{{Key: true, KeyDown: true}, {Pointer: true, Buttons: 1}, {Clipboard: true}, {Clipboard: true}, {Key: true, KeyDown: true}}
	if len(seen) != len(want) {
		t.Fatalf("hook saw %+v, want %+v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("input %d: %+v, want %+v", i, seen[i], want[i])
		}
	}
	for _, m := range display {
		if !bytes.Contains(out, m) {
			t.Errorf("display message %v dropped", m[:1])
		}
	}
	if bytes.Contains(out, input[0]) || bytes.Contains(out, input[4]) {
		t.Error("a refused key reached the server")
	}
	for _, i := range []int{1, 2, 5} { // pointer, clipboard, resize
		if !bytes.Contains(out, input[i]) {
			t.Errorf("input %d was dropped", i)
		}
	}
	if f.Dropped != 2 {
		t.Errorf("dropped %d, want 2", f.Dropped)
	}
	// A view-only viewer's input is dropped before the hook is asked.
	seen = nil
	f = &Filter{ViewOnly: true, Input: func(in Input) bool { seen = append(seen, in); return true }}
	feedAll(t, f, stream, 64)
	if len(seen) != 0 {
		t.Errorf("view-only input reached the hook: %+v", seen)
	}
}
