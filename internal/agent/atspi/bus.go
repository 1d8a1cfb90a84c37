// Package atspi reads and drives a desktop's accessibility tree over
// AT-SPI2: the session bus names the accessibility bus (org.a11y.Bus),
// where the registry lists the applications and each application serves
// its accessible objects (org.a11y.atspi.Accessible, Component, Action,
// Value, Text, EditableText).
//
// bureau-agent runs as root and the accessibility bus is the session
// user's, so the agent runs this package in a short-lived child of its
// own running as that user (Serve, the "ui-helper" subcommand).
package atspi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/godbus/dbus/v5"
)

// Well-known names and paths of AT-SPI2.
const (
	registryName = "org.a11y.atspi.Registry"
	rootPath     = "/org/a11y/atspi/accessible/root"
	nullPath     = "/org/a11y/atspi/null"

	ifAccessible = "org.a11y.atspi.Accessible"
	ifComponent  = "org.a11y.atspi.Component"
	ifAction     = "org.a11y.atspi.Action"
	ifValue      = "org.a11y.atspi.Value"
	ifText       = "org.a11y.atspi.Text"
	ifEditable   = "org.a11y.atspi.EditableText"
)

// obj is one accessible object: the application's name on the
// accessibility bus (its unique name, never reused while the bus lives)
// and the object's path there.
type obj struct {
	bus  string
	path string
}

// bus is the accessibility bus as the walk uses it. Its errors are
// errNoApp, errNoObject, errNoInterface or errSlow when the bus says so.
type bus interface {
	// call calls method ("interface.Member") on o and stores the reply's
	// values in out (pointers, as dbus.Store takes them).
	call(ctx context.Context, o obj, method string, args []any, out ...any) error
	// props reads all the properties of iface on o.
	props(ctx context.Context, o obj, iface string) (map[string]any, error)
	setProp(ctx context.Context, o obj, iface, name string, v any) error
	// hasOwner says whether a name has an owner on the bus.
	hasOwner(ctx context.Context, name string) (bool, error)
}

var (
	// errNoApp: the application left the bus.
	errNoApp = errors.New("the application is no longer there")
	// errNoObject: the application no longer has the object.
	errNoObject = errors.New("the object is no longer there")
	// errNoInterface: the object does not implement what was asked.
	errNoInterface = errors.New("the object does not implement this")
	// errSlow: the application did not answer in time.
	errSlow = errors.New("the application did not answer in time")
)

// dbusBus is bus over a godbus connection to the accessibility bus.
type dbusBus struct{ c *dbus.Conn }

func (b dbusBus) call(ctx context.Context, o obj, method string, args []any, out ...any) error {
	c := b.c.Object(o.bus, dbus.ObjectPath(o.path)).CallWithContext(ctx, method, 0, args...)
	if c.Err != nil {
		return busError(ctx, method, c.Err)
	}
	if err := c.Store(out...); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

func (b dbusBus) props(ctx context.Context, o obj, iface string) (map[string]any, error) {
	var m map[string]dbus.Variant
	if err := b.call(ctx, o, "org.freedesktop.DBus.Properties.GetAll", []any{iface}, &m); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v.Value()
	}
	return out, nil
}

func (b dbusBus) setProp(ctx context.Context, o obj, iface, name string, v any) error {
	return b.call(ctx, o, "org.freedesktop.DBus.Properties.Set", []any{iface, name, dbus.MakeVariant(v)})
}

func (b dbusBus) hasOwner(ctx context.Context, name string) (bool, error) {
	var ok bool
	c := b.c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name)
	if c.Err != nil {
		return false, busError(ctx, "NameHasOwner", c.Err)
	}
	return ok, c.Store(&ok)
}

// busError sorts the bus's errors into the kinds the walk tells apart.
func busError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", method, errSlow)
	}
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
			return fmt.Errorf("%s: %w", method, errNoApp)
		case "org.freedesktop.DBus.Error.UnknownObject":
			return fmt.Errorf("%s: %w", method, errNoObject)
		case "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface":
			return fmt.Errorf("%s: %w", method, errNoInterface)
		case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout":
			return fmt.Errorf("%s: %w", method, errSlow)
		}
		return fmt.Errorf("%s: %s: %s", method, de.Name, strings.TrimSpace(fmt.Sprint(de.Body...)))
	}
	return fmt.Errorf("%s: %w", method, err)
}

// Dial reaches the accessibility bus through the session bus at
// sessionAddr. Both connections end with ctx.
func Dial(ctx context.Context, sessionAddr string) (*dbus.Conn, error) {
	sess, err := dbus.Connect(sessionAddr, dbus.WithContext(ctx))
	if err != nil {
		return nil, &Error{Code: wire.CodeUnavailable, Msg: fmt.Sprintf("the desktop session's D-Bus (%s) does not answer (is the session up?): %v", sessionAddr, err)}
	}
	defer sess.Close()
	var addr string
	err = sess.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr)
	if err != nil {
		return nil, &Error{Code: wire.CodeUnavailable, Msg: "the session has no accessibility bus (org.a11y.Bus; the image needs at-spi2-core): " + err.Error()}
	}
	c, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, &Error{Code: wire.CodeUnavailable, Msg: fmt.Sprintf("the accessibility bus %s does not answer: %v", addr, err)}
	}
	return c, nil
}
