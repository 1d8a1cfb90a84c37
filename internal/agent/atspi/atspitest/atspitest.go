// Package atspitest starts a real accessibility stack for tests: a session
// bus of its own (dbus-run-session), an X server (Xvfb), and a small GTK3
// window (testdata/uiapp.py) whose start activates the accessibility bus
// (at-spi-bus-launcher and the registry). A test without those programs
// is skipped, saying which one is missing; scripts/host-setup.sh installs
// them with BUREAU_SETUP_TESTS=1.
package atspitest

import (
	"context"
	_ "embed"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/testproc"
)

//go:embed testdata/uiapp.py
var uiApp []byte

// The window uiapp.py shows, and the screen Xvfb makes.
const (
	WindowTitle  = "bureau ui test"
	ScreenWidth  = 1024
	ScreenHeight = 768
)

// Session is a running stack.
type Session struct {
	// Bus is the session bus's address; Display the X display.
	Bus     string
	Display string
	app     *testproc.Process
}

// Start starts the stack, or skips the test when a program it needs is
// missing. Everything is stopped when the test ends.
func Start(t *testing.T) *Session {
	t.Helper()
	python := "/usr/bin/python3"
	for _, p := range []string{"dbus-run-session", "Xvfb", "/usr/libexec/at-spi-bus-launcher", python} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (apt-get install xvfb at-spi2-core dbus-x11 python3-gi gir1.2-gtk-3.0)", p)
		}
	}
	if out, err := exec.Command(python, "-c", `import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk`).CombinedOutput(); err != nil {
		t.Skipf("python3 has no GTK 3 (apt-get install python3-gi gir1.2-gtk-3.0): %s", strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	// The accessibility bus's socket goes to $XDG_RUNTIME_DIR/at-spi: one
	// for this test alone.
	runtime := filepath.Join(dir, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_RUNTIME_DIR=" + runtime, "NO_AT_BRIDGE=", "GTK_A11Y=", "LANG=C.UTF-8"}
	s := &Session{}
	bus := start(t, dir, "dbus", env, "dbus-run-session", "--", "sh", "-c", `echo "BUS=$DBUS_SESSION_BUS_ADDRESS"; exec sleep 3600`)
	line, err := waitLine(bus, "BUS=", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Bus = strings.TrimPrefix(line, "BUS=")
	s.Display = startX(t, dir, env)
	script := filepath.Join(dir, "uiapp.py")
	if err := os.WriteFile(script, uiApp, 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(env, "DISPLAY="+s.Display, "DBUS_SESSION_BUS_ADDRESS="+s.Bus, "PYTHONUNBUFFERED=1")
	s.app = start(t, dir, "uiapp", env, python, script)
	if _, err := waitLine(s.app, "ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}

// WaitLine waits until the window printed a line starting with prefix
// (its button prints "clicked", its entry "text=<its text>") and returns
// the last such line.
func (s *Session) WaitLine(prefix string, within time.Duration) (string, error) {
	return waitLine(s.app, prefix, within)
}

// StopApp ends the window's application.
func (s *Session) StopApp() { s.app.Stop() }

// start starts a process, stopped when the test ends.
func start(t *testing.T, dir, name string, env []string, bin string, args ...string) *testproc.Process {
	t.Helper()
	p, err := testproc.Start(filepath.Join(dir, name+".log"), dir, env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// startX starts Xvfb on a display no other X server holds.
func startX(t *testing.T, dir string, env []string) string {
	t.Helper()
	for try := 0; try < 20; try++ {
		n := 100 + mrand.IntN(800)
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); err == nil {
			continue
		}
		display := fmt.Sprintf(":%d", n)
		x := start(t, dir, fmt.Sprintf("xvfb-%d", n), env, "Xvfb", display, "-screen", "0",
			fmt.Sprintf("%dx%dx24", ScreenWidth, ScreenHeight), "-nolisten", "tcp")
		socket := fmt.Sprintf("/tmp/.X11-unix/X%d", n)
		err := testproc.Ready(t.Context(), "Xvfb", display, x.Exited, time.Second, 50*time.Millisecond, func(context.Context) error {
			_, err := os.Stat(socket)
			return err
		})
		if err == nil {
			return display
		}
		x.Stop()
	}
	t.Fatal("no X display free for Xvfb")
	return ""
}

// waitLine waits for a line of p's log that starts with prefix.
func waitLine(p *testproc.Process, prefix string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile(p.Log)
		var found string
		for l := range strings.Lines(string(b)) {
			if l = strings.TrimRight(l, "\n"); strings.HasPrefix(l, prefix) {
				found = l
			}
		}
		if found != "" {
			return found, nil
		}
		select {
		case <-p.Exited:
			return "", fmt.Errorf("%s exited before printing %q%s", filepath.Base(p.Log), prefix, p.Tail())
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no %q from %s within %s%s", prefix, filepath.Base(p.Log), within, p.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
