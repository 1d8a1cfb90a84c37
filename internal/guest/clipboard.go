package guest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Clipboard limits: text, and data of the other types.
const (
	maxClipboard     = 1 << 20
	maxClipboardData = 4 << 20
)

// ClipboardTypes are the types other than text the API moves; each is
// checked by its signature before it reaches the guest.
var ClipboardTypes = map[string][]byte{
	"image/png":  []byte("\x89PNG\r\n\x1a\n"),
	"image/jpeg": []byte("\xff\xd8\xff"),
}

// Clipboard is what the X session's clipboard holds.
type Clipboard struct {
	// Text is the clipboard as text ("" when it holds none).
	Text string `json:"text"`
	// Types lists what the clipboard offers as MIME types (text/plain,
	// image/png, text/html…); empty when nothing was copied.
	Types []string `json:"types"`
}

// clipboardScript prints the clipboard's targets, a blank line, and its
// text when it offers text.
const clipboardScript = `xset q >/dev/null 2>&1 || { echo "Can't open display" >&2; exit 1; }
t=$(xclip -selection clipboard -t TARGETS -o 2>/dev/null)
printf '%s\n\n' "$t"
case "$t" in *UTF8_STRING*|*STRING*|*text/plain*) exec xclip -selection clipboard -o 2>/dev/null;; esac`

// ReadClipboard returns the X session's clipboard: its text and the types
// it offers.
func (s *Session) ReadClipboard(ctx context.Context, domain string) (*Clipboard, error) {
	r, err := s.x.run(ctx, domain, "", nil, "/bin/sh", "-c", clipboardScript)
	if err != nil {
		return nil, err
	}
	if r.ExitCode != 0 {
		return nil, sessionFailed("read the clipboard", r)
	}
	targets, text, _ := strings.Cut(string(r.Stdout), "\n\n")
	cb := &Clipboard{Text: text, Types: []string{}}
	textual := false
	for _, t := range strings.Fields(targets) {
		switch {
		case t == "UTF8_STRING" || t == "STRING" || t == "TEXT":
			textual = true
		case strings.Contains(t, "/") && !slices.Contains(cb.Types, t):
			cb.Types = append(cb.Types, t)
		}
	}
	if textual && !slices.Contains(cb.Types, "text/plain") {
		cb.Types = append([]string{"text/plain"}, cb.Types...)
	}
	return cb, nil
}

// ClipboardData returns the clipboard's content as mime (one of
// ClipboardTypes); ErrNotFound when it offers no such type.
func (s *Session) ClipboardData(ctx context.Context, domain, mime string) ([]byte, error) {
	if _, ok := ClipboardTypes[mime]; !ok {
		return nil, invalid("type", "must be one of "+clipboardTypeList())
	}
	cb, err := s.ReadClipboard(ctx, domain)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(cb.Types, mime) {
		return nil, fmt.Errorf("the clipboard holds no %s (it offers %s): %w", mime, orNothing(cb.Types), desktop.ErrNotFound)
	}
	r, err := s.x.run(ctx, domain, "", nil, "/usr/bin/xclip", "-selection", "clipboard", "-t", mime, "-o")
	if err != nil {
		return nil, err
	}
	if r.ExitCode != 0 {
		return nil, sessionFailed("read the clipboard", r)
	}
	if r.Truncated || len(r.Stdout) > maxClipboardData {
		return nil, invalid("type", fmt.Sprintf("the clipboard's %s is over %d MiB", mime, maxClipboardData>>20))
	}
	return r.Stdout, nil
}

// SetClipboard puts text on the X session's clipboard. xclip stays in the
// background to serve it, with its output detached so the guest agent
// sees the command end.
func (s *Session) SetClipboard(ctx context.Context, domain, text string) error {
	if len(text) > maxClipboard {
		return invalid("text", fmt.Sprintf("at most %d bytes", maxClipboard))
	}
	return s.setClipboard(ctx, domain, "", []byte(text))
}

// SetClipboardData puts data of a type (one of ClipboardTypes, which it
// must look like) on the X session's clipboard.
func (s *Session) SetClipboardData(ctx context.Context, domain, mime string, data []byte) error {
	magic, ok := ClipboardTypes[mime]
	switch {
	case !ok:
		return invalid("Content-Type", "must be application/json ({\"text\": …}) or one of "+clipboardTypeList())
	case len(data) > maxClipboardData:
		return invalid("body", fmt.Sprintf("at most %d MiB", maxClipboardData>>20))
	case !bytes.HasPrefix(data, magic):
		return invalid("body", "is not "+mime)
	}
	return s.setClipboard(ctx, domain, mime, data)
}

// setClipboard runs xclip as the clipboard's owner: for text with its
// default target (it serves UTF8_STRING and the older text targets),
// for other data with the type as its one target.
func (s *Session) setClipboard(ctx context.Context, domain, target string, data []byte) error {
	r, err := s.x.run(ctx, domain, "", data, "/bin/sh", "-c",
		`xset q >/dev/null || exit 1; exec xclip -selection clipboard ${1:+-t "$1"} -i >/dev/null 2>&1`, "sh", target)
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return sessionFailed("set the clipboard", r)
	}
	return nil
}

func clipboardTypeList() string {
	var ts []string
	for t := range ClipboardTypes {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return strings.Join(ts, ", ")
}

func orNothing(ts []string) string {
	if len(ts) == 0 {
		return "nothing"
	}
	return strings.Join(ts, ", ")
}
