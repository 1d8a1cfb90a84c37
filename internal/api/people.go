package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/gin-gonic/gin"
)

// People keeps people in the loop of desktops an agent drives
// (internal/loop, docs/people.md): who holds each desktop's mouse and
// keyboard, the questions the agent asks a person (help requests), the
// actions that wait for a person's approval (approval gates, by each
// desktop's policy).
type People interface {
	Control
	Requests
	Gates
}

// Control is who holds desktops' mouse and keyboard.
type Control interface {
	// Status is what a desktop's record shows: control and how many
	// requests are pending.
	Status(desktopID string) loop.Status
	Control(desktopID string) loop.Control
	Take(ctx context.Context, desktopID string, p loop.Person, idle time.Duration) loop.Control
	Release(ctx context.Context, desktopID string, p loop.Person) loop.Control
	// AgentInput refuses (*loop.InControlError) an input call of actor's
	// while a person other than actor holds the desktop's input.
	AgentInput(desktopID, actor string) error
	// ConsoleInput says whether an input message of a console session
	// goes through.
	ConsoleInput(desktopID string, p loop.Person, ev loop.InputEvent) bool
	// Left is told when a person's last console session on a desktop
	// closed.
	Left(desktopID string, p loop.Person)
}

// Requests are the help and approval requests of desktops.
type Requests interface {
	Ask(ctx context.Context, r *loop.Request, timeout time.Duration, shot []byte) (*loop.Request, error)
	Get(ctx context.Context, desktopID, id string) (*loop.Request, error)
	List(ctx context.Context, f loop.Filter) ([]*loop.Request, error)
	// Wait waits up to max while the request is pending.
	Wait(ctx context.Context, desktopID, id string, max time.Duration) (*loop.Request, error)
	Answer(ctx context.Context, desktopID, id string, p loop.Person, answer string, choice bool) (*loop.Request, error)
	Decide(ctx context.Context, desktopID, id string, p loop.Person, approve bool, reason string) (*loop.Request, error)
	Screenshot(ctx context.Context, desktopID, id string) ([]byte, error)
}

// Gates are desktops' approval policies and the gate that holds the calls
// they name.
type Gates interface {
	Policy(ctx context.Context, desktopID string) (loop.Policy, error)
	SetPolicy(ctx context.Context, desktopID string, p loop.Policy) error
	DeletePolicy(ctx context.Context, desktopID string) error
	// Gate holds a call the desktop's policy names until a person decides
	// it: nil request and error when nothing gates it, the approved request,
	// or a *loop.DeniedError.
	Gate(ctx context.Context, desktopID, owner, actor string, in loop.Input, title func(context.Context) string, detail json.RawMessage) (*loop.Request, error)
}

// peopleHandlers are the handlers of people in the loop, one type per
// feature, each with only the dependencies it uses: control
// (people_control.go), help and approval requests (people_requests.go),
// the gate that guards the agent's calls and the approval policies
// (people_gate.go, people_policy.go), and the console page's side of them
// (people_console.go). Their routes are registered here. The People
// themselves are core's (desktop records show them).
type peopleHandlers struct {
	control  *controlHandlers
	requests *requestHandlers
	gates    *gateHandlers
	console  *consolePeopleHandlers
}

func newPeopleHandlers(s *core, d Deps) *peopleHandlers {
	control := &controlHandlers{core: s, consoles: d.Consoles}
	requests := &requestHandlers{core: s, computer: d.Computer}
	return &peopleHandlers{
		control:  control,
		requests: requests,
		gates:    &gateHandlers{core: s, computer: d.Computer, windows: d.Windows},
		console:  &consolePeopleHandlers{core: s, control: control, requests: requests},
	}
}

var errNoPeople = fmt.Errorf("this bureau keeps no people in the loop (takeover, help requests, approvals): %w", desktop.ErrUnavailable)

func (h *peopleHandlers) peopleRoutes(v1 *gin.RouterGroup) {
	ctl, req, gate := h.control, h.requests, h.gates
	v1.GET("/desktops/:id/control", ctl.handle(ctl.getControl))
	v1.POST("/desktops/:id/control/take", ctl.handle(ctl.takeControl))
	v1.POST("/desktops/:id/control/release", ctl.handle(ctl.releaseControl))
	v1.POST("/desktops/:id/help", req.handle(req.askHelp))
	v1.POST("/desktops/:id/approvals", req.handle(req.askApproval))
	v1.GET("/desktops/:id/requests", req.handle(req.listDesktopRequests))
	v1.GET("/requests", req.handle(req.listRequests))
	v1.GET("/desktops/:id/requests/:rid", req.handle(req.getRequest))
	v1.GET("/desktops/:id/requests/:rid/screenshot", req.requestScreenshot)
	v1.POST("/desktops/:id/requests/:rid/answer", req.handle(req.answerRequest))
	v1.POST("/desktops/:id/requests/:rid/approve", req.handle(req.approveRequest))
	v1.POST("/desktops/:id/requests/:rid/deny", req.handle(req.denyRequest))
	v1.GET("/desktops/:id/approval-policy", gate.handle(gate.getPolicy))
	v1.PUT("/desktops/:id/approval-policy", gate.handle(gate.putPolicy))
	v1.DELETE("/desktops/:id/approval-policy", gate.handle(gate.deletePolicy))
}

