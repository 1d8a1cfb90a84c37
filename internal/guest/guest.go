// Package guest runs commands and moves files inside a desktop: exec with
// user, directory, environment and timeout; background processes,
// services and terminals; file download, upload and listing checked
// against the user's own permissions inside the guest; the clipboard and
// the screen resolution of the user's X session. It asks bureau-agent
// (internal/agent/client) first and, where the agent is not up, does what
// it can through the desktop's QEMU guest agent.
package guest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// Agent is the guest agent of a VM.
type Agent interface {
	GuestExec(ctx context.Context, domain string, e desktop.Exec) (*desktop.ExecResult, error)
	// GuestExecStart starts a command without capturing its output and
	// returns its pid; GuestExecStatus says whether it has exited and its
	// exit code (128+signal when a signal ended it).
	GuestExecStart(ctx context.Context, domain string, e desktop.Exec) (int, error)
	GuestExecStatus(ctx context.Context, domain string, pid int) (bool, int, error)
	GuestFileOpen(ctx context.Context, domain, path, mode string) (int64, error)
	GuestFileRead(ctx context.Context, domain string, handle int64, n int) ([]byte, bool, error)
	GuestFileWrite(ctx context.Context, domain string, handle int64, b []byte) error
	// GuestFileSeek moves to offset from the start and clears end-of-file.
	GuestFileSeek(ctx context.Context, domain string, handle, offset int64) error
	GuestFileClose(ctx context.Context, domain string, handle int64) error
}

// Service is the guest-side API: one type per feature, embedded so their
// methods are Service's, all over one exec path (core).
type Service struct {
	*core
	Commands
	Files
	Background
	Session
	Health
}

// core is the exec path every feature uses: a command run as a user
// through bureau-agent's channel first, then the QEMU guest agent.
type core struct {
	agent Agent
	// ch is bureau-agent, asked first when set.
	ch  Channel
	sup Supervisor
	// User is the desktop's user: the default for exec and files.
	User string
	// poll is how often a streamed command is looked at (default 300 ms).
	poll time.Duration
}

// Commands runs commands in the foreground: exec, streamed exec,
// terminals and streams to a port.
type Commands struct{ x *core }

// New builds a Service.
func New(a Agent) *Service {
	c := &core{agent: a, User: "agent"}
	s := &Service{core: c, Commands: Commands{x: c}, Files: Files{x: c}, Background: Background{x: c}, Health: Health{x: c}}
	s.Session = Session{x: c, procs: &s.Background}
	return s
}

// Limits.
const (
	DefaultTimeout   = 60 * time.Second
	MaxTimeout       = time.Hour
	DefaultMaxOutput = 1 << 20
	MaxOutput        = 16 << 20
	maxStdin         = 8 << 20
)

// ExecRequest is a command to run in the guest.
type ExecRequest struct {
	// Cmd is a shell command line (bash -c); Argv runs a program directly.
	Cmd  string            `json:"cmd,omitempty"`
	Argv []string          `json:"argv,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	// Cwd defaults to the user's home.
	Cwd string `json:"cwd,omitempty"`
	// User defaults to the desktop's user; "root" is allowed.
	User     string `json:"user,omitempty"`
	TimeoutS int    `json:"timeout_s,omitempty"`
	Stdin    string `json:"stdin,omitempty"`
	// MaxOutputBytes caps stdout and stderr each (default 1 MiB).
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
	// Background starts the command and returns at once with a process
	// (see Start); Name labels it.
	Background bool   `json:"background,omitempty"`
	Name       string `json:"name,omitempty"`
	// Secrets are set as environment variables from bureau's secrets of
	// these names (bureau fills Env with them before the call).
	Secrets []string `json:"secrets,omitempty"`
}

// ExecResult is what a command did. Output that is not UTF-8 is base64
// (Encoding says so).
type ExecResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Encoding   string `json:"encoding,omitempty"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
}

var (
	userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func invalid(field, msg string) error { return &desktop.ValidationError{Field: field, Message: msg} }

// Validate checks a request without running it.
func (r *ExecRequest) Validate() error {
	switch {
	case r.Cmd == "" && len(r.Argv) == 0:
		return invalid("cmd", "give cmd (a shell command line) or argv")
	case r.Cmd != "" && len(r.Argv) > 0:
		return invalid("cmd", "give cmd or argv, not both")
	case len(r.Argv) > 0 && r.Argv[0] == "":
		return invalid("argv", "argv[0] is empty")
	case r.User != "" && !userName.MatchString(r.User):
		return invalid("user", "not a user name")
	case r.TimeoutS < 0 || time.Duration(r.TimeoutS)*time.Second > MaxTimeout:
		return invalid("timeout_s", fmt.Sprintf("must be 0..%d seconds", int(MaxTimeout.Seconds())))
	case r.MaxOutputBytes < 0 || r.MaxOutputBytes > MaxOutput:
		return invalid("max_output_bytes", fmt.Sprintf("must be 0..%d", MaxOutput))
	case len(r.Stdin) > maxStdin:
		return invalid("stdin", fmt.Sprintf("at most %d bytes", maxStdin))
	case strings.ContainsRune(r.Cwd, 0) || strings.ContainsRune(r.Cmd, 0):
		return invalid("cmd", "contains a NUL byte")
	}
	for k := range r.Env {
		if !envName.MatchString(k) {
			return invalid("env", fmt.Sprintf("%q is not a variable name", k))
		}
	}
	return validSecretNames(r.Secrets, r.Env)
}

// validSecretNames checks the secrets a request names against its env.
func validSecretNames(names []string, env map[string]string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if !SecretName.MatchString(n) {
			return invalid("secrets", fmt.Sprintf("%q is not a secret name (A-Z, 0-9 and _)", n))
		}
		if _, ok := env[n]; ok && !seen[n] {
			return invalid("env", fmt.Sprintf("%s is also a secret: give it one way", n))
		}
		if seen[n] {
			return invalid("secrets", n+" is named twice")
		}
		seen[n] = true
	}
	return nil
}

