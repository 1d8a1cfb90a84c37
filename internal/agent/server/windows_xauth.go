package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// The agent (root, outside the user's session) reaches the X server with
// the session's MIT-MAGIC-COOKIE-1, which it reads from the Xauthority
// files itself: xgb reads only $XAUTHORITY, and changing the agent's
// environment would race with every command it starts.

// xauthEntry is one record of an Xauthority file (Xau's format).
type xauthEntry struct {
	family  uint16
	address string
	number  string // the display number, "" for any
	name    string // the auth protocol
	data    []byte
}

// Xau families.
const (
	xauthLocal = 256
	xauthWild  = 65535
)

// readXauth reads an Xauthority file's records; a cut record ends it.
func readXauth(r io.Reader) []xauthEntry {
	var out []xauthEntry
	field := func() ([]byte, bool) {
		var n uint16
		if binary.Read(r, binary.BigEndian, &n) != nil {
			return nil, false
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err == nil
	}
	for {
		var e xauthEntry
		if binary.Read(r, binary.BigEndian, &e.family) != nil {
			return out
		}
		var f [4][]byte
		for i := range f {
			var ok bool
			if f[i], ok = field(); !ok {
				return out
			}
		}
		e.address, e.number, e.name, e.data = string(f[0]), string(f[1]), string(f[2]), f[3]
		out = append(out, e)
	}
}

// writeXauth writes entries in Xau's format (tests make Xauthority files
// with it).
func writeXauth(w io.Writer, entries []xauthEntry) error {
	var b bytes.Buffer
	for _, e := range entries {
		binary.Write(&b, binary.BigEndian, e.family)
		for _, f := range [][]byte{[]byte(e.address), []byte(e.number), []byte(e.name), e.data} {
			binary.Write(&b, binary.BigEndian, uint16(len(f)))
			b.Write(f)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

const cookieAuth = "MIT-MAGIC-COOKIE-1"

// xCookies are the cookies the files hold for display number, those for
// this host (or any) first, each once.
func xCookies(files []string, number, host string) [][]byte {
	var mine, others [][]byte
	seen := map[string]bool{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		entries := readXauth(io.LimitReader(f, 1<<20))
		f.Close()
		for _, e := range entries {
			if e.name != cookieAuth || len(e.data) != 16 || e.number != number && e.number != "" || seen[string(e.data)] {
				continue
			}
			seen[string(e.data)] = true
			if e.family == xauthWild || e.family == xauthLocal && e.address == host {
				mine = append(mine, e.data)
			} else {
				others = append(others, e.data)
			}
		}
	}
	return append(mine, others...)
}

// xauthFiles are where the session's cookie may be: the file the X
// server was started with (its -auth), lightdm's, the users'.
func xauthFiles(display string) []string {
	files := serverAuthFiles(display)
	files = append(files, "/var/run/lightdm/root/"+display)
	for _, pattern := range []string{"/home/*/.Xauthority", "/var/run/lightdm/*/xauthority", "/root/.Xauthority"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	return files
}

// serverAuthFiles finds the X server of display among the processes and
// returns the file its -auth names.
func serverAuthFiles(display string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("-auth\x00")) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		served := false
		for _, a := range args[1:] {
			served = served || a == display
		}
		for i, a := range args[:len(args)-1] {
			if served && a == "-auth" {
				out = append(out, args[i+1])
			}
		}
	}
	return out
}

// setupRequest is X11's connection setup (little-endian) with cookie as
// its MIT-MAGIC-COOKIE-1 (none when nil).
func setupRequest(cookie []byte) []byte {
	name := ""
	if cookie != nil {
		name = cookieAuth
	}
	pad := func(n int) int { return (n + 3) &^ 3 }
	buf := make([]byte, 12+pad(len(name))+pad(len(cookie)))
	buf[0] = 'l'
	binary.LittleEndian.PutUint16(buf[2:], 11)
	binary.LittleEndian.PutUint16(buf[6:], uint16(len(name)))
	binary.LittleEndian.PutUint16(buf[8:], uint16(len(cookie)))
	copy(buf[12:], name)
	copy(buf[12+pad(len(name)):], cookie)
	return buf
}

// authConn sends its own connection setup in place of the first write
// (xgb's setup, which carries what xgb found, or nothing).
type authConn struct {
	net.Conn
	setup []byte
	sent  atomic.Bool
}

func (a *authConn) Write(p []byte) (int, error) {
	if a.sent.Swap(true) {
		return a.Conn.Write(p)
	}
	if len(p) < 12 || p[0] != 'l' && p[0] != 'B' {
		return 0, errors.New("x11: the first write is not a connection setup")
	}
	if _, err := a.Conn.Write(a.setup); err != nil {
		return 0, err
	}
	return len(p), nil
}
