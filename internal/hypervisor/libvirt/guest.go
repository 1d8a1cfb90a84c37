package libvirt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// agentTimeout is how long libvirt waits for one guest-agent reply.
const agentTimeout = 10 // seconds

// agent sends one guest-agent command and decodes its "return" into out.
func (h *Hypervisor) agent(ctx context.Context, name string, cmd any, out any) error {
	req, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	resp, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (string, error) {
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
func (h *Hypervisor) GuestPing(ctx context.Context, name string) error {
	return h.agent(ctx, name, map[string]string{"execute": "guest-ping"}, nil)
}

// GuestExec runs a command in the guest and waits for it to end or ctx to
// expire. Output beyond what the agent buffers is reported as truncated.
func (h *Hypervisor) GuestExec(ctx context.Context, name string, e desktop.Exec) (*desktop.ExecResult, error) {
	if len(e.Argv) == 0 {
		return nil, fmt.Errorf("exec: empty command")
	}
	args := map[string]any{"path": e.Argv[0], "arg": e.Argv[1:], "capture-output": true}
	if len(e.Env) > 0 {
		args["env"] = e.Env
	}
	if len(e.Stdin) > 0 {
		args["input-data"] = base64.StdEncoding.EncodeToString(e.Stdin)
	}
	var started struct {
		PID int `json:"pid"`
	}
	if err := h.agent(ctx, name, map[string]any{"execute": "guest-exec", "arguments": args}, &started); err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.Argv[0], err)
	}
	for delay := 20 * time.Millisecond; ; delay = min(delay*2, 500*time.Millisecond) {
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode int    `json:"exitcode"`
			Signal   int    `json:"signal"`
			Out      string `json:"out-data"`
			Err      string `json:"err-data"`
			OutTrunc bool   `json:"out-truncated"`
			ErrTrunc bool   `json:"err-truncated"`
		}
		if err := h.agent(ctx, name, map[string]any{"execute": "guest-exec-status", "arguments": map[string]int{"pid": started.PID}}, &st); err != nil {
			return nil, fmt.Errorf("exec %q status: %w", e.Argv[0], err)
		}
		if st.Exited {
			out, err1 := base64.StdEncoding.DecodeString(st.Out)
			errOut, err2 := base64.StdEncoding.DecodeString(st.Err)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("exec %q: undecodable output", e.Argv[0])
			}
			code := st.ExitCode
			if st.Signal != 0 {
				code = 128 + st.Signal
			}
			return &desktop.ExecResult{ExitCode: code, Stdout: out, Stderr: errOut, Truncated: st.OutTrunc || st.ErrTrunc}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("exec %q: %w", e.Argv[0], ctx.Err())
		case <-time.After(delay):
		}
	}
}
