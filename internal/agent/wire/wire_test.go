package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestHeaderAndFrameRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHeader(&b, Request{Op: OpExec, Argv: []string{"a", "b c"}, Stdin: true}); err != nil {
		t.Fatal(err)
	}
	WriteFrame(&b, FrameStdout, []byte("hello"))
	WriteFrame(&b, FrameEnd, nil)
	var req Request
	if err := ReadHeader(&b, &req); err != nil || req.Op != OpExec || len(req.Argv) != 2 || !req.Stdin {
		t.Fatalf("%+v %v", req, err)
	}
	k, p, err := ReadFrame(&b, nil)
	if err != nil || k != FrameStdout || string(p) != "hello" {
		t.Fatalf("%d %q %v", k, p, err)
	}
	if k, p, err = ReadFrame(&b, p); err != nil || k != FrameEnd || len(p) != 0 {
		t.Fatalf("%d %q %v", k, p, err)
	}
	if _, _, err := ReadFrame(&b, nil); err != io.EOF {
		t.Fatalf("clean end: %v", err)
	}
}

func TestLimitsAndCuts(t *testing.T) {
	big := []byte{0xff, 0xff, 0xff, 0xff}
	var req Request
	if err := ReadHeader(bytes.NewReader(big), &req); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge header: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader(append([]byte{1}, big...)), nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge frame: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0, 0, 0, 9, 'x'}), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut frame: %v", err)
	}
	if err := ReadHeader(bytes.NewReader([]byte{0, 0, 0, 3, '{', '}', '}'}), &req); err == nil {
		t.Error("bad JSON accepted")
	}
	if err := WriteFrame(io.Discard, FrameData, make([]byte, MaxFrame+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized frame written: %v", err)
	}
}

// The handshake skips stale bytes, overlong lines and old nonces, and
// leaves what follows it for yamux.
func TestHandshakeThroughStaleBytes(t *testing.T) {
	host, guest := net.Pipe()
	defer host.Close()
	defer guest.Close()
	info := Info{SHA256: "abc123", Version: "v1"}
	type acc struct {
		r   io.Reader
		err error
	}
	accepted := make(chan acc, 1)
	go func() {
		// Stale traffic from an earlier connection reaches the guest first.
		r, err := Accept(struct {
			io.Reader
			io.Writer
		}{io.MultiReader(bytes.NewReader(append(bytes.Repeat([]byte("z"), 5000), "\nBUREAU-START old\n"...)), guest), guest}, info)
		if err == nil {
			// The stale START started a session that the new HELLO ends.
			r, err = Accept(struct {
				io.Reader
				io.Writer
			}{r, guest}, info)
		}
		if err == nil {
			_, err = guest.Write([]byte("after"))
		}
		accepted <- acc{r, err}
	}()
	// Bureau first reads the GO meant for the old connection.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, r, err := Dial(ctx, host, "n1", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got != info {
		t.Errorf("info %+v", got)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(r, b); err != nil || string(b) != "after" {
		t.Errorf("after handshake: %q %v", b, err)
	}
	if a := <-accepted; a.err != nil {
		t.Fatal(a.err)
	}
}

func TestDialGivesUpWithContext(t *testing.T) {
	host, guest := net.Pipe()
	defer guest.Close()
	go io.Copy(io.Discard, guest) // nobody answers
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := Dial(ctx, host, "n", 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent agent: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{9, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			k, p, err := ReadFrame(r, nil)
			if err != nil {
				return
			}
			var out bytes.Buffer
			if err := WriteFrame(&out, k, p); err != nil {
				t.Fatalf("a frame read cannot be written back: %v", err)
			}
		}
	})
}

func FuzzReadHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 13, '{', '"', 'o', 'p', '"', ':', '"', 'e', 'x', 'e', 'c', '"', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var req Request
		ReadHeader(bytes.NewReader(b), &req)
	})
}

func FuzzHandshakeLines(f *testing.F) {
	f.Add([]byte("BUREAU-HELLO x\nBUREAU-START x\n"))
	f.Add([]byte("\n\n\nBUREAU-HELLO\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		Accept(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(b), &out}, Info{SHA256: "h", Version: "v"})
		if out.Len() > 4*len(b)+64 {
			t.Fatalf("%d bytes answered to %d", out.Len(), len(b))
		}
	})
}
