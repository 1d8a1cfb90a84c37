package guest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/desktop"
)

// TestProbe runs the readiness check for real on this machine (the
// "guest" of agenttest): through bureau-agent, then QEMU's guest agent
// when bureau-agent is not there, and fails when neither answers.
func TestProbe(t *testing.T) {
	if _, err := os.Stat("/usr/bin/xfce4-session"); err == nil {
		t.Skip("this machine has an Xfce session: the check would wait for one of root's")
	}
	if _, err := os.Stat("/var/lib/cloud/instance"); err == nil {
		t.Skip("this machine runs cloud-init")
	}
	ctx := context.Background()
	s := agentService(t, agenttest.Client(t), nil)
	p, err := s.Probe(ctx, "d")
	if err != nil || !p.Ready() || p.Via != "bureau-agent" {
		t.Fatalf("root's guest: %+v %v", p, err)
	}
	s.User = "no-such-user"
	if p, err = s.Probe(ctx, "d"); err != nil || p.Ready() || p.Waiting != WaitUser {
		t.Fatalf("a guest whose user is not made yet: %+v %v", p, err)
	}

	q := agentService(t, agenttest.ClientOf(t, agenttest.NoAgent{}), newHostAgent(t))
	if p, err = q.Probe(ctx, "d"); err != nil || !p.Ready() || p.Via != "qemu-guest-agent" {
		t.Fatalf("through QEMU's guest agent: %+v %v", p, err)
	}
	n := agentService(t, agenttest.ClientOf(t, agenttest.NoAgent{}), failingAgent{})
	if _, err = n.Probe(ctx, "d"); !errors.Is(err, desktop.ErrUnavailable) {
		t.Fatalf("no agent answers: %v", err)
	}
}

// TestProbeAnswers: what the check prints is read strictly.
func TestProbeAnswers(t *testing.T) {
	for out, want := range map[string]string{"ready\n": "", "session\n": WaitSession, "cloud-init": WaitSetup, "user": WaitUser} {
		p, err := Probe{}.read(&desktop.ExecResult{Stdout: []byte(out)})
		if err != nil || p.Waiting != want {
			t.Errorf("%q: %+v %v", out, p, err)
		}
	}
	if _, err := (Probe{}).read(&desktop.ExecResult{ExitCode: 127, Stderr: []byte("sh: not found")}); err == nil {
		t.Error("an empty answer is taken")
	}
}