// WithSecrets returns r with the secrets' values added to its Env (and no
// longer named, so the request validates again).
func (r ExecRequest) WithSecrets(values map[string]string) ExecRequest {
	if len(values) == 0 {
		return r
	}
	env := make(map[string]string, len(r.Env)+len(values))
	for k, v := range r.Env {
		env[k] = v
	}
	for k, v := range values {
		env[k] = v
	}
	r.Env, r.Secrets = env, nil
	return r
}

// Exec runs a command and waits for it (or its timeout).
func (s *Commands) Exec(ctx context.Context, domain string, r ExecRequest) (*ExecResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	full, timeout, limit := s.x.command(r)
	ctx, cancel := context.WithTimeout(ctx, timeout+20*time.Second)
	defer cancel()
	begun := time.Now()
	res, err := s.x.exec(ctx, domain, desktop.Exec{Argv: full, Env: s.x.env(r.Cwd, r.Env), Stdin: []byte(r.Stdin)}, limit)
	if err != nil {
		return nil, err
	}
	out := &ExecResult{ExitCode: res.ExitCode, Truncated: res.Truncated, DurationMS: time.Since(begun).Milliseconds()}
	out.TimedOut = timedOut(res.ExitCode, time.Since(begun), timeout)
	stdout, t1 := capBytes(res.Stdout, limit)
	stderr, t2 := capBytes(res.Stderr, limit)
	out.Truncated = out.Truncated || t1 || t2
	if utf8.Valid(stdout) && utf8.Valid(stderr) {
		out.Stdout, out.Stderr = string(stdout), string(stderr)
	} else {
		out.Stdout, out.Stderr, out.Encoding = b64(stdout), b64(stderr), "base64"
	}
	return out, nil
}

// command is the guest command line for r (timeout(1) around the user's
// command), its timeout and the cap on each of stdout and stderr.
func (s *core) command(r ExecRequest) ([]string, time.Duration, int) {
	timeout := DefaultTimeout
	if r.TimeoutS > 0 {
		timeout = time.Duration(r.TimeoutS) * time.Second
	}
	limit := r.MaxOutputBytes
	if limit == 0 {
		limit = DefaultMaxOutput
	}
	// timeout(1) ends the command in the guest; bureau stops waiting a
	// little after that in case the guest is wedged.
	full := append([]string{"/usr/bin/timeout", "--kill-after=5", fmt.Sprint(int(timeout.Seconds()))}, s.asUser(r)...)
	return full, timeout, limit
}

// timedOut: timeout(1) exits 124 when it stopped the command (137 after
// KILL).
func timedOut(code int, took, timeout time.Duration) bool {
	return code == 124 || code == 137 && took >= timeout
}

// asUser is r's command (cmd through bash, or argv) run as its user (the
// desktop's by default) in its directory.
func (s *core) asUser(r ExecRequest) []string {
	argv := r.Argv
	if r.Cmd != "" {
		argv = []string{"/bin/bash", "-c", r.Cmd}
	}
	user := r.User
	if user == "" {
		user = s.User
	}
	return s.wrap(user, argv)
}

// wrap runs argv as user in the requested directory (BUREAU_CWD: absolute,
// or relative to the user's home; default the home).
func (s *core) wrap(user string, argv []string) []string {
	return append([]string{"/usr/sbin/runuser", "-u", user, "--", "/bin/sh", "-c",
		`cd "$HOME" 2>/dev/null; cd "${BUREAU_CWD:-.}" || exit 126; unset BUREAU_CWD; exec "$@"`, "sh"}, argv...)
}

// env is the command's whole environment (the guest agent passes no other).
func (s *core) env(cwd string, extra map[string]string) []string {
	base := map[string]string{
		"PATH":       "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG":       "C.UTF-8",
		"DISPLAY":    ":0",
		"XAUTHORITY": "/home/" + s.User + "/.Xauthority",
		"TERM":       "xterm-256color",
	}
	for k, v := range extra {
		base[k] = v
	}
	if cwd != "" {
		base["BUREAU_CWD"] = cwd
	}
	out := make([]string, 0, len(base))
	for k, v := range base {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func capBytes(b []byte, n int) ([]byte, bool) {
	if len(b) <= n {
		return b, false
	}
	return b[:n], true
}

// unavailable marks a guest-agent failure as the desktop being unable to
// answer (503) rather than a fault in bureau.
func unavailable(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("the guest agent did not answer (is the desktop still booting?): %v: %w", err, desktop.ErrUnavailable)
}

// run runs argv as user with stdin and returns its result, whatever the
// exit code.
func (s *core) run(ctx context.Context, domain, user string, stdin []byte, argv ...string) (*desktop.ExecResult, error) {
	if user == "" {
		user = s.User
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return s.exec(ctx, domain, desktop.Exec{Argv: s.wrap(user, argv), Env: s.env("", nil), Stdin: stdin}, MaxOutput)
}
