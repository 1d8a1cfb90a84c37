package guest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// The guest agent hands over a command's output only once the command has
// exited, so a streamed command writes its stdout and stderr to two files
// in a private directory in the guest (root's, mode 0700) and bureau reads
// what has grown every poll, with the agent's file calls.

// StreamOutput receives a streamed command's output as it comes.
type StreamOutput interface {
	// Started: the command runs in the guest. Errors before it are the
	// request's; after it they come with output already sent.
	Started() error
	// Output is the next chunk of "stdout" or "stderr"; a chunk never
	// ends inside a UTF-8 character unless the stream ends there. An
	// error (the client went away) stops and kills the command.
	Output(stream string, b []byte) error
}

// defaultPoll is how often a streamed command is looked at.
const defaultPoll = 300 * time.Millisecond

// streamSetup makes the private directory and its two output files and
// prints the directory.
const streamSetup = `umask 077
d=$(mktemp -d /tmp/bureau-exec.XXXXXX) || exit 1
: >"$d/stdout" && : >"$d/stderr" || { rm -rf -- "$d"; exit 1; }
printf '%s' "$d"`

// streamLaunch sends the command's output to the files (opened here, as
// root, so the user's command writes them through inherited descriptors
// without reaching the directory) and becomes the command: timeout(1),
// which leads its own process group.
const streamLaunch = `exec >"$1/stdout" 2>"$1/stderr"; shift; exec "$@"`

// streamCleanup stops the command when $2 names it (TERM to timeout's
// process group and to every process under it, collected before any of
// them dies; KILL to those left after 5 s) and removes the directory $1.
const streamCleanup = `dir=$1 pid=$2
if [ -n "$pid" ]; then
  tree() { echo "$1"; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$c"; done; }
  pids=$(tree "$pid")
  kill -TERM -"$pid" 2>/dev/null
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  i=0
  while [ $i -lt 20 ]; do
    alive=
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -n "$alive" ] || break
    sleep 0.25
    i=$((i+1))
  done
  kill -KILL -"$pid" 2>/dev/null
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
fi
rm -rf -- "$dir"`

var streamDir = regexp.MustCompile(`^/tmp/bureau-exec\.[A-Za-z0-9]{6}$`)

// tail follows one output file.
type tail struct {
	name      string
	handle    int64
	open      bool
	off       int64
	sent      int
	carry     []byte // the start of a UTF-8 character cut by a read
	truncated bool
}

