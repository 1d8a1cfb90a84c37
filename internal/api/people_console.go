package api

import (
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/gin-gonic/gin"
)

// The console page's side of people in the loop, with its console token:
// who holds input and who watches, taking and handing back control, and
// answering and deciding the pending requests. A view-only link watches
// only; a screen-only one (a computer-only token's) is not shown the
// requests either.

// consolePeopleHandlers serve the console page's side of people in the
// loop, through the control and request handlers.
type consolePeopleHandlers struct {
	*core
	control  *controlHandlers
	requests *requestHandlers
}

// consoleYou is the console session asking, as the others see it.
type consoleYou struct {
	Session    string `json:"session"`
	Name       string `json:"name"`
	ViewOnly   bool   `json:"view_only"`
	HoldsInput bool   `json:"holds_input"`
}

// consoleState answers what the console page shows of the loop.
func (s *consolePeopleHandlers) consoleState(c *gin.Context) (reply, error) {
	if s.people == nil {
		return reply{}, errNoPeople
	}
	t := consoleToken(c)
	ctl := s.people.Control(t.DesktopID)
	view := s.control.controlView(t.DesktopID, ctl)
	requests := []*loop.Request{}
	if !t.ScreenOnly {
		list, err := s.people.List(c.Request.Context(), loop.Filter{DesktopID: t.DesktopID, Status: loop.StatusPending, Limit: 200})
		if err != nil {
			return reply{}, err
		}
		requests = append(requests, list...)
	}
	return reply{http.StatusOK, gin.H{"control": apiv1.FromControl(ctl), "viewers": view.Viewers,
		"you":      consoleYou{Session: t.ID, Name: console.NameOf(t), ViewOnly: t.ViewOnly, HoldsInput: holdsInput(ctl, t.ID, t.CreatedBy)},
		"requests": requests}}, nil
}

// consoleActor is the person behind a console token that may act (not a
// view-only one).
func (s *consolePeopleHandlers) consoleActor(c *gin.Context, what string) (*desktop.ConsoleToken, loop.Person, error) {
	if s.people == nil {
		return nil, loop.Person{}, errNoPeople
	}
	t := consoleToken(c)
	if t.ViewOnly {
		return nil, loop.Person{}, fmt.Errorf("this console link is view-only: it cannot %s: %w", what, desktop.ErrForbidden)
	}
	// A link made by an agent's token (desktop-scoped or computer-only)
	// is the agent's: it may not approve what the agent asked for, or
	// take over from itself.
	if t.MadeBy != "" {
		maker, err := s.tokens.Usable(c.Request.Context(), t.MadeBy)
		if err != nil {
			return nil, loop.Person{}, err
		}
		if maker.DesktopID != "" || maker.ComputerOnly {
			return nil, loop.Person{}, fmt.Errorf("this console link was made by an agent's token (scoped to one desktop or to the screen): it cannot %s; a person's token makes links that can: %w", what, desktop.ErrForbidden)
		}
	}
	return t, consolePerson(t), nil
}

func (s *consolePeopleHandlers) consoleTake(c *gin.Context) (reply, error) {
	t, p, err := s.consoleActor(c, "take control")
	if err != nil {
		return reply{}, err
	}
	var body struct {
		IdleTimeoutS *int `json:"idle_timeout_s"`
	}
	if err := decodeOptional(c, &body); err != nil {
		return reply{}, err
	}
	idle, err := takeRequest{IdleTimeoutS: body.IdleTimeoutS}.idle()
	if err != nil {
		return reply{}, err
	}
	ctl := s.people.Take(c.Request.Context(), t.DesktopID, p, idle)
	return reply{http.StatusOK, s.control.controlView(t.DesktopID, ctl)}, nil
}

func (s *consolePeopleHandlers) consoleRelease(c *gin.Context) (reply, error) {
	t, p, err := s.consoleActor(c, "hand control back")
	if err != nil {
		return reply{}, err
	}
	var body struct{}
	if err := decodeOptional(c, &body); err != nil {
		return reply{}, err
	}
	ctl := s.people.Release(c.Request.Context(), t.DesktopID, p)
	return reply{http.StatusOK, s.control.controlView(t.DesktopID, ctl)}, nil
}

func (s *consolePeopleHandlers) consoleAnswer(c *gin.Context) (reply, error) {
	t, p, err := s.consoleActor(c, "answer requests")
	if err != nil {
		return reply{}, err
	}
	return s.requests.answer(c, t.DesktopID, p)
}

func (s *consolePeopleHandlers) consoleApprove(c *gin.Context) (reply, error) {
	t, p, err := s.consoleActor(c, "decide approvals")
	if err != nil {
		return reply{}, err
	}
	return s.requests.decide(c, t.DesktopID, p, true)
}

func (s *consolePeopleHandlers) consoleDeny(c *gin.Context) (reply, error) {
	t, p, err := s.consoleActor(c, "decide approvals")
	if err != nil {
		return reply{}, err
	}
	return s.requests.decide(c, t.DesktopID, p, false)
}

func (s *consolePeopleHandlers) consoleScreenshot(c *gin.Context) {
	if s.people == nil {
		s.fail(c, errNoPeople)
		return
	}
	t := consoleToken(c)
	if t.ScreenOnly {
		s.fail(c, fmt.Errorf("this console shows the screen only: not the requests: %w", desktop.ErrForbidden))
		return
	}
	s.requests.servePicture(c, t.DesktopID)
}
