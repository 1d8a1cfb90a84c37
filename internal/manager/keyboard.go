package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// layoutScript sets the guest's keyboard layout to $1 for the X server's
// next start (an xorg.conf.d snippet, as the seed writes at first boot) and
// for the session running now (setxkbmap as the desktop's user). It exits 3
// when the guest has no such XKB layout.
const layoutScript = `set_layout() {
	[ -e "/usr/share/X11/xkb/symbols/$1" ] || { echo "the guest has no XKB layout $1" >&2; return 3; }
	mkdir -p /etc/X11/xorg.conf.d
	printf 'Section "InputClass"\n\tIdentifier "bureau keyboard"\n\tMatchIsKeyboard "on"\n\tOption "XkbLayout" "%s"\nEndSection\n' "$1" > /etc/X11/xorg.conf.d/00-bureau-keyboard.conf
	if [ -f /etc/default/keyboard ]; then sed -i "s/^XKBLAYOUT=.*/XKBLAYOUT=\"$1\"/" /etc/default/keyboard; fi
	if pgrep -x Xorg >/dev/null; then su agent -c "DISPLAY=:0 setxkbmap $1"; fi
}
`

// errNoLayout is a layout the guest does not have.
var errNoLayout = errors.New("no such layout in the guest")

// SetKeyboardLayout changes a running desktop's keyboard layout, in the
// guest at once and for its next boots (identities.SetKeyboardLayout).
func (m *Manager) SetKeyboardLayout(ctx context.Context, id, layout, actor string) (*desktop.Desktop, error) {
	return m.ident.SetKeyboardLayout(ctx, id, layout, actor)
}

// SetKeyboardLayout changes a running desktop's keyboard layout, in the
// guest at once and for its next boots; typing follows it.
func (n *identities) SetKeyboardLayout(ctx context.Context, id, layout, actor string) (*desktop.Desktop, error) {
	if err := desktop.ValidateKeyboardLayout(layout); err != nil {
		return nil, err
	}
	d, err := n.ops.changeSettings(ctx, id, func(ctx context.Context, d *desktop.Desktop) error {
		if d.State != desktop.StateRunning {
			return &desktop.TransitionError{Op: "change the keyboard layout of", State: d.State}
		}
		if err := n.applyLayout(ctx, d.DomainName(), layout); err != nil {
			return err
		}
		d.KeyboardLayout = layout
		return nil
	})
	if err != nil {
		return nil, err
	}
	n.ops.event(ctx, id, "keyboard_layout_set", actor, "keyboard layout set to %s", layout)
	return d, nil
}

// applyLayout runs layoutScript in the guest.
func (n *identities) applyLayout(ctx context.Context, domain, layout string) error {
	res, err := n.vms.GuestExec(ctx, domain, desktop.Exec{Argv: []string{"/bin/sh", "-c", layoutScript + `set_layout "$1"`, "sh", layout}})
	if err != nil {
		return fmt.Errorf("setting the keyboard layout in the guest: %w", err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case 3:
		return &desktop.ValidationError{Field: "keyboard_layout", Message: fmt.Sprintf("%q: %v", layout, errNoLayout)}
	}
	return fmt.Errorf("setting the keyboard layout in the guest: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}

// layoutOf is d's keyboard layout (desktops recorded before layouts: us).
func layoutOf(d *desktop.Desktop) string {
	if d.KeyboardLayout == "" {
		return desktop.DefaultKeyboardLayout
	}
	return d.KeyboardLayout
}
