package sshlink

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds waits for what must happen: long enough for a busy
// machine, it only turns a hang into a failure.
const hangGuard = 30 * time.Second

func dialTest(t *testing.T, tg Target) *Link {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Dial(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestRun(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	ctx := context.Background()
	out, errOut, err := l.Run(ctx, "echo out; echo err >&2; echo out2", nil)
	if err != nil || string(out) != "out\nout2\n" || string(errOut) != "err\n" {
		t.Errorf("Run: %q %q %v, want stdout and stderr apart", out, errOut, err)
	}
	out, _, err = l.Run(ctx, "cat; echo done", strings.NewReader("table inet x {}\n"))
	if err != nil || string(out) != "table inet x {}\ndone\n" {
		t.Errorf("Run with stdin: %q %v", out, err)
	}
	out, errOut, err = l.Run(ctx, "nft -f - >/dev/null 2>&1 </dev/null; echo partial; echo 'Error: no such hook' >&2; exit 3", nil)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Status != 3 || exit.Stderr != "Error: no such hook\n" || !strings.HasPrefix(exit.Cmd, "nft -f -") {
		t.Fatalf("failing command: %#v (%v)", exit, err)
	}
	if want := "nft: exit status 3: Error: no such hook"; err.Error() != want {
		t.Errorf("ExitError %q, want %q", err, want)
	}
	if string(out) != "partial\n" || string(errOut) != "Error: no such hook\n" {
		t.Errorf("failing command's output %q %q", out, errOut)
	}
	if _, _, err := l.Run(ctx, "exit 1", nil); err == nil || err.Error() != "exit: exit status 1" {
		t.Errorf("exit 1 without stderr: %v", err)
	}
}

func TestRunCancel(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The command would run past the hang guard: Run ends with ctx, not
	// with it.
	begun := time.Now()
	_, _, err := l.Run(ctx, "sleep 60", nil)
	if took := time.Since(begun); !errors.Is(err, context.DeadlineExceeded) || took >= hangGuard {
		t.Fatalf("Run of sleep 60 with a 200 ms ctx: %v after %s", err, took)
	}
	if !strings.HasPrefix(err.Error(), "sleep: ") {
		t.Errorf("error %q does not name the command", err)
	}
	// The link outlives a cancelled command.
	if out, _, err := l.Run(context.Background(), "echo still", nil); err != nil || string(out) != "still\n" {
		t.Errorf("Run after a cancel: %q %v", out, err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, _, err := l.Run(done, "true", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with an ended ctx: %v", err)
	}
}

func TestDialRefusals(t *testing.T) {
	srv := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	other := newSigner(t).PublicKey()
	tg := srv.target()
	tg.HostKey = other
	_, err := Dial(ctx, tg)
	if !errors.Is(err, ErrHostKeyMismatch) || !strings.Contains(err.Error(), "offered "+FormatKey(srv.hostKey.PublicKey())) ||
		!strings.Contains(err.Error(), FormatKey(other)+" is pinned") {
		t.Errorf("another host key pinned: %v", err)
	} else {
		t.Log(err)
	}

	tg = srv.target()
	tg.Signer = newSigner(t)
	_, err = Dial(ctx, tg)
	if !errors.Is(err, ErrKeyRefused) || !strings.Contains(err.Error(), "authorized_keys") ||
		!strings.Contains(err.Error(), FormatKey(tg.Signer.PublicKey())) {
		t.Errorf("unknown client key: %v", err)
	} else {
		t.Log(err)
	}

	tg = srv.target()
	tg.HostKey = nil
	if _, err := Dial(ctx, tg); err == nil || !strings.Contains(err.Error(), "no pinned host key") {
		t.Errorf("no host key: %v", err)
	}
}

// A listener that accepts and never speaks: the handshake ends with ctx.
func TestDialHandshakeBoundedByCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	srv := newServer(t)
	tg := srv.target()
	tg.Addr = ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The server never speaks: only ctx can end the handshake.
	dialed := make(chan error, 1)
	go func() {
		_, err := Dial(ctx, tg)
		dialed <- err
	}()
	select {
	case err := <-dialed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("silent server: %v, want the ctx's deadline", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("a handshake with a silent server outlived its ctx")
	}
}

func TestDialUnix(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	sock := filepath.Join(t.TempDir(), "echo.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.DialUnix(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := time.AfterFunc(hangGuard, func() { c.Close() }) // no deadlines on SSH channels
	defer stop.Stop()
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "RFB 003.008\n" {
		t.Errorf("echo through streamlocal: %q %v", got, err)
	}
	if _, err := l.DialUnix(ctx, sock+".missing"); err == nil || !strings.Contains(err.Error(), "open failed") {
		t.Errorf("missing socket: %v", err)
	}
}

func TestKeepaliveLoss(t *testing.T) {
	srv := newServer(t)
	tg := srv.target()
	tg.keepalive = 100 * time.Millisecond
	l := dialTest(t, tg)
	// Answered keepalives keep the link up.
	for deadline := time.Now().Add(hangGuard); srv.keepalives.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d keepalives answered", srv.keepalives.Load())
		}
	}
	if !l.alive() {
		t.Fatalf("after %d answered keepalives: link down: %v", srv.keepalives.Load(), l.Err())
	}
	srv.silent.Store(true)
	begun := time.Now()
	select {
	case <-l.Done():
	case <-time.After(hangGuard):
		t.Fatal("link still up after the server stopped answering keepalives")
	}
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "keepalive") {
		t.Errorf("Err %v", err)
	}
	t.Logf("lost after %s: %v", time.Since(begun).Round(time.Millisecond), l.Err())
	if _, _, err := l.Run(context.Background(), "true", nil); err == nil || !strings.Contains(err.Error(), "keepalive") {
		t.Errorf("Run on a lost link: %v", err)
	}
}

func TestLinkLostAndClosed(t *testing.T) {
	srv := newServer(t)
	l := dialTest(t, srv.target())
	srv.drop()
	select {
	case <-l.Done():
	case <-time.After(hangGuard):
		t.Fatal("link still up after the server dropped it")
	}
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Errorf("Err %v", err)
	}
	l2 := dialTest(t, srv.target())
	if l2.Err() != nil {
		t.Errorf("Err of a live link: %v", l2.Err())
	}
	l2.Close()
	<-l2.Done()
	if !errors.Is(l2.Err(), ErrClosed) {
		t.Errorf("Err after Close: %v", l2.Err())
	}
}

// handshakes is the server's count of handshakes, once it reached want
// or after the hang guard: the server counts a little after the client is
// in.
func handshakes(srv *testServer, want int64) int64 {
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if srv.handshakes.Load() >= want {
			break
		}
	}
	time.Sleep(20 * time.Millisecond) // and no more come
	return srv.handshakes.Load()
}