// ExecStream runs a command like Exec but hands its output to out as it
// is written. The result has no output, only how the command ended.
func (s *Commands) ExecStream(ctx context.Context, domain string, r ExecRequest, out StreamOutput) (*ExecResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var why error
	if s.x.channel(ctx) != nil {
		res, err := s.streamAgent(ctx, domain, r, out)
		if !noAgent(err) {
			if err != nil && ctx.Err() == nil && !errors.Is(err, errClient) {
				err = fmt.Errorf("bureau-agent: %v: %w", err, desktop.ErrUnavailable)
			}
			return res, err
		}
		why = err
	}
	full, timeout, limit := s.x.command(r)
	dir, err := s.streamDir(ctx, domain, why)
	if err != nil {
		return nil, err
	}
	var (
		pid    int
		exited bool
		tails  = []*tail{{name: "stdout"}, {name: "stderr"}}
	)
	// Clean up even when the client is gone.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, t := range tails {
			if t.open {
				s.x.agent.GuestFileClose(cctx, domain, t.handle)
			}
		}
		victim := ""
		if pid != 0 && !exited {
			victim = strconv.Itoa(pid)
		}
		s.x.agent.GuestExec(cctx, domain, desktop.Exec{Argv: []string{"/bin/sh", "-c", streamCleanup, "sh", dir, victim}, Env: s.x.env("", nil)})
		if victim != "" {
			s.x.agent.GuestExecStatus(cctx, domain, pid) // so the agent forgets it
		}
	}()
	launch := append([]string{"/bin/sh", "-c", streamLaunch, "sh", dir}, full...)
	begun := time.Now()
	pid, err = s.x.agent.GuestExecStart(ctx, domain, desktop.Exec{Argv: launch, Env: s.x.env(r.Cwd, r.Env), Stdin: []byte(r.Stdin)})
	if err != nil {
		return nil, unavailable(err)
	}
	if err := out.Started(); err != nil {
		return nil, err
	}
	for _, t := range tails {
		if t.handle, err = s.x.agent.GuestFileOpen(ctx, domain, dir+"/"+t.name, "r"); err != nil {
			return nil, unavailable(err)
		}
		t.open = true
	}
	poll := s.x.poll
	if poll <= 0 {
		poll = defaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	// timeout(1) ends the command; past this the guest is wedged.
	deadline := begun.Add(timeout + 20*time.Second)
	for {
		// The exit first: once it is seen, one more read gets everything.
		var code int
		exited, code, err = s.x.agent.GuestExecStatus(ctx, domain, pid)
		if err != nil {
			return nil, unavailable(err)
		}
		for _, t := range tails {
			if err := s.pump(ctx, domain, t, limit, out); err != nil {
				return nil, err
			}
		}
		if exited {
			res := &ExecResult{ExitCode: code, DurationMS: time.Since(begun).Milliseconds()}
			res.TimedOut = timedOut(code, time.Since(begun), timeout)
			for _, t := range tails {
				res.Truncated = res.Truncated || t.truncated
				if len(t.carry) > 0 {
					if err := out.Output(t.name, t.carry); err != nil {
						return nil, err
					}
				}
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the command did not end %s after its timeout: %w", 20*time.Second, desktop.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// streamDir makes the command's private directory in the guest.
func (s *Commands) streamDir(ctx context.Context, domain string, why error) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := s.x.agent.GuestExec(ctx, domain, desktop.Exec{Argv: []string{"/bin/sh", "-c", streamSetup}, Env: s.x.env("", nil)})
	if err != nil {
		return "", unavailableBoth(why, err)
	}
	dir := strings.TrimSpace(string(res.Stdout))
	if res.ExitCode != 0 || !streamDir.MatchString(dir) {
		return "", fmt.Errorf("making a temporary directory in the guest failed (exit %d): %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return dir, nil
}

// pump sends what t's file has grown by, up to the cap.
func (s *Commands) pump(ctx context.Context, domain string, t *tail, limit int, out StreamOutput) error {
	if t.truncated {
		return nil
	}
	// Seeking clears the end-of-file the last read left.
	if err := s.x.agent.GuestFileSeek(ctx, domain, t.handle, t.off); err != nil {
		return unavailable(err)
	}
	for {
		b, eof, err := s.x.agent.GuestFileRead(ctx, domain, t.handle, readChunk)
		if err != nil {
			return unavailable(err)
		}
		t.off += int64(len(b))
		if chunk := t.take(b, limit); len(chunk) > 0 {
			if err := out.Output(t.name, chunk); err != nil {
				return err
			}
		}
		if eof || len(b) == 0 || t.truncated {
			return nil
		}
	}
}

// take caps what t has sent at limit and holds back a UTF-8 character cut
// at the end of b (until the next chunk completes it), returning what to
// send now.
func (t *tail) take(b []byte, limit int) []byte {
	if room := limit - t.sent; len(b) > room {
		b, t.truncated = b[:max(room, 0)], true
	}
	t.sent += len(b)
	chunk := append(append([]byte(nil), t.carry...), b...)
	t.carry = nil
	if !t.truncated {
		chunk, t.carry = splitRune(chunk)
	}
	return chunk
}

// splitRune holds back an incomplete UTF-8 character at the end of b.
func splitRune(b []byte) ([]byte, []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i], append([]byte(nil), b[i:]...)
			}
			break
		}
	}
	return b, nil
}
