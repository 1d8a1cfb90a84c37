// Package vncrelay reaches a desktop's display on a remote host with the
// check bureau makes locally (manager.dialDisplay): that the process
// serving the desktop's VNC socket is the desktop's own QEMU user. The
// desktop's folder belongs to that user, so a QEMU taken over could put a
// link to another desktop's socket in its place. Through SSH streamlocal
// forwarding the peer bureau sees is sshd, so the check runs on the host
// instead: a short python3 script (standard library only) connects to the
// socket, reads SO_PEERCRED, and only then relays the socket over its
// stdin and stdout, which bureau reaches through an SSH session
// (sshlink's Pipe).
package vncrelay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ready is the byte the script writes once the peer check passed, before
// relaying; Dial reads it.
const ready = 0x01

// desktopsDir, when set, is the folder the relayed sockets must be in
// (tests); otherwise a socket must be in a desktop's folder of a bureau
// data directory: /…/desktops/<id>/<socket>.
var desktopsDir = ""

// maxPath is the longest path a unix socket address holds (sun_path, 108
// bytes with its NUL).
const maxPath = 107

// Piper runs a command on a host and returns a conn to its stdin and
// stdout, whose Read fails with the command's stderr when it exits
// non-zero (sshlink.Link and sshlink.Kept).
type Piper interface {
	Pipe(ctx context.Context, cmd string) (net.Conn, error)
}

// Command is the shell command line that relays the unix socket at path
// on the host once it checked that uid serves it: `python3 -I -S -c
// 'SCRIPT' 'PATH' UID`. path must be a clean absolute path under
// /var/lib/bureau/desktops/ without quotes, backslashes or control
// characters; uid a user other than root.
func Command(path string, uid int) (string, error) {
	if err := check(path, uid); err != nil {
		return "", err
	}
	return "python3 -I -S -c '" + script + "' '" + path + "' " + strconv.Itoa(uid), nil
}

func check(path string, uid int) error {
	if uid <= 0 || uid > 1<<32-2 {
		return fmt.Errorf("relay %q: uid %d is not a desktop's QEMU user", path, uid)
	}
	bad := func(why string) error { return fmt.Errorf("relay %q: %s", path, why) }
	switch {
	case desktopsDir != "" && (!strings.HasPrefix(path, desktopsDir) || len(path) == len(desktopsDir)):
		return bad("not a socket in " + desktopsDir)
	case desktopsDir == "" && (!filepath.IsAbs(path) || filepath.Base(filepath.Dir(filepath.Dir(path))) != "desktops"):
		return bad("not a socket in a desktop's folder (/…/desktops/ID/)")
	case filepath.Clean(path) != path:
		return bad("not a clean path")
	case len(path) > maxPath:
		return bad(fmt.Sprintf("longer than a unix socket address holds (%d bytes)", maxPath))
	case !utf8.ValidString(path):
		return bad("not UTF-8")
	case strings.ContainsFunc(path, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\'' || r == '"' || r == '\\' }):
		return bad("quotes, backslashes and control characters are refused")
	}
	return nil
}

// Dial relays the unix socket at path on p's host to the returned conn,
// once the script there checked that uid serves it. A refusal (another
// uid, no socket, no python3) is Dial's error, with the script's message.
// ctx bounds the whole set-up, the check included; the conn lives on
// after it (as p's conns: an SSH one has no deadlines).
func Dial(ctx context.Context, p Piper, path string, uid int) (net.Conn, error) {
	cmd, err := Command(path, uid)
	if err != nil {
		return nil, err
	}
	c, err := p.Pipe(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", path, err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	if !stop() {
		c.Close()
		return nil, fmt.Errorf("relay %s: %w", path, context.Cause(ctx))
	}
	switch {
	case err == nil && b[0] == ready:
		return c, nil
	case err == nil:
		err = fmt.Errorf("relay %s: the relay sent %#x, not its ready byte", path, b[0])
	case errors.Is(err, io.EOF):
		err = fmt.Errorf("relay %s: the relay ended before its peer check", path)
	case strings.Contains(err.Error(), path):
		err = fmt.Errorf("relay: %w", err) // the script's message names the socket
	default:
		err = fmt.Errorf("relay %s: %w", path, err)
	}
	c.Close()
	return nil, err
}
