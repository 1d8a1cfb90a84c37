package sshlink

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// closeAfter closes c after d, in place of the deadlines it lacks.
func closeAfter(t *testing.T, c net.Conn, d time.Duration) {
	stop := time.AfterFunc(d, func() { c.Close() })
	t.Cleanup(func() { stop.Stop() })
}

func TestPipeEcho(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.Pipe(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closeAfter(t, c, 10*time.Second)
	cancel() // ctx bounds the start only
	if err := c.SetDeadline(time.Now().Add(time.Millisecond)); err != nil {
		t.Errorf("SetDeadline: %v", err)
	}
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "RFB 003.008\n" {
		t.Fatalf("echo through cat: %q %v", got, err)
	}
	// Binary and larger than a window, both ways at once.
	data := make([]byte, 1<<20)
	rand.Read(data)
	go func() { c.Write(data) }()
	back := make([]byte, len(data))
	if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, data) {
		t.Fatalf("1 MiB through cat: equal %v, %v", bytes.Equal(back, data), err)
	}
	// Half-close: cat sees the end of its input, exits 0, and the read
	// side ends with io.EOF.
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(got); n != 0 || err != io.EOF {
		t.Errorf("Read after cat's end: %d %v, want io.EOF", n, err)
	}
	if c.RemoteAddr().Network() != "ssh" || !strings.HasSuffix(c.RemoteAddr().String(), " cat") {
		t.Errorf("RemoteAddr %s %q", c.RemoteAddr().Network(), c.RemoteAddr())
	}
}

func TestPipeFailure(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := "sh -c 'echo nope >&2; exit 3'"
	c, err := l.Pipe(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closeAfter(t, c, 10*time.Second)
	n, err := c.Read(make([]byte, 8))
	var exit *ExitError
	if n != 0 || !errors.As(err, &exit) || exit.Status != 3 || exit.Stderr != "nope\n" || exit.Cmd != cmd {
		t.Fatalf("first Read of a failing command: %d %#v (%v)", n, exit, err)
	}
	if want := "sh: exit status 3: nope"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if _, err := c.Read(make([]byte, 8)); !errors.As(err, &exit) {
		t.Errorf("second Read: %v, want the ExitError again", err)
	}

	// Output, then a failure: the output is read, then the ExitError.
	c2, err := l.Pipe(ctx, "echo partial; echo bad >&2; exit 2")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	closeAfter(t, c2, 10*time.Second)
	out, err := io.ReadAll(c2)
	if string(out) != "partial\n" || !errors.As(err, &exit) || exit.Status != 2 || exit.Stderr != "bad\n" {
		t.Errorf("output then failure: %q %v", out, err)
	}
	// A command that ends cleanly without output: io.EOF.
	c3, err := l.Pipe(ctx, "true")
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	closeAfter(t, c3, 10*time.Second)
	if n, err := c3.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("true: %d %v, want io.EOF", n, err)
	}
}

func TestPipeClose(t *testing.T) {
	l := dialTest(t, newServer(t).target())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.Pipe(ctx, "echo $$; exec cat")
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, c, 10*time.Second)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("pid %q: %v", line, err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("cat (pid %d) is not running", pid)
	}
	// Close ends a Read under way at once, and the command.
	read := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 8)); read <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read under way at Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Read still blocked after Close")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs %s after Close", pid, hangGuard)
		}
	}
}

func TestPipeStart(t *testing.T) {
	srv := newServer(t)
	l := dialTest(t, srv.target())
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := l.Pipe(done, "cat"); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "cat: ") {
		t.Errorf("Pipe with an ended ctx: %v", err)
	}
	l.Close()
	if _, err := l.Pipe(context.Background(), "cat"); !errors.Is(err, ErrClosed) {
		t.Errorf("Pipe on a closed link: %v", err)
	}

	// Kept dials first; a lost link ends the Read under way with its error.
	k := NewKept(srv.target())
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := k.Pipe(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closeAfter(t, c, 10*time.Second)
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "hi" {
		t.Fatalf("Kept.Pipe: %q %v", got, err)
	}
	srv.drop()
	if _, err := c.Read(got); err == nil || errors.Is(err, net.ErrClosed) {
		t.Errorf("Read on a lost link: %v, want the link's error", err)
	} else {
		t.Logf("Read on a lost link: %v", err)
	}
	k.Close()
	if _, err := k.Pipe(ctx, "cat"); !errors.Is(err, ErrClosed) {
		t.Errorf("Kept.Pipe after Close: %v", err)
	}
}
