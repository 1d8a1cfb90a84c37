package guest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Health says whether a desktop's agents answer and what it still waits
// for before it is ready.
type Health struct{ x *core }

// What a desktop that is not ready waits for (Probe.Waiting).
const (
	// WaitAgent: no agent in the guest answers yet (it is booting).
	WaitAgent = "agent"
	// WaitUser: the desktop's user does not exist yet (cloud-init makes it).
	WaitUser = "user"
	// WaitSetup: cloud-init's first-boot setup has not finished.
	WaitSetup = "cloud-init"
	// WaitSession: the user's graphical session is not up yet.
	WaitSession = "session"
)

// Probe is what is up in a guest: which agent answered (Via:
// "bureau-agent" or "qemu-guest-agent") and what the desktop still waits
// for ("" when it is ready).
type Probe struct {
	Via     string
	Waiting string
}

// Ready says whether nothing is left to wait for.
func (p Probe) Ready() bool { return p.Waiting == "" }

// probeScript prints what the guest still waits for, or "ready": the
// user exists, cloud-init (where the image has it) has finished, and where
// the image has an Xfce session, the user's session, panel and desktop
// run. An image without a graphical session is ready once its user and
// setup are.
func probeScript(user string) string {
	return fmt.Sprintf(`u=%s
id -u "$u" >/dev/null 2>&1 || { echo %s; exit 0; }
if [ -d /var/lib/cloud/instance ] && [ ! -e /var/lib/cloud/instance/boot-finished ]; then echo %s; exit 0; fi
if [ -x /usr/bin/xfce4-session ]; then
  for p in xfce4-session xfce4-panel xfdesktop; do pgrep -u "$u" -x "$p" >/dev/null || { echo %s; exit 0; }; done
fi
echo ready
`, user, WaitUser, WaitSetup, WaitSession)
}

// Probe asks the guest what is up, as root, through bureau-agent or, when
// it is not there, QEMU's guest agent. An error means no agent answered:
// the guest is still booting (or wedged).
func (s *Health) Probe(ctx context.Context, domain string) (Probe, error) {
	e := desktop.Exec{Argv: []string{"/bin/sh", "-c", probeScript(s.x.User)}, Env: s.x.env("", nil)}
	var (
		res *desktop.ExecResult
		err error
		why error
	)
	p := Probe{Via: "bureau-agent"}
	if s.x.channel(ctx) != nil {
		res, err = s.x.execAgent(ctx, domain, e, 4096)
		if err == nil || !noAgent(err) {
			if err != nil {
				return Probe{}, fmt.Errorf("bureau-agent: %w", err)
			}
			return p.read(res)
		}
		why = err
	}
	p.Via = "qemu-guest-agent"
	if res, err = s.x.agent.GuestExec(ctx, domain, e); err != nil {
		return Probe{}, unavailableBoth(why, err)
	}
	return p.read(res)
}

func (p Probe) read(res *desktop.ExecResult) (Probe, error) {
	out := strings.TrimSpace(string(res.Stdout))
	switch out {
	case "ready":
		p.Waiting = ""
	case WaitUser, WaitSetup, WaitSession:
		p.Waiting = out
	default:
		return Probe{}, fmt.Errorf("the readiness check answered %q (exit %d): %s", out, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return p, nil
}
