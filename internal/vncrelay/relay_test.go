package vncrelay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shPiper runs commands here with `sh -c` (or always run, if set).
type shPiper struct{ run string }

func (p shPiper) Pipe(ctx context.Context, cmd string) (net.Conn, error) {
	if p.run != "" {
		cmd = p.run
	}
	c := exec.Command("sh", "-c", cmd)
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cc := &cmdConn{cmd: c, stdin: stdin, stdout: stdout}
	c.Stderr = &cc.stderr
	if err := c.Start(); err != nil {
		return nil, err
	}
	return cc, nil
}

// cmdConn is a local command's stdin and stdout; at the end of its
// stdout, Read returns its failure with its stderr, as sshlink's Pipe.
type cmdConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr bytes.Buffer // written by exec's goroutine until Wait
	once   sync.Once
	err    error
}

func (c *cmdConn) Read(b []byte) (int, error) {
	n, err := c.stdout.Read(b)
	if err == io.EOF {
		c.once.Do(func() {
			if werr := c.cmd.Wait(); werr != nil {
				c.err = fmt.Errorf("sh: %v: %s", werr, strings.TrimSpace(c.stderr.String()))
			}
		})
		if c.err != nil {
			err = c.err
		}
	}
	return n, err
}

func (c *cmdConn) Write(b []byte) (int, error) { return c.stdin.Write(b) }
func (c *cmdConn) CloseWrite() error           { return c.stdin.Close() }
func (c *cmdConn) Close() error {
	c.stdin.Close()
	c.stdout.Close()
	c.once.Do(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	return nil
}
func (c *cmdConn) LocalAddr() net.Addr              { return &net.UnixAddr{Net: "pipe"} }
func (c *cmdConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Net: "pipe"} }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// desktops makes a folder for sockets and points desktopsDir at it; any
// user may create sockets in its desktop folder d.
func desktops(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vncrelay-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "d"), 0o777)
	old := desktopsDir
	desktopsDir = dir + "/"
	t.Cleanup(func() { desktopsDir = old })
	return dir
}

// echoServer is an echo server on a unix socket at path, in python3, run
// as nobody when the test runs as root (Command refuses uid 0), else as
// the test's user. It returns the uid that serves.
func echoServer(t *testing.T, path string) int {
	t.Helper()
	python := "python3"
	uid := os.Getuid()
	if uid == 0 {
		// nobody may not reach a python3 found on root's PATH (pyenv).
		python = "/usr/bin/python3"
		if _, err := os.Stat(python); err != nil {
			t.Skip("no /usr/bin/python3 for the echo server as nobody")
		}
	}
	c := exec.Command(python, "-c", `import os, socket, sys, threading
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(sys.argv[1])
l.listen(8)
os.write(1, b"up\n")
def echo(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
while True:
    c, _ = l.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()
`, path)
	if uid == 0 {
		uid = 65534
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: 65534}}
	}
	c.Stderr = os.Stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("echo server: %q %v", line, err)
	}
	return uid
}

func TestRelay(t *testing.T) {
	needPython(t)
	sock := filepath.Join(desktops(t), "d", "vnc.sock")
	uid := echoServer(t, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begun := time.Now()
	c, err := Dial(ctx, shPiper{}, sock, uid)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("relay set up (sh, python3, peer check) in %s", time.Since(begun).Round(time.Millisecond))
	stop := time.AfterFunc(20*time.Second, func() { c.Close() })
	defer stop.Stop()
	// 1 MiB of random bytes both ways at once, then a half-close: the
	// echo comes back whole and the read side ends with EOF.
	data := make([]byte, 1<<20)
	rand.Read(data)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		wrote <- err
	}()
	begun = time.Now()
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read the echo: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("echo of %d bytes: %d bytes back, equal %v", len(data), len(back), bytes.Equal(back, data))
	}
	t.Logf("1 MiB echoed through the relay in %s", time.Since(begun).Round(time.Millisecond))
}

