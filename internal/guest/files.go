package guest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// How much one guest-agent read or write moves (base64 in JSON). Under
// TCG the agent sometimes stops answering writes of 192 KiB and more
// (measured); 64 KiB takes about 35 ms.
const (
	readChunk  = 1 << 20
	writeChunk = 64 << 10
)

// maxList bounds a directory listing.
const maxList = 10000

// Files moves files in and out of a desktop and lists them, checked
// against the user's own permissions inside the guest.
type Files struct{ x *core }

// Entry is one file in a directory listing.
type Entry struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"` // file, dir, link, other
	Size    int64   `json:"size"`
	Mode    string  `json:"mode"`
	ModTime float64 `json:"mtime"`
}

// Stat is what a path resolved to inside the guest.
type Stat struct {
	Path    string  `json:"path"` // resolved, absolute
	Dir     bool    `json:"dir"`
	Size    int64   `json:"size"`
	Entries []Entry `json:"entries,omitempty"`
	// Truncated: the listing stopped at its limit.
	Truncated bool `json:"truncated,omitempty"`
}

// cleanPath checks a path and a user from a request: the user is a user
// name, the path absolute or relative to the user's home. Symbolic links
// and ".." are resolved later, in the guest, as that user. The path only
// ever reaches the guest as an argument, never as part of a script.
func (s *Files) cleanPath(p, user string) (string, error) {
	switch {
	case !userName.MatchString(user):
		return "", invalid("user", "not a user name")
	case p == "":
		return "", invalid("path", "missing")
	case len(p) > 4096:
		return "", invalid("path", "longer than 4096 bytes")
	case strings.ContainsRune(p, 0):
		return "", invalid("path", "contains a NUL byte")
	}
	if !strings.HasPrefix(p, "/") {
		p = path.Join(home(user), p)
	}
	return p, nil
}

func home(user string) string {
	if user == "root" {
		return "/root"
	}
	return "/home/" + user
}

// resolveExisting and resolveAny set p to $1 with links and ".." resolved
// (exit 3 when that fails): an existing path, or one that may not exist
// yet. The x keeps a name's trailing newlines from $(…), which strips them.
const (
	resolveExisting = `p=$(realpath -e -- "$1" && printf x) || exit 3; p=${p%?x}`
	resolveAny      = `p=$(realpath -m -- "$1" && printf x) || exit 3; p=${p%?x}`
)

// Exit codes of the check scripts.
const (
	exitNotFound = 3
	exitDenied   = 4
	exitIsDir    = 5
	exitNotFile  = 6
)

// checkFailed turns a check script's exit into the error a caller sees.
func checkFailed(p string, r *desktop.ExecResult) error {
	msg := strings.TrimSpace(string(r.Stderr))
	switch r.ExitCode {
	case exitNotFound:
		if strings.Contains(msg, "Permission denied") {
			return fmt.Errorf("%s: permission denied: %w", p, desktop.ErrForbidden)
		}
		return fmt.Errorf("%s: %w", p, desktop.ErrNotFound)
	case exitDenied:
		return fmt.Errorf("%s: permission denied for this user: %w", p, desktop.ErrForbidden)
	case exitIsDir:
		return &desktop.ConflictError{Message: p + " is a directory"}
	case exitNotFile:
		return invalid("path", p+" is not a regular file or directory")
	}
	return fmt.Errorf("%s: check in the guest failed (exit %d): %s", p, r.ExitCode, msg)
}

// statScript resolves $1 as the user (so a path the user cannot reach
// fails), and prints what it is; a directory's entries follow. Records end
// in NUL and put the name last, so names with tabs or newlines parse.
const statScript = resolveExisting + `
if [ -d "$p" ]; then
  [ -r "$p" ] && [ -x "$p" ] || exit 4
  printf 'dir\t%s\0' "$p"
  find "$p" -mindepth 1 -maxdepth 1 -printf '%y\t%s\t%m\t%T@\t%f\0' 2>/dev/null | head -z -n ` + "10001" + `
elif [ -f "$p" ]; then
  [ -r "$p" ] || exit 4
  printf 'file\t%s\t%s\0' "$(stat -c %s -- "$p")" "$p"
else
  exit 6
fi`

