package guest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// clipAgent answers every command with out and records the last one.
type clipAgent struct {
	*fakeAgent
	out   string
	argv  []string
	stdin []byte
}

func (c *clipAgent) GuestExec(_ context.Context, _ string, e desktop.Exec) (*desktop.ExecResult, error) {
	c.argv, c.stdin = e.Argv, e.Stdin
	return &desktop.ExecResult{Stdout: []byte(c.out)}, nil
}

func TestReadClipboardListsTypesAndText(t *testing.T) {
	a := &clipAgent{fakeAgent: newFakeAgent(), out: "TIMESTAMP\nTARGETS\nUTF8_STRING\nSTRING\nimage/png\ntext/html\n\nhello\nworld"}
	s := New(a)
	cb, err := s.ReadClipboard(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if cb.Text != "hello\nworld" || !slices.Equal(cb.Types, []string{"text/plain", "image/png", "text/html"}) {
		t.Errorf("got %+v", cb)
	}
	// Nothing copied yet: no types, no text.
	a.out = "\n\n"
	if cb, err := s.ReadClipboard(context.Background(), "d"); err != nil || cb.Text != "" || len(cb.Types) != 0 {
		t.Errorf("empty clipboard: %+v %v", cb, err)
	}
	// A type the clipboard does not offer is not found.
	a.out = "TARGETS\nUTF8_STRING\n\nhi"
	if _, err := s.ClipboardData(context.Background(), "d", "image/png"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("absent image: %v", err)
	}
	var ve *desktop.ValidationError
	if _, err := s.ClipboardData(context.Background(), "d", "application/x-evil"); !errors.As(err, &ve) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestSetClipboardDataChecksWhatItIsGiven(t *testing.T) {
	a := &clipAgent{fakeAgent: newFakeAgent()}
	s := New(a)
	png := append([]byte("\x89PNG\r\n\x1a\n"), 1, 2, 3)
	if err := s.SetClipboardData(context.Background(), "d", "image/png", png); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.stdin, png) || a.argv[len(a.argv)-1] != "image/png" {
		t.Errorf("ran %q with %d bytes", a.argv, len(a.stdin))
	}
	var ve *desktop.ValidationError
	for name, c := range map[string]struct {
		mime string
		data []byte
	}{
		"not a PNG":    {"image/png", []byte("GIF89a")},
		"unknown type": {"image/gif", []byte("GIF89a")},
		"too large":    {"image/png", append(png, make([]byte, maxClipboardData)...)},
	} {
		a.argv = nil
		if err := s.SetClipboardData(context.Background(), "d", c.mime, c.data); !errors.As(err, &ve) || a.argv != nil {
			t.Errorf("%s: %v (ran %q)", name, err, a.argv)
		}
	}
}
