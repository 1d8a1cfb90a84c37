package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The handshake. A virtio-serial port keeps bytes across connections, so
// either side may first read what an earlier connection left. bureau
// repeats "HELLO <nonce>" until the agent answers "READY <nonce> <sha256>
// <version>", then sends "START <nonce>"; the agent answers "GO <nonce>"
// and both start yamux. Each side skips every line that is not the one it
// waits for, so stale bytes and repeated HELLOs and READYs are harmless.
const (
	hello = "BUREAU-HELLO"
	ready = "BUREAU-READY"
	start = "BUREAU-START"
	goMsg = "BUREAU-GO"
	// maxLine bounds a handshake line; longer runs of bytes are skipped.
	maxLine = 512
)

// Info is what the agent says of itself.
type Info struct {
	// SHA256 is the hex digest of the agent's executable: bureau replaces
	// an agent whose digest differs from the binary it ships.
	SHA256  string
	Version string
}

// Conn is what a handshake runs over; Close unblocks a pending read.
type Conn interface {
	io.ReadWriter
	Close() error
}

// Dial runs bureau's side of the handshake: every interval it says hello
// until the agent answers or ctx ends (then c is closed). It returns the
// agent's Info and a reader to give yamux (it may hold bytes read past
// the handshake).
func Dial(ctx context.Context, c Conn, nonce string, interval time.Duration) (Info, io.Reader, error) {
	if strings.ContainsAny(nonce, " \n") || nonce == "" {
		return Info{}, nil, errors.New("agent/wire: bad nonce")
	}
	br := bufio.NewReaderSize(c, 4096)
	type res struct {
		info Info
		err  error
	}
	readyc := make(chan res, 1)
	go func() {
		info, err := waitReady(br, nonce)
		readyc <- res{info, err}
	}()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	t := time.NewTicker(interval)
	defer t.Stop()
	say := func(word string) error {
		_, err := fmt.Fprintf(c, "\n%s %s\n", word, nonce)
		return err
	}
	if err := say(hello); err != nil {
		return Info{}, nil, err
	}
	var info Info
wait:
	for {
		select {
		case r := <-readyc:
			if r.err != nil {
				return Info{}, nil, ctxErr(ctx, r.err)
			}
			info = r.info
			break wait
		case <-t.C:
			if err := say(hello); err != nil {
				return Info{}, nil, ctxErr(ctx, err)
			}
		}
	}
	if err := say(start); err != nil {
		return Info{}, nil, ctxErr(ctx, err)
	}
	if _, err := waitLine(br, goMsg+" "+nonce); err != nil {
		return Info{}, nil, ctxErr(ctx, err)
	}
	return info, br, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("agent/wire: no answer from the agent: %w", ctx.Err())
	}
	return err
}

func waitReady(br *bufio.Reader, nonce string) (Info, error) {
	line, err := waitLine(br, ready+" "+nonce+" ")
	if err != nil {
		return Info{}, err
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return Info{}, fmt.Errorf("agent/wire: bad ready line %q", line)
	}
	info := Info{SHA256: f[2]}
	if len(f) > 3 {
		info.Version = f[3]
	}
	return info, nil
}

// waitLine reads lines until one starts with prefix and returns it.
func waitLine(br *bufio.Reader, prefix string) (string, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(line, prefix) || line == strings.TrimSuffix(prefix, " ") {
			return line, nil
		}
	}
}

// readLine returns the next line of at most maxLine bytes, skipping over
// longer runs.
func readLine(br *bufio.Reader) (string, error) {
	var b bytes.Buffer
	skipping := false
	for {
		c, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			if skipping {
				skipping = false
				b.Reset()
				continue
			}
			return b.String(), nil
		}
		if skipping {
			continue
		}
		if b.Len() == maxLine {
			skipping = true
			continue
		}
		b.WriteByte(c)
	}
}

// Accept runs the agent's side: it answers every hello with info and
// returns once bureau has said start, with a reader to give yamux. It
// returns an error when the connection ends first.
func Accept(c io.ReadWriter, info Info) (io.Reader, error) {
	br := bufio.NewReaderSize(c, 4096)
	for {
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case hello:
			if _, err := fmt.Fprintf(c, "\n%s %s %s %s\n", ready, f[1], info.SHA256, info.Version); err != nil {
				return nil, err
			}
		case start:
			if _, err := fmt.Fprintf(c, "\n%s %s\n", goMsg, f[1]); err != nil {
				return nil, err
			}
			return br, nil
		}
	}
}
