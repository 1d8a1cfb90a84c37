package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// xvfb starts an X server of its own (Xvfb, skipped when it is not
// installed) that takes only the cookie in the Xauthority file it
// returns, which also holds a wrong cookie first.
func xvfb(t *testing.T) (display, authFile string) {
	t.Helper()
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed (apt-get install xvfb)")
	}
	n := 0
	for i := 90; i < 190 && n == 0; i++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", i)); os.IsNotExist(err) {
			if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", i)); os.IsNotExist(err) {
				n = i
			}
		}
	}
	if n == 0 {
		t.Skip("no free X display number")
	}
	display = fmt.Sprintf(":%d", n)
	host, _ := os.Hostname()
	good, bad := make([]byte, 16), make([]byte, 16)
	rand.Read(good)
	rand.Read(bad)
	var b bytes.Buffer
	writeXauth(&b, []xauthEntry{
		{family: xauthWild, number: fmt.Sprint(n), name: cookieAuth, data: bad},
		{family: xauthLocal, address: host, number: "7", name: cookieAuth, data: bad[:8]}, // not for us
		{family: xauthLocal, address: host, number: fmt.Sprint(n), name: cookieAuth, data: good},
	})
	authFile = filepath.Join(t.TempDir(), "Xauthority")
	// Xvfb reads the file as the server's list: the bad cookie must not
	// be in it.
	serverAuth := filepath.Join(t.TempDir(), "server")
	var sb bytes.Buffer
	writeXauth(&sb, []xauthEntry{{family: xauthLocal, address: host, number: fmt.Sprint(n), name: cookieAuth, data: good}})
	if err := os.WriteFile(authFile, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(serverAuth, sb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, display, "-auth", serverAuth, "-screen", "0", "1024x768x24", "-nolisten", "tcp")
	if err := cmd.Start(); err != nil {
		t.Skipf("Xvfb does not start: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Xvfb did not come up")
		}
	}
	return display, authFile
}

func testX11(display string, files ...string) *x11Windows {
	x := newX11Windows(display, slog.New(slog.DiscardHandler))
	x.authFiles = func(string) []string { return files }
	return x
}

// fakeClients creates windows with the hints an app and a window manager
// would set, and lists them on the root as a window manager does.
type fakeClients struct {
	t *testing.T
	c *xconn
}

func (f fakeClients) prop(w xproto.Window, name string, typ xproto.Atom, format byte, data []byte) {
	f.t.Helper()
	atom := f.atom(name)
	n := uint32(len(data)) / uint32(format/8)
	if err := xproto.ChangePropertyChecked(f.c.x, xproto.PropModeReplace, w, atom, typ, format, n, data).Check(); err != nil {
		f.t.Fatal(name, err)
	}
}

func (f fakeClients) atom(name string) xproto.Atom {
	switch name {
	case "WM_NAME":
		return xproto.AtomWmName
	case "WM_CLASS":
		return xproto.AtomWmClass
	}
	r, err := xproto.InternAtom(f.c.x, false, uint16(len(name)), name).Reply()
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Atom
}

func card32(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		xgb.Put32(b[4*i:], v)
	}
	return b
}

