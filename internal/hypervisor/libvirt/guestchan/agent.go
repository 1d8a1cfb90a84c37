// Package guestchan reaches into a running guest: Agent sends commands to
// QEMU's guest agent (exec, files, ping, clock: agent.go), Channel opens a
// byte stream to bureau's own agent, bureau-agent (channel.go).
package guestchan

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// Agent is QEMU's guest agent in each domain, on the host it runs on.
type Agent struct {
	link *link.Conn
}

// NewAgent is the guest agent of the domains c routes to.
func NewAgent(c *link.Conn) *Agent { return &Agent{link: c} }

// agentTimeout is how long libvirt waits for one guest-agent reply.
const agentTimeout = 10 // seconds

// agent sends one guest-agent command and decodes its "return" into out.
func (a *Agent) agent(ctx context.Context, name string, cmd any, out any) error {
	req, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	resp, err := link.WithDomain(ctx, a.link, name, func(d *libvirt.Domain) (string, error) {
		return d.QemuAgentCommand(string(req), libvirt.DomainQemuAgentCommandTimeout(agentTimeout), 0)
	})
	if err != nil {
		return err
	}
	var env struct {
		Return json.RawMessage `json:"return"`
	}
	if err := json.Unmarshal([]byte(resp), &env); err != nil {
		return fmt.Errorf("guest agent reply: %w", err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Return, out)
}

// GuestPing succeeds when the guest agent answers.
func (a *Agent) GuestPing(ctx context.Context, name string) error {
	return a.agent(ctx, name, map[string]string{"execute": "guest-ping"}, nil)
}

// SyncGuestClock sets the guest's clock to the host's, after a resume left
// it behind by the time the VM spent frozen or saved.
func (a *Agent) SyncGuestClock(ctx context.Context, name string) error {
	return a.agent(ctx, name, map[string]any{"execute": "guest-set-time",
		"arguments": map[string]int64{"time": time.Now().UnixNano()}}, nil)
}

// startExec starts e with guest-exec, capturing its output or not, and
// returns its pid.
func (a *Agent) startExec(ctx context.Context, name string, e desktop.Exec, capture bool) (int, error) {
	if len(e.Argv) == 0 {
		return 0, fmt.Errorf("exec: empty command")
	}
	args := map[string]any{"path": e.Argv[0], "arg": e.Argv[1:], "capture-output": capture}
	if len(e.Env) > 0 {
		args["env"] = e.Env
	}
	if len(e.Stdin) > 0 {
		args["input-data"] = base64.StdEncoding.EncodeToString(e.Stdin)
	}
	var started struct {
		PID int `json:"pid"`
	}
	if err := a.agent(ctx, name, map[string]any{"execute": "guest-exec", "arguments": args}, &started); err != nil {
		return 0, fmt.Errorf("exec %q: %w", e.Argv[0], err)
	}
	return started.PID, nil
}

// execStatus is guest-exec-status's reply.
type execStatus struct {
	Exited   bool   `json:"exited"`
	ExitCode int    `json:"exitcode"`
	Signal   int    `json:"signal"`
	Out      string `json:"out-data"`
	Err      string `json:"err-data"`
	OutTrunc bool   `json:"out-truncated"`
	ErrTrunc bool   `json:"err-truncated"`
}

// code is the exit code, 128+signal for a process a signal ended.
func (st *execStatus) code() int {
	if st.Signal != 0 {
		return 128 + st.Signal
	}
	return st.ExitCode
}

func (a *Agent) execStatus(ctx context.Context, name string, pid int) (*execStatus, error) {
	var st execStatus
	if err := a.agent(ctx, name, map[string]any{"execute": "guest-exec-status", "arguments": map[string]int{"pid": pid}}, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// GuestExec runs a command in the guest and waits for it to end or ctx to
// expire. Output beyond what the agent buffers is reported as truncated.
func (a *Agent) GuestExec(ctx context.Context, name string, e desktop.Exec) (*desktop.ExecResult, error) {
	pid, err := a.startExec(ctx, name, e, true)
	if err != nil {
		return nil, err
	}
	// Polled at most every 200 ms: a command of a few seconds (a warm
	// create's identity) is seen to end soon after it does.
	for delay := 20 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		st, err := a.execStatus(ctx, name, pid)
		if err != nil {
			return nil, fmt.Errorf("exec %q status: %w", e.Argv[0], err)
		}
		if st.Exited {
			out, err1 := base64.StdEncoding.DecodeString(st.Out)
			errOut, err2 := base64.StdEncoding.DecodeString(st.Err)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("exec %q: undecodable output", e.Argv[0])
			}
			return &desktop.ExecResult{ExitCode: st.code(), Stdout: out, Stderr: errOut, Truncated: st.OutTrunc || st.ErrTrunc}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("exec %q: %w", e.Argv[0], ctx.Err())
		case <-time.After(delay):
		}
	}
}

// GuestExecStart starts a command in the guest without capturing its
// output (it must redirect its own) and returns its pid for
// GuestExecStatus.
func (a *Agent) GuestExecStart(ctx context.Context, name string, e desktop.Exec) (int, error) {
	return a.startExec(ctx, name, e, false)
}

// GuestExecStatus says whether a process GuestExecStart started has
// exited, and its exit code (128+signal when a signal ended it). The agent
// forgets the process once it has reported the exit.
func (a *Agent) GuestExecStatus(ctx context.Context, name string, pid int) (bool, int, error) {
	st, err := a.execStatus(ctx, name, pid)
	if err != nil {
		return false, 0, fmt.Errorf("exec status of pid %d: %w", pid, err)
	}
	return st.Exited, st.code(), nil
}

// GuestFileOpen opens a file in the guest (mode as fopen's: "r", "w", "a").
func (a *Agent) GuestFileOpen(ctx context.Context, name, path, mode string) (int64, error) {
	var handle int64
	err := a.agent(ctx, name, map[string]any{"execute": "guest-file-open", "arguments": map[string]string{"path": path, "mode": mode}}, &handle)
	if err != nil {
		return 0, fmt.Errorf("open %s in the guest: %w", path, err)
	}
	return handle, nil
}

// GuestFileRead reads up to n bytes from the handle's position; eof says
// the end was reached.
func (a *Agent) GuestFileRead(ctx context.Context, name string, handle int64, n int) ([]byte, bool, error) {
	var r struct {
		Count int    `json:"count"`
		Buf   string `json:"buf-b64"`
		EOF   bool   `json:"eof"`
	}
	if err := a.agent(ctx, name, map[string]any{"execute": "guest-file-read", "arguments": map[string]any{"handle": handle, "count": n}}, &r); err != nil {
		return nil, false, fmt.Errorf("read in the guest: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(r.Buf)
	if err != nil {
		return nil, false, fmt.Errorf("read in the guest: %w", err)
	}
	return b, r.EOF, nil
}

// GuestFileSeek moves the handle to offset from the start (and clears a
// sticky end-of-file, so a growing file can be read further).
func (a *Agent) GuestFileSeek(ctx context.Context, name string, handle, offset int64) error {
	err := a.agent(ctx, name, map[string]any{"execute": "guest-file-seek", "arguments": map[string]any{"handle": handle, "offset": offset, "whence": "set"}}, nil)
	if err != nil {
		return fmt.Errorf("seek in the guest: %w", err)
	}
	return nil
}

// GuestFileWrite writes all of b at the handle's position.
func (a *Agent) GuestFileWrite(ctx context.Context, name string, handle int64, b []byte) error {
	var r struct {
		Count int `json:"count"`
	}
	err := a.agent(ctx, name, map[string]any{"execute": "guest-file-write", "arguments": map[string]any{"handle": handle, "buf-b64": base64.StdEncoding.EncodeToString(b)}}, &r)
	if err != nil {
		return fmt.Errorf("write in the guest: %w", err)
	}
	if r.Count != len(b) {
		return fmt.Errorf("write in the guest: %d of %d bytes written", r.Count, len(b))
	}
	return nil
}

// GuestFileClose closes a handle.
func (a *Agent) GuestFileClose(ctx context.Context, name string, handle int64) error {
	if err := a.agent(ctx, name, map[string]any{"execute": "guest-file-close", "arguments": map[string]any{"handle": handle}}, nil); err != nil {
		return fmt.Errorf("close in the guest: %w", err)
	}
	return nil
}
