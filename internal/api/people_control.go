package api

import (
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/loop"
	"github.com/gin-gonic/gin"
)

// controlHandlers serve who holds a desktop's mouse and keyboard: the
// control routes, and the view of it (with who watches in the console)
// the console page shows too.
type controlHandlers struct {
	*core
	consoles Consoles
}

// controlView is a desktop's control and who watches it in the console,
// each viewer saying whether it holds the input.
func (s *controlHandlers) controlView(desktopID string, ctl loop.Control) apiv1.ControlView {
	out := apiv1.ControlView{Control: *apiv1.FromControl(ctl), Viewers: []apiv1.Viewer{}}
	if s.consoles == nil {
		return out
	}
	for _, v := range s.consoles.Viewers(desktopID) {
		out.Viewers = append(out.Viewers, apiv1.Viewer{Session: v.Session, Name: v.Name, ViewOnly: v.ViewOnly, Since: v.Since,
			HoldsInput: holdsInput(ctl, v.Session, v.CreatedBy)})
	}
	return out
}

// holdsInput: a console session holds the input when a person took it
// there, or through the API with the token that made its link.
func holdsInput(ctl loop.Control, session, createdBy string) bool {
	return ctl.Holder == loop.HolderPerson && (ctl.By == "console/"+session || createdBy != "" && ctl.By == createdBy)
}

func (s *controlHandlers) getControl(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, s.controlView(d.ID, s.people.Control(d.ID))}, nil
}

// takeRequest is the body of a take: who takes it (API callers only) and
// after how long without their input it goes back to the agent.
type takeRequest struct {
	Name         string `json:"name"`
	IdleTimeoutS *int   `json:"idle_timeout_s"`
}

func (t takeRequest) idle() (time.Duration, error) {
	return secondsIn("idle_timeout_s", t.IdleTimeoutS, 1, maxIdle, defaultIdle)
}

func (s *controlHandlers) takeControl(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	var body takeRequest
	if err := decodeOptional(c, &body); err != nil {
		return reply{}, err
	}
	if err := personName("name", body.Name); err != nil {
		return reply{}, err
	}
	idle, err := body.idle()
	if err != nil {
		return reply{}, err
	}
	p, err := apiPerson(c, body.Name, "taking control")
	if err != nil {
		return reply{}, err
	}
	ctl := s.people.Take(c.Request.Context(), d.ID, p, idle)
	return reply{http.StatusOK, s.controlView(d.ID, ctl)}, nil
}

func (s *controlHandlers) releaseControl(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	var body struct{}
	if err := decodeOptional(c, &body); err != nil {
		return reply{}, err
	}
	p, err := apiPerson(c, "", "handing control back")
	if err != nil {
		return reply{}, err
	}
	ctl := s.people.Release(c.Request.Context(), d.ID, p)
	return reply{http.StatusOK, s.controlView(d.ID, ctl)}, nil
}
