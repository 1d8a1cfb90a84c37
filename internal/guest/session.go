package guest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Session is what runs in the user's X session: windows, apps, the
// accessibility tree, the clipboard and the screen resolution.
type Session struct {
	x *core
	// procs starts an app as a background process and watches it.
	procs *Background
	// appDirs are where apps' .desktop files are looked for (nil:
	// appDirs, apps_probe.go).
	appDirs []string
}

// sessionFailed explains a failure to reach the user's X session.
func sessionFailed(what string, r *desktop.ExecResult) error {
	msg := strings.TrimSpace(string(r.Stderr))
	if strings.Contains(msg, "Can't open display") || strings.Contains(msg, "cannot open display") || strings.Contains(msg, "unable to open display") {
		return fmt.Errorf("%s: the desktop session is not up yet: %w", what, desktop.ErrUnavailable)
	}
	return fmt.Errorf("%s in the guest failed (exit %d): %s", what, r.ExitCode, msg)
}

// Resolution limits.
const (
	minWidth, maxWidth   = 640, 3840
	minHeight, maxHeight = 480, 2160
)

// resolutionScript switches the first connected output to $1x$2, adding
// the mode (from cvt) when the driver does not offer it.
const resolutionScript = `out=$(xrandr | awk '/ connected/{print $1; exit}')
[ -n "$out" ] || { echo "no connected output" >&2; exit 1; }
mode="$1x$2"
if ! xrandr | grep -q "^ *$mode "; then
  line=$(cvt "$1" "$2" 60 | sed -n 's/^Modeline "[^"]*" *//p')
  xrandr --newmode "$mode" $line 2>/dev/null
  xrandr --addmode "$out" "$mode" || exit 1
fi
xrandr --output "$out" --mode "$mode"`

// SetResolution changes the X session's screen size.
func (s *Session) SetResolution(ctx context.Context, domain string, w, h int) error {
	if w < minWidth || w > maxWidth || h < minHeight || h > maxHeight {
		return invalid("width", fmt.Sprintf("width must be %d..%d and height %d..%d", minWidth, maxWidth, minHeight, maxHeight))
	}
	r, err := s.x.run(ctx, domain, "", nil, "/bin/sh", "-c", resolutionScript, "sh", fmt.Sprint(w), fmt.Sprint(h))
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return sessionFailed("change the resolution", r)
	}
	return nil
}
