package guest

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
)

// Background is what bureau-agent keeps running in a desktop: background
// processes (procs.go) and services (services.go).
type Background struct{ x *core }

// Process is a command running (or that ran) in the background of a
// desktop, started with "background": true. Its output (both streams)
// goes to a log in the desktop.
type Process struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	PID       int        `json:"pid"`
	Command   []string   `json:"command"`
	Running   bool       `json:"running"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	LogBytes  int64      `json:"log_bytes"`
}

var procID = regexp.MustCompile(`^p-[0-9a-f]{12}$`)

// needAgent explains that a call only bureau-agent can do found none.
func needAgent(what string, err error) error {
	if noAgent(err) {
		return fmt.Errorf("%s needs bureau-agent, which is not answering in this desktop (%v): %w", what, err, desktop.ErrUnavailable)
	}
	return err
}

// Start runs a command in the background as the user (in their home or
// Cwd) and returns at once; Stdin and TimeoutS do not apply.
func (s *Background) Start(ctx context.Context, domain string, r ExecRequest) (*Process, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	switch {
	case r.Stdin != "":
		return nil, invalid("stdin", "a background process reads no input")
	case r.TimeoutS != 0:
		return nil, invalid("timeout_s", "a background process runs until it ends or is killed (DELETE /processes/{id})")
	case len(r.Name) > 64 || !printableLine(r.Name):
		return nil, invalid("name", "at most 64 printable characters")
	case s.x.ch == nil:
		return nil, needAgent("a background process", client.ErrNoAgent)
	}
	p, err := s.x.ch.Spawn(ctx, domain, r.Name, client.Command{Argv: s.x.asUser(r), Env: s.x.env(r.Cwd, r.Env)})
	if err != nil {
		return nil, needAgent("a background process", err)
	}
	p.StartedAt = time.Now().UnixMilli()
	return process(p), nil
}

func printableLine(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// process shows a Proc with the user's command rather than bureau's
// wrapper around it.
func process(p client.Proc) *Process {
	out := &Process{ID: p.ID, Name: p.Name, PID: p.PID, Command: userCommand(p.Argv), Running: p.Running,
		ExitCode: p.ExitCode, StartedAt: time.UnixMilli(p.StartedAt).UTC(), LogBytes: p.LogBytes}
	if p.EndedAt != 0 {
		t := time.UnixMilli(p.EndedAt).UTC()
		out.EndedAt = &t
	}
	return out
}

// userCommand strips the runuser wrapper (see wrap) off argv.
func userCommand(argv []string) []string {
	for i, a := range argv {
		if a == "sh" && i > 0 && strings.Contains(argv[i-1], `cd "${BUREAU_CWD`) {
			return argv[i+1:]
		}
	}
	return argv
}

// Processes lists the desktop's background processes, oldest first.
func (s *Background) Processes(ctx context.Context, domain string) ([]*Process, error) {
	if s.x.ch == nil {
		return nil, needAgent("listing background processes", client.ErrNoAgent)
	}
	list, err := s.x.ch.Procs(ctx, domain)
	if err != nil {
		return nil, needAgent("listing background processes", err)
	}
	out := make([]*Process, 0, len(list))
	for _, p := range list {
		out = append(out, process(p))
	}
	return out, nil
}

// Process returns one background process.
func (s *Background) Process(ctx context.Context, domain, id string) (*Process, error) {
	if !procID.MatchString(id) {
		return nil, fmt.Errorf("background process %q: %w", id, desktop.ErrNotFound)
	}
	list, err := s.Processes(ctx, domain)
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		if p.ID == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("background process %s: %w", id, desktop.ErrNotFound)
}

// signals bureau accepts by name.
var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

// Signal sends a signal by name ("" = TERM) to a background process and
// the processes of its session.
func (s *Background) Signal(ctx context.Context, domain, id, name string) error {
	if name == "" {
		name = "TERM"
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	if !ok {
		return invalid("signal", "one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT")
	}
	if !procID.MatchString(id) {
		return fmt.Errorf("background process %q: %w", id, desktop.ErrNotFound)
	}
	if s.x.ch == nil {
		return needAgent("signalling a background process", client.ErrNoAgent)
	}
	return needAgent("signalling a background process", s.x.ch.Kill(ctx, domain, id, int(sig)))
}

// MaxLogTail bounds ?tail=.
const MaxLogTail = 64 << 20

// ProcessLog copies a background process's log to w: the last tail bytes
// (0: all of it), then with follow what it writes until it ends.
func (s *Background) ProcessLog(ctx context.Context, domain, id string, tail int64, follow bool, w io.Writer) error {
	if tail < 0 || tail > MaxLogTail {
		return invalid("tail", fmt.Sprintf("must be 0..%d bytes", MaxLogTail))
	}
	if !procID.MatchString(id) {
		return fmt.Errorf("background process %q: %w", id, desktop.ErrNotFound)
	}
	if s.x.ch == nil {
		return needAgent("reading a process log", client.ErrNoAgent)
	}
	return needAgent("reading a process log", s.x.ch.Log(ctx, domain, id, -tail, follow, w))
}