// Stat resolves a path as user and lists it when it is a directory.
func (s *Files) Stat(ctx context.Context, domain, p, user string) (*Stat, error) {
	if user == "" {
		user = s.x.User
	}
	p, err := s.cleanPath(p, user)
	if err != nil {
		return nil, err
	}
	r, err := s.x.run(ctx, domain, user, nil, "/bin/sh", "-c", statScript, "sh", p)
	if err != nil {
		return nil, err
	}
	if r.ExitCode != 0 {
		return nil, checkFailed(p, r)
	}
	return parseStat(r.Stdout)
}

// parseStat reads statScript's output.
func parseStat(out []byte) (*Stat, error) {
	recs := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	head := strings.SplitN(recs[0], "\t", 3)
	var st *Stat
	switch {
	case len(head) == 2 && head[0] == "dir":
		st = &Stat{Path: head[1], Dir: true}
	case len(head) == 3 && head[0] == "file":
		size, err := strconv.ParseInt(head[1], 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("unexpected size %q from the guest", head[1])
		}
		return &Stat{Path: head[2], Size: size}, nil
	default:
		return nil, fmt.Errorf("unexpected answer from the guest: %.80q", recs[0])
	}
	types := map[string]string{"f": "file", "d": "dir", "l": "link"}
	for _, l := range recs[1:] {
		f := strings.SplitN(l, "\t", 5)
		if len(f) != 5 {
			continue
		}
		if len(st.Entries) == maxList {
			st.Truncated = true
			break
		}
		e := Entry{Name: f[4], Type: types[f[0]], Mode: f[2]}
		if e.Type == "" {
			e.Type = "other"
		}
		e.Size, _ = strconv.ParseInt(f[1], 10, 64)
		e.ModTime, _ = strconv.ParseFloat(f[3], 64)
		st.Entries = append(st.Entries, e)
	}
	return st, nil
}