func (f fakeClients) window(x, y, w, h int) xproto.Window {
	f.t.Helper()
	id, err := xproto.NewWindowId(f.c.x)
	if err != nil {
		f.t.Fatal(err)
	}
	err = xproto.CreateWindowChecked(f.c.x, 0, id, f.c.root, int16(x), int16(y), uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, 0, 0, nil).Check()
	if err == nil {
		err = xproto.MapWindowChecked(f.c.x, id).Check()
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// TestX11WindowsOnXvfb reads and moves real X windows. Xvfb runs no
// window manager: the test sets the hints one would, and what needs one
// to act (focus, minimize, maximize, close) is left to the e2e tests.
func TestX11WindowsOnXvfb(t *testing.T) {
	display, auth := xvfb(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if _, err := testX11(display).session(ctx); !errors.Is(err, ErrNoSession) {
		t.Fatalf("without the cookie: %v", err)
	}
	x := testX11(display, "/nonexistent", auth)
	if _, _, err := x.List(ctx); err != nil {
		t.Fatalf("with the cookie: %v", err)
	}
	app := testX11(display, auth)
	c, err := app.session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := fakeClients{t, c}
	utf8, cardinal := f.atom("UTF8_STRING"), xproto.Atom(xproto.AtomCardinal)

	notes := f.window(100, 130, 640, 480)
	f.prop(notes, "_NET_WM_NAME", utf8, 8, []byte("Notes — ünïcode"))
	f.prop(notes, "WM_NAME", xproto.AtomString, 8, []byte("ignored"))
	f.prop(notes, "WM_CLASS", xproto.AtomString, 8, []byte("mousepad\x00Mousepad\x00"))
	f.prop(notes, "_NET_WM_PID", cardinal, 32, card32(4242))
	f.prop(notes, "_NET_WM_DESKTOP", cardinal, 32, card32(1))
	f.prop(notes, "_NET_FRAME_EXTENTS", cardinal, 32, card32(2, 2, 30, 2))

	old := f.window(0, 0, 300, 200)
	f.prop(old, "WM_NAME", xproto.AtomString, 8, []byte("caf\xe9"))
	f.prop(old, "_NET_WM_DESKTOP", cardinal, 32, card32(0xFFFFFFFF))
	f.prop(old, "_NET_WM_STATE", xproto.AtomAtom, 32, card32(uint32(f.atom("_NET_WM_STATE_MAXIMIZED_VERT")),
		uint32(f.atom("_NET_WM_STATE_HIDDEN")), uint32(f.atom("_NET_WM_STATE_MAXIMIZED_HORZ"))))

	dock := f.window(0, 740, 1024, 28)
	f.prop(dock, "_NET_WM_WINDOW_TYPE", xproto.AtomAtom, 32, card32(uint32(f.atom("_NET_WM_WINDOW_TYPE_DOCK"))))

	f.prop(c.root, "_NET_CLIENT_LIST", xproto.AtomWindow, 32, card32(uint32(notes), uint32(old), uint32(dock)))
	f.prop(c.root, "_NET_ACTIVE_WINDOW", xproto.AtomWindow, 32, card32(uint32(old)))
	f.prop(c.root, "_NET_CURRENT_DESKTOP", cardinal, 32, card32(1))

	list, scr, err := x.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if scr != (wire.Screen{Width: 1024, Height: 768, Workspace: 1}) {
		t.Errorf("screen %+v", scr)
	}
	want := []wire.Window{
		{ID: wire.FormatWindowID(uint32(notes)), Title: "Notes — ünïcode", Class: "Mousepad", Instance: "mousepad", PID: 4242,
			X: 100, Y: 130, Width: 640, Height: 480, Frame: wire.Extents{Left: 2, Right: 2, Top: 30, Bottom: 2}, Workspace: 1},
		{ID: wire.FormatWindowID(uint32(old)), Title: "café", Width: 300, Height: 200, Focused: true, Minimized: true,
			Maximized: true, Workspace: -1},
	}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Errorf("windows:\n%+v\nwant\n%+v", list, want)
	}

	// Without a window manager a move is a ConfigureWindow, which the
	// server does at once, of the frame's corner: the window lands off by
	// the frame and the correction puts it right.
	ops := windowOps{ws: x, settle: time.Second, poll: 20 * time.Millisecond, still: 100 * time.Millisecond}
	px, py := 50, 60
	w, err := ops.act(ctx, wire.FormatWindowID(uint32(notes)), &wire.WindowAct{Action: "move", X: &px, Y: &py, Width: 320, Height: 240})
	if err != nil || w.X != 50 || w.Y != 60 || w.Width != 320 || w.Height != 240 {
		t.Errorf("move and resize: %+v %v", w, err)
	}
	w, err = ops.act(ctx, wire.FormatWindowID(uint32(notes)), &wire.WindowAct{Action: "resize", Width: 200, Height: 100})
	if err != nil || w.X != 50 || w.Width != 200 || w.Height != 100 {
		t.Errorf("resize: %+v %v", w, err)
	}

	// A window that is gone (or never was a client) is not found.
	if err := xproto.DestroyWindowChecked(c.x, notes).Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Window(ctx, uint32(notes)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destroyed window: %v", err)
	}
	if _, err := x.Window(ctx, uint32(c.root)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the root: %v", err)
	}
	if list, _, err := x.List(ctx); err != nil || len(list) != 1 {
		t.Errorf("after the destroy: %+v %v", list, err)
	}

	// A connection the server dropped is made again.
	x.conn.raw.Close()
	for deadline := time.Now().Add(5 * time.Second); !x.conn.dead.Load() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if list, _, err := x.List(ctx); err != nil || len(list) != 1 {
		t.Errorf("after a reconnect: %+v %v", list, err)
	}
}

func TestX11WithoutAServerIsNoSession(t *testing.T) {
	_, _, err := testX11(":189").List(context.Background())
	if !errors.Is(err, ErrNoSession) {
		t.Fatalf("%v", err)
	}
}

func TestXauthRoundTrip(t *testing.T) {
	in := []xauthEntry{
		{family: xauthLocal, address: "desk", number: "0", name: cookieAuth, data: bytes.Repeat([]byte{1}, 16)},
		{family: xauthWild, number: "", name: cookieAuth, data: bytes.Repeat([]byte{2}, 16)},
		{family: 0, address: "\x7f\x00\x00\x01", number: "0", name: cookieAuth, data: bytes.Repeat([]byte{3}, 16)},
		{family: xauthLocal, address: "desk", number: "1", name: cookieAuth, data: bytes.Repeat([]byte{4}, 16)},
		{family: xauthLocal, address: "desk", number: "0", name: "XDM-AUTHORIZATION-1", data: []byte{5}},
	}
	var b bytes.Buffer
	writeXauth(&b, in)
	b.WriteString("\x01") // a cut record at the end
	got := readXauth(&b)
	if fmt.Sprint(got) != fmt.Sprint(in) {
		t.Fatalf("%v\nwant %v", got, in)
	}
	path := filepath.Join(t.TempDir(), "xa")
	var w bytes.Buffer
	writeXauth(&w, in)
	os.WriteFile(path, w.Bytes(), 0o600)
	cookies := xCookies([]string{"/nonexistent", path, path}, "0", "desk")
	// This host's and the wildcard's first, then the other address's;
	// display 1's and the other protocol's not at all.
	if len(cookies) != 3 || cookies[0][0] != 1 || cookies[1][0] != 2 || cookies[2][0] != 3 {
		t.Errorf("cookies %v", cookies)
	}
}

func TestSetupRequestReplacesXGBs(t *testing.T) {
	cookie := bytes.Repeat([]byte{9}, 16)
	got := setupRequest(cookie)
	if len(got) != 12+20+16 || got[0] != 'l' || got[2] != 11 || got[6] != 18 || got[8] != 16 ||
		string(got[12:30]) != cookieAuth || !bytes.Equal(got[32:], cookie) {
		t.Errorf("% x", got)
	}
	if none := setupRequest(nil); len(none) != 12 {
		t.Errorf("no cookie: % x", none)
	}
	var sink bytes.Buffer
	a := &authConn{Conn: sinkConn{buf: &sink}, setup: got}
	if n, err := a.Write(setupRequest(nil)); n != 12 || err != nil {
		t.Fatal(n, err)
	}
	a.Write([]byte("next"))
	if !bytes.Equal(sink.Bytes(), append(got, "next"...)) {
		t.Errorf("sent % x", sink.Bytes())
	}
}

// sinkConn keeps what is written to it (nothing else of net.Conn is used).
type sinkConn struct {
	net.Conn
	buf *bytes.Buffer
}

func (s sinkConn) Write(p []byte) (int, error) { return s.buf.Write(p) }