func TestRelayRefused(t *testing.T) {
	needPython(t)
	dir := desktops(t)
	sock := filepath.Join(dir, "d", "vnc.sock")
	// Served by the test itself: its uid is not the one asked for.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := os.Getuid() + 1000
	c, err := Dial(ctx, shPiper{}, sock, want)
	msg := fmt.Sprintf("vnc socket %s is served by uid %d, not the desktop's QEMU user %d", sock, os.Getuid(), want)
	if err == nil {
		c.Close()
		t.Fatal("Dial to a socket served by another uid: no error")
	}
	if !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("another uid: %v, want %q and exit status 3", err, msg)
	} else {
		t.Log(err)
	}
	<-accepted // the script did connect

	// No socket there.
	if _, err := Dial(ctx, shPiper{}, filepath.Join(dir, "d", "missing.sock"), want); err == nil ||
		!strings.Contains(err.Error(), "No such file or directory") || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("missing socket: %v", err)
	}
	// A relay that never answers: ctx ends the wait.
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	begun := time.Now()
	if _, err := Dial(short, shPiper{run: "exec sleep 10"}, sock, want); !errors.Is(err, context.DeadlineExceeded) || time.Since(begun) > 2*time.Second {
		t.Errorf("silent relay: %v after %s", err, time.Since(begun))
	}
	// A command that is not the relay.
	if _, err := Dial(ctx, shPiper{run: "echo hello"}, sock, want); err == nil || !strings.Contains(err.Error(), "not its ready byte") {
		t.Errorf("another command: %v", err)
	}
	if _, err := Dial(ctx, shPiper{run: "exit 0"}, sock, want); err == nil || !strings.Contains(err.Error(), "ended before its peer check") {
		t.Errorf("a command ending at once: %v", err)
	}
}

func TestCommand(t *testing.T) {
	if strings.Contains(script, "'") {
		t.Fatal("the script holds a single quote; it goes between single quotes")
	}
	path := "/var/lib/bureau/desktops/0a1b2c3d/vnc.sock"
	cmd, err := Command(path, 64055)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cmd, "python3 -I -S -c 'import ") || !strings.HasSuffix(cmd, "' '"+path+"' 64055") {
		t.Errorf("command %q", cmd)
	}
	// What the shell hands python3: the script, the path and the uid.
	if _, err := exec.LookPath("sh"); err == nil {
		out, err := exec.Command("sh", "-c", "set -- "+strings.TrimPrefix(cmd, "python3 -I -S -c ")+`; printf '%s\n' "$#" "$2" "$3"`).Output()
		if err != nil || string(out) != "3\n"+path+"\n64055\n" {
			t.Errorf("words of the command line: %q %v", out, err)
		}
	}
	long := "/var/lib/bureau/desktops/" + strings.Repeat("x", 80) + "/vnc.sock"
	for _, bad := range []struct {
		path string
		uid  int
	}{
		{path, 0},
		{path, -1},
		{path, 1 << 32},
		{"", 1000},
		{"vnc.sock", 1000},
		{"/var/lib/bureau/desktops/", 1000},
		{"/var/lib/bureau/desktops", 1000},
		{"/var/lib/bureau/desktopsx/vnc.sock", 1000},
		{"/var/lib/bureau/images/vnc.sock", 1000},
		{"/var/lib/bureau/desktops/../images/vnc.sock", 1000},
		{"/var/lib/bureau/desktops/a//vnc.sock", 1000},
		{"/var/lib/bureau/desktops/a/vnc.sock/", 1000},
		{"/var/lib/bureau/desktops/a'; rm -rf /'/vnc.sock", 1000},
		{`/var/lib/bureau/desktops/a"b/vnc.sock`, 1000},
		{`/var/lib/bureau/desktops/a\b/vnc.sock`, 1000},
		{"/var/lib/bureau/desktops/a\nb/vnc.sock", 1000},
		{"/var/lib/bureau/desktops/a\x00b/vnc.sock", 1000},
		{"/var/lib/bureau/desktops/a\xffb/vnc.sock", 1000},
		{long, 1000},
	} {
		if cmd, err := Command(bad.path, bad.uid); err == nil {
			t.Errorf("Command(%q, %d) = %q, want refused", bad.path, bad.uid, cmd)
		}
		if _, err := Dial(context.Background(), shPiper{run: "exit 99"}, bad.path, bad.uid); err == nil || strings.Contains(err.Error(), "99") {
			t.Errorf("Dial(%q, %d): %v, want refused before running anything", bad.path, bad.uid, err)
		}
	}
	t.Logf("script: %d bytes, command line %d bytes", len(script), len(cmd))
}

// TestCommandTakesAnyDataDirectorysDesktopFolder: without a fixed folder,
// a socket must lie in a desktop's folder of some bureau data directory.
func TestCommandTakesAnyDataDirectorysDesktopFolder(t *testing.T) {
	saved := desktopsDir
	desktopsDir = ""
	defer func() { desktopsDir = saved }()
	for path, ok := range map[string]bool{
		"/var/lib/bureau/desktops/abc/vnc.sock":        true,
		"/var/lib/bureau-e2e-42/desktops/abc/vnc.sock": true,
		"/var/lib/bureau/images/vnc.sock":              false,
		"/var/lib/bureau/desktops/vnc.sock":            false,
		"var/lib/bureau/desktops/abc/vnc.sock":         false,
		"/var/lib/bureau/desktops/../abc/vnc.sock":     false,
	} {
		if _, err := Command(path, 1234); (err == nil) != ok {
			t.Errorf("%s: %v, want accepted %v", path, err, ok)
		}
	}
}
