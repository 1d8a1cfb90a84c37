package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
)

// Channel is bureau's own agent in the desktop (bureau-agent): real
// pipes, background processes and streamed files. Its calls fail with
// client.ErrNoAgent when no agent is up in the desktop (yet); QEMU's
// guest agent then does what it can.
type Channel interface {
	Exec(ctx context.Context, domain string, cmd client.Command, io client.ExecIO) (client.Exit, error)
	Spawn(ctx context.Context, domain, name string, cmd client.Command) (client.Proc, error)
	Procs(ctx context.Context, domain string) ([]client.Proc, error)
	Kill(ctx context.Context, domain, id string, signal int) error
	Log(ctx context.Context, domain, id string, offset int64, follow bool, w io.Writer) error
	ReadFile(ctx context.Context, domain, path string, w io.Writer) (int64, error)
	WriteFile(ctx context.Context, domain, path string, mode uint32, r io.Reader) (int64, error)
	DialPort(ctx context.Context, domain string, port int) (net.Conn, error)
	PTY(ctx context.Context, domain string, cmd client.Command, rows, cols int) (*client.Terminal, error)
	Info(ctx context.Context, domain string) (client.Info, error)
	// Shipped is the digest of the agent binary bureau installs.
	Shipped() string
}

// AgentStatus says whether bureau-agent answers in a desktop.
type AgentStatus struct {
	Up      bool   `json:"up"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	// Current: it runs the binary this bureau ships.
	Current bool `json:"current"`
	// Error says why it does not answer; calls then go through QEMU's
	// guest agent where they can.
	Error string `json:"error,omitempty"`
}

// Agent reports bureau-agent's status in a desktop.
func (s *Health) Agent(ctx context.Context, domain string) *AgentStatus {
	if s.x.ch == nil {
		return &AgentStatus{Error: "this bureau runs without bureau-agent"}
	}
	info, err := s.x.ch.Info(ctx, domain)
	if err != nil {
		return &AgentStatus{Error: err.Error()}
	}
	return &AgentStatus{Up: true, Version: info.Version, SHA256: info.SHA256, Current: info.SHA256 == s.x.ch.Shipped()}
}

// WithChannel makes s use bureau-agent first.
func (s *Service) WithChannel(c Channel) *Service {
	s.ch = c
	s.sup, _ = c.(Supervisor)
	return s
}

// Supervisor is the part of bureau-agent that keeps services running.
type Supervisor interface {
	PutService(ctx context.Context, domain string, spec client.ServiceSpec, values map[string]string) (client.ServiceStatus, error)
	Services(ctx context.Context, domain string) ([]client.ServiceStatus, error)
	ControlService(ctx context.Context, domain, name, action string) (client.ServiceStatus, error)
	SetSecrets(ctx context.Context, domain string, values map[string]string) ([]client.ServiceStatus, error)
	ServiceLog(ctx context.Context, domain, name string, offset int64, follow bool, w io.Writer) error
}

type viaQEMUKey struct{}

// ViaQEMU makes calls on ctx skip bureau-agent and use QEMU's guest agent
// (to compare the two, or to work around a broken bureau-agent).
func ViaQEMU(ctx context.Context) context.Context {
	return context.WithValue(ctx, viaQEMUKey{}, true)
}

// AsksQEMU says whether calls on ctx are to skip bureau-agent (ViaQEMU).
func AsksQEMU(ctx context.Context) bool { return ctx.Value(viaQEMUKey{}) != nil }

// channel is bureau-agent unless ctx asks for QEMU's agent.
func (s *core) channel(ctx context.Context) Channel {
	if AsksQEMU(ctx) {
		return nil
	}
	return s.ch
}

// noAgent reports whether err means bureau-agent is not there to ask.
func noAgent(err error) bool { return errors.Is(err, client.ErrNoAgent) }

// exec runs e through bureau-agent, or QEMU's guest agent when bureau-agent
// is not up, keeping at most limit bytes of each output (and saying so).
func (s *core) exec(ctx context.Context, domain string, e desktop.Exec, limit int) (*desktop.ExecResult, error) {
	var why error
	if s.channel(ctx) != nil {
		res, err := s.execAgent(ctx, domain, e, limit)
		if !noAgent(err) {
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("bureau-agent: %v: %w", err, desktop.ErrUnavailable)
			}
			return res, err
		}
		why = err
	}
	res, err := s.agent.GuestExec(ctx, domain, e)
	if err != nil {
		return nil, unavailableBoth(why, err)
	}
	return res, nil
}

// capped keeps the first limit bytes written to it.
type capped struct {
	bytes.Buffer
	limit     int
	truncated bool
}

func (c *capped) add(b []byte) {
	if room := c.limit - c.Len(); len(b) > room {
		b, c.truncated = b[:max(room, 0)], true
	}
	c.Write(b)
}

func (s *core) execAgent(ctx context.Context, domain string, e desktop.Exec, limit int) (*desktop.ExecResult, error) {
	out, errOut := &capped{limit: limit}, &capped{limit: limit}
	var stdin io.Reader
	if len(e.Stdin) > 0 {
		stdin = bytes.NewReader(e.Stdin)
	}
	ex, err := s.ch.Exec(ctx, domain, client.Command{Argv: e.Argv, Env: e.Env}, client.ExecIO{Stdin: stdin,
		Out: func(stream string, b []byte) error {
			if stream == "stdout" {
				out.add(b)
			} else {
				errOut.add(b)
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	return &desktop.ExecResult{ExitCode: ex.Code, Stdout: out.Bytes(), Stderr: errOut.Bytes(), Truncated: out.truncated || errOut.truncated}, nil
}

// errClient marks a failure on the caller's side of a stream (it went
// away), not the desktop's.
var errClient = errors.New("the client stopped reading")

// streamAgent is ExecStream through bureau-agent: output as it is
// written, no polling. It reports client.ErrNoAgent before anything
// was started, so the caller can fall back.
func (s *Commands) streamAgent(ctx context.Context, domain string, r ExecRequest, out StreamOutput) (*ExecResult, error) {
	full, timeout, limit := s.x.command(r)
	tails := map[string]*tail{"stdout": {name: "stdout"}, "stderr": {name: "stderr"}}
	var stdin io.Reader
	if r.Stdin != "" {
		stdin = strings.NewReader(r.Stdin)
	}
	begun := time.Now()
	ex, err := s.x.ch.Exec(ctx, domain, client.Command{Argv: full, Env: s.x.env(r.Cwd, r.Env)}, client.ExecIO{
		Stdin: stdin,
		Started: func() error {
			if err := out.Started(); err != nil {
				return fmt.Errorf("%w: %v", errClient, err)
			}
			return nil
		},
		Out: func(stream string, b []byte) error {
			t := tails[stream]
			if t.truncated {
				return nil
			}
			chunk := t.take(b, limit)
			if len(chunk) == 0 {
				return nil
			}
			if err := out.Output(stream, chunk); err != nil {
				return fmt.Errorf("%w: %v", errClient, err)
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	res := &ExecResult{ExitCode: ex.Code, DurationMS: time.Since(begun).Milliseconds()}
	res.TimedOut = timedOut(ex.Code, time.Since(begun), timeout)
	for _, name := range []string{"stdout", "stderr"} {
		t := tails[name]
		res.Truncated = res.Truncated || t.truncated
		if len(t.carry) > 0 {
			if err := out.Output(name, t.carry); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// unavailableBoth explains that neither agent answered.
func unavailableBoth(agentErr, gaErr error) error {
	if errors.Is(gaErr, context.Canceled) {
		return gaErr
	}
	if agentErr == nil {
		return unavailable(gaErr)
	}
	return fmt.Errorf("neither bureau-agent (%v) nor QEMU's guest agent (%v) answered; is the desktop still booting?: %w", agentErr, gaErr, desktop.ErrUnavailable)
}