// Read streams a file the user may read to w, chunk by chunk.
func (s *Files) Read(ctx context.Context, domain string, st *Stat, w io.Writer) error {
	var why error
	if s.x.channel(ctx) != nil {
		_, err := s.x.ch.ReadFile(ctx, domain, st.Path, w)
		if !noAgent(err) {
			return err
		}
		why = err
	}
	h, err := s.x.agent.GuestFileOpen(ctx, domain, st.Path, "r")
	if err != nil {
		return unavailableBoth(why, err)
	}
	defer s.x.agent.GuestFileClose(context.WithoutCancel(ctx), domain, h)
	for {
		b, eof, err := s.x.agent.GuestFileRead(ctx, domain, h, readChunk)
		if err != nil {
			return unavailable(err)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if eof || len(b) == 0 {
			return nil
		}
	}
}

// WriteRequest is an upload.
type WriteRequest struct {
	Path string
	User string
	// Mode is the file's permission bits (default 0644).
	Mode uint32
	// Parents creates missing directories (as the user).
	Parents bool
}

// prepareScript checks, as the user, that $1 may be written: it makes the
// parents when asked ($2 = 1), resolves the final path through links and
// prints it; a directory in the way or a place the user cannot write
// fails.
const prepareScript = resolveAny + `
d=${p%/*}; [ -n "$d" ] || d=/
if [ "$2" = 1 ]; then mkdir -p -- "$d" || exit 4; fi
[ -d "$d" ] || exit 3
[ -w "$d" ] && [ -x "$d" ] || exit 4
if [ -d "$p" ]; then exit 5; fi
if [ -e "$p" ] && [ ! -w "$p" ]; then exit 4; fi
printf '%s' "$p"`

// Write uploads r into the file at req.Path: checked as the user, written
// to a temporary file beside it and moved into place when complete, so a
// failed upload never leaves half a file under the name.
func (s *Files) Write(ctx context.Context, domain string, req WriteRequest, r io.Reader) (string, int64, error) {
	user := req.User
	if user == "" {
		user = s.x.User
	}
	p, err := s.cleanPath(req.Path, user)
	if err != nil {
		return "", 0, err
	}
	if req.Mode == 0 {
		req.Mode = 0o644
	}
	if req.Mode > 0o7777 {
		return "", 0, invalid("mode", "must be octal permission bits such as 0644")
	}
	parents := "0"
	if req.Parents {
		parents = "1"
	}
	res, err := s.x.run(ctx, domain, user, nil, "/bin/sh", "-c", prepareScript, "sh", p, parents)
	if err != nil {
		return "", 0, err
	}
	if res.ExitCode != 0 {
		return "", 0, checkFailed(p, res)
	}
	final := string(res.Stdout)
	tmp := path.Join(path.Dir(final), ".bureau-upload-"+randomHex())
	n, err := s.copyIn(ctx, domain, tmp, r)
	if err == nil {
		var mv *desktop.ExecResult
		mv, err = s.x.run(ctx, domain, "root", nil, "/bin/sh", "-c",
			`chown -- "$1": "$2" && chmod -- "$3" "$2" && mv -f -- "$2" "$4"`, "sh", user, tmp, fmt.Sprintf("%o", req.Mode), final)
		if err == nil && mv.ExitCode != 0 {
			err = fmt.Errorf("finish upload of %s: %s", final, strings.TrimSpace(string(mv.Stderr)))
		}
	}
	if err != nil {
		s.x.run(context.WithoutCancel(ctx), domain, "root", nil, "/bin/rm", "-f", "--", tmp)
		return "", 0, err
	}
	return final, n, nil
}

// copyIn writes r to path in the guest.
func (s *Files) copyIn(ctx context.Context, domain, p string, r io.Reader) (int64, error) {
	var why error
	if s.x.channel(ctx) != nil {
		n, err := s.x.ch.WriteFile(ctx, domain, p, 0o600, r)
		if !noAgent(err) {
			return n, err
		}
		why = err
	}
	h, err := s.x.agent.GuestFileOpen(ctx, domain, p, "w")
	if err != nil {
		return 0, unavailableBoth(why, err)
	}
	buf := make([]byte, writeChunk)
	var total int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := s.x.agent.GuestFileWrite(ctx, domain, h, buf[:n]); err != nil {
				s.x.agent.GuestFileClose(context.WithoutCancel(ctx), domain, h)
				return total, unavailable(err)
			}
			total += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			s.x.agent.GuestFileClose(context.WithoutCancel(ctx), domain, h)
			return total, fmt.Errorf("upload: %w", rerr)
		}
	}
	if err := s.x.agent.GuestFileClose(ctx, domain, h); err != nil {
		return total, unavailable(err)
	}
	return total, nil
}

// deleteScript removes $1 as the user; a directory only when $2 = 1.
const deleteScript = resolveExisting + `
case "$p" in /|"$HOME") echo "refusing to delete $p" >&2; exit 4;; esac
if [ -d "$p" ] && [ ! -L "$1" ]; then
  [ "$2" = 1 ] || exit 5
  rm -rf -- "$p" || exit 4
else
  rm -f -- "$1" || exit 4
fi`

// Delete removes a file (or, with recursive, a directory) as the user.
func (s *Files) Delete(ctx context.Context, domain, p, user string, recursive bool) error {
	if user == "" {
		user = s.x.User
	}
	p, err := s.cleanPath(p, user)
	if err != nil {
		return err
	}
	rec := "0"
	if recursive {
		rec = "1"
	}
	r, err := s.x.run(ctx, domain, user, nil, "/bin/sh", "-c", deleteScript, "sh", p, rec)
	if err != nil {
		return err
	}
	if r.ExitCode == exitIsDir {
		return &desktop.ConflictError{Message: p + " is a directory: pass recursive=true to delete it and its content"}
	}
	if r.ExitCode != 0 {
		return checkFailed(p, r)
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