// consoleRoutes are the console page's (a console token in ?token=).
func (h *peopleHandlers) consoleRoutes(r *gin.Engine, consoleAuth gin.HandlerFunc) {
	s := h.console
	r.GET("/api/v1/desktops/:id/console/state", consoleAuth, s.handle(s.consoleState))
	r.POST("/api/v1/desktops/:id/console/control/take", consoleAuth, s.handle(s.consoleTake))
	r.POST("/api/v1/desktops/:id/console/control/release", consoleAuth, s.handle(s.consoleRelease))
	r.POST("/api/v1/desktops/:id/console/requests/:rid/answer", consoleAuth, s.handle(s.consoleAnswer))
	r.POST("/api/v1/desktops/:id/console/requests/:rid/approve", consoleAuth, s.handle(s.consoleApprove))
	r.POST("/api/v1/desktops/:id/console/requests/:rid/deny", consoleAuth, s.handle(s.consoleDeny))
	r.GET("/api/v1/desktops/:id/console/requests/:rid/screenshot", consoleAuth, s.consoleScreenshot)
}

// loopDesktop is the caller's desktop in :id, when bureau keeps people in
// the loop (503 otherwise: after the desktop, so another owner's is 404
// as ever).
func (s *core) loopDesktop(c *gin.Context) (*desktop.Desktop, error) {
	d, err := s.owned(c)
	if err == nil && s.people == nil {
		err = errNoPeople
	}
	return d, err
}

// apiPerson is the person an API caller is, by name (default: its
// token's owner). An agent's token (desktop-scoped or computer-only)
// is none: what needs a person is forbidden to it.
func apiPerson(c *gin.Context, name, what string) (loop.Person, error) {
	t := caller(c)
	if t.DesktopID != "" || t.ComputerOnly || t.Scope == desktop.ScopeDesktop {
		return loop.Person{}, fmt.Errorf("%s needs a person's token: this one is an agent's (desktop-scoped or computer-only): %w", what, desktop.ErrForbidden)
	}
	if name == "" {
		name = t.Owner
	}
	return loop.Person{Name: name, Actor: actor(c)}, nil
}

// consolePerson is the person a console link is for.
func consolePerson(t *desktop.ConsoleToken) loop.Person {
	return loop.Person{Name: console.NameOf(t), Actor: t.CreatedBy, Console: t.ID}
}

// Bounds of what people in the loop are asked and told.
const (
	maxLoopWait       = 900 // s: wait_s
	maxQuestion       = loop.MaxQuestion
	maxChoices        = loop.MaxChoices
	maxChoice         = loop.MaxChoice
	maxAnswer         = loop.MaxAnswer
	maxReason         = loop.MaxReason
	maxPersonName     = 64
	defaultHelpTTL    = 3600
	defaultApproveTTL = 600
	minRequestTTL     = 10
	maxRequestTTL     = 86400
	defaultIdle       = 600
	maxIdle           = 28800
)

// waitQuery reads ?wait_s= (0..900, default 0).
func waitQuery(c *gin.Context) (time.Duration, error) {
	v := c.Query("wait_s")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxLoopWait {
		return 0, &desktop.ValidationError{Field: "wait_s", Message: fmt.Sprintf("must be 0..%d seconds", maxLoopWait)}
	}
	return time.Duration(n) * time.Second, nil
}

// secondsIn checks an optional number of seconds in lo..hi (def when
// left out).
func secondsIn(field string, v *int, lo, hi, def int) (time.Duration, error) {
	if v == nil {
		return time.Duration(def) * time.Second, nil
	}
	if *v < lo || *v > hi {
		return 0, &desktop.ValidationError{Field: field, Message: fmt.Sprintf("must be %d..%d seconds", lo, hi)}
	}
	return time.Duration(*v) * time.Second, nil
}

// requiredText checks free text of 1..max characters.
func requiredText(field, s string, max int, multiline bool) error {
	if strings.TrimSpace(s) == "" {
		return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("must not be empty (1 to %d characters)", max)}
	}
	return desktop.ValidateText(field, s, max, multiline)
}

// personName checks a person's name as given (empty: not given).
func personName(field, name string) error {
	if name == "" {
		return nil
	}
	return requiredText(field, name, maxPersonName, false)
}
