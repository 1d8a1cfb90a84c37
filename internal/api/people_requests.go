package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/gin-gonic/gin"
)

// requestHandlers serve help and approval requests: asked by the agent,
// listed, waited on, answered and decided by people (through the API or,
// with people_console.go, the console page).
type requestHandlers struct {
	*core
	// computer takes the pictures requests come with.
	computer Computer
}

// helpRequest is the body of POST /help.
type helpRequest struct {
	Question   string   `json:"question"`
	Choices    []string `json:"choices"`
	Screenshot bool     `json:"screenshot"`
	WaitS      *int     `json:"wait_s"`
	TimeoutS   *int     `json:"timeout_s"`
}

func (b *helpRequest) waits() (wait, ttl *int) { return b.WaitS, b.TimeoutS }

func (b helpRequest) validate() error {
	if err := requiredText("question", b.Question, maxQuestion, true); err != nil {
		return err
	}
	if len(b.Choices) > maxChoices {
		return &desktop.ValidationError{Field: "choices", Message: fmt.Sprintf("at most %d choices", maxChoices)}
	}
	for i, ch := range b.Choices {
		field := fmt.Sprintf("choices[%d]", i)
		if err := requiredText(field, ch, maxChoice, false); err != nil {
			return err
		}
		if slices.Contains(b.Choices[:i], ch) {
			return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("%q is there twice: choices are distinct", ch)}
		}
	}
	return nil
}

// approvalRequest is the body of POST /approvals: the agent asking before
// a step of its own.
type approvalRequest struct {
	Action     string          `json:"action"`
	Detail     json.RawMessage `json:"detail"`
	Screenshot bool            `json:"screenshot"`
	WaitS      *int            `json:"wait_s"`
	TimeoutS   *int            `json:"timeout_s"`
}

func (b *approvalRequest) waits() (wait, ttl *int) { return b.WaitS, b.TimeoutS }

// maxDetail bounds an explicit approval's detail.
const maxDetail = 64 << 10

func (b approvalRequest) validate() error {
	if err := requiredText("action", b.Action, maxQuestion, true); err != nil {
		return err
	}
	if d := bytes.TrimSpace(b.Detail); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if d[0] != '{' {
			return &desktop.ValidationError{Field: "detail", Message: "must be a JSON object"}
		}
		if len(d) > maxDetail {
			return &desktop.ValidationError{Field: "detail", Message: fmt.Sprintf("at most %d bytes of JSON", maxDetail)}
		}
	}
	return nil
}

func (s *requestHandlers) askHelp(c *gin.Context) (reply, error) {
	var body helpRequest
	d, wait, ttl, err := s.asking(c, &body, defaultHelpTTL)
	if err != nil {
		return reply{}, err
	}
	r := &loop.Request{DesktopID: d.ID, Owner: d.Owner, Kind: loop.KindHelp, Question: body.Question,
		Choices: body.Choices, AskedBy: actor(c)}
	return s.ask(c, d, r, ttl, wait, body.Screenshot)
}

func (s *requestHandlers) askApproval(c *gin.Context) (reply, error) {
	var body approvalRequest
	d, wait, ttl, err := s.asking(c, &body, defaultApproveTTL)
	if err != nil {
		return reply{}, err
	}
	var detail json.RawMessage
	if d := bytes.TrimSpace(body.Detail); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		detail = d
	}
	r := &loop.Request{DesktopID: d.ID, Owner: d.Owner, Kind: loop.KindApproval, Question: body.Action, AskedBy: actor(c),
		Action: &loop.Action{Kind: loop.ActionExplicit, Summary: body.Action, Detail: detail}}
	return s.ask(c, d, r, ttl, wait, body.Screenshot)
}

// asking reads what a help or approval request asks into body, with how
// long its caller waits (wait_s) and how long it stays open (timeout_s,
// defTTL when not given).
func (s *requestHandlers) asking(c *gin.Context, body interface {
	validate() error
	waits() (wait, ttl *int)
}, defTTL int) (*desktop.Desktop, time.Duration, time.Duration, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := decode(c, body); err != nil {
		return nil, 0, 0, err
	}
	if err := body.validate(); err != nil {
		return nil, 0, 0, err
	}
	waitS, ttlS := body.waits()
	wait, err := secondsIn("wait_s", waitS, 0, maxLoopWait, 0)
	if err != nil {
		return nil, 0, 0, err
	}
	ttl, err := secondsIn("timeout_s", ttlS, minRequestTTL, maxRequestTTL, defTTL)
	return d, wait, ttl, err
}

// ask files a request (with a picture of the screen when asked for) and
// waits up to wait for its answer: 201 with it, pending or not.
func (s *requestHandlers) ask(c *gin.Context, d *desktop.Desktop, r *loop.Request, ttl, wait time.Duration, shot bool) (reply, error) {
	ctx := c.Request.Context()
	var png []byte
	if shot {
		png = s.screenNow(ctx, d)
	}
	r, err := s.people.Ask(ctx, r, ttl, png)
	if err != nil {
		return reply{}, err
	}
	created(c, "request", r.ID)
	if wait > 0 && !r.Decided() {
		if r, err = s.people.Wait(ctx, d.ID, r.ID, wait); err != nil {
			return reply{}, err
		}
	}
	return reply{http.StatusCreated, r}, nil
}

// screenNow is a PNG of the desktop's screen as it is (nil when it cannot
// be had: the request goes without it, and says so).
func (s *requestHandlers) screenNow(ctx context.Context, d *desktop.Desktop) []byte {
	if s.computer == nil || d.State != desktop.StateRunning {
		return nil
	}
	img, err := s.computer.Screenshot(ctx, d.DomainName(), computer.ShotOptions{Format: "png"})
	if err != nil {
		s.log.Warn("a request's screenshot", "desktop", d.ID, "err", err)
		return nil
	}
	return img.Data
}

// requestFilter reads ?status= and ?kind=.
func requestFilter(c *gin.Context) (loop.Filter, error) {
	f := loop.Filter{Status: c.Query("status"), Kind: c.Query("kind"), Limit: 200}
	statuses := []string{loop.StatusPending, loop.StatusAnswered, loop.StatusApproved, loop.StatusDenied, loop.StatusExpired}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		return f, &desktop.ValidationError{Field: "status", Message: "must be one of " + strings.Join(statuses, ", ")}
	}
	if f.Kind != "" && f.Kind != loop.KindHelp && f.Kind != loop.KindApproval {
		return f, &desktop.ValidationError{Field: "kind", Message: "must be help or approval"}
	}
	return f, nil
}

func (s *requestHandlers) listDesktopRequests(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	f, err := requestFilter(c)
	if err != nil {
		return reply{}, err
	}
	f.DesktopID = d.ID
	list, err := s.people.List(c.Request.Context(), f)
	return reply{http.StatusOK, gin.H{"requests": list}}, err
}

// listRequests lists the requests of the caller's desktops (every
// owner's for an admin).
func (s *requestHandlers) listRequests(c *gin.Context) (reply, error) {
	if s.people == nil {
		return reply{}, errNoPeople
	}
	f, err := requestFilter(c)
	if err != nil {
		return reply{}, err
	}
	f.Owner = ownerFilter(c)
	list, err := s.people.List(c.Request.Context(), f)
	return reply{http.StatusOK, gin.H{"requests": list}}, err
}

// getRequest answers a request; with ?wait_s= it waits that long at most
// while it is pending.
func (s *requestHandlers) getRequest(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	wait, err := waitQuery(c)
	if err != nil {
		return reply{}, err
	}
	var r *loop.Request
	if wait > 0 {
		r, err = s.people.Wait(c.Request.Context(), d.ID, c.Param("rid"), wait)
	} else {
		r, err = s.people.Get(c.Request.Context(), d.ID, c.Param("rid"))
	}
	return reply{http.StatusOK, r}, err
}

func (s *requestHandlers) requestScreenshot(c *gin.Context) {
	d, err := s.loopDesktop(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.servePicture(c, d.ID)
}

// servePicture answers the picture of the screen request :rid came with.
func (s *requestHandlers) servePicture(c *gin.Context, desktopID string) {
	png, err := s.people.Screenshot(c.Request.Context(), desktopID, c.Param("rid"))
	if err == nil && len(png) == 0 {
		err = fmt.Errorf("request %s came without a screenshot: %w", c.Param("rid"), loop.ErrNotFound)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "image/png", png)
}

// answerBody is the body of an answer: text, or one of the choices.
type answerBody struct {
	Answer *string `json:"answer"`
	Choice *string `json:"choice"`
}

// answer answers help request :rid of desktopID as p.
func (s *requestHandlers) answer(c *gin.Context, desktopID string, p loop.Person) (reply, error) {
	var body answerBody
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	ctx, rid := c.Request.Context(), c.Param("rid")
	switch {
	case body.Answer == nil && body.Choice == nil:
		return reply{}, &desktop.ValidationError{Field: "answer", Message: `give "answer" (text) or "choice" (one of the request's choices)`}
	case body.Answer != nil && body.Choice != nil:
		return reply{}, &desktop.ValidationError{Field: "choice", Message: `give "answer" or "choice", not both`}
	case body.Answer != nil:
		if err := requiredText("answer", *body.Answer, maxAnswer, true); err != nil {
			return reply{}, err
		}
		r, err := s.people.Answer(ctx, desktopID, rid, p, *body.Answer, false)
		return reply{http.StatusOK, r}, err
	}
	// People checks the choice against the request's (422 on choice).
	r, err := s.people.Answer(ctx, desktopID, rid, p, *body.Choice, true)
	return reply{http.StatusOK, r}, err
}

// decide approves or denies approval request :rid of desktopID as p.
func (s *requestHandlers) decide(c *gin.Context, desktopID string, p loop.Person, approve bool) (reply, error) {
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeOptional(c, &body); err != nil {
		return reply{}, err
	}
	if err := desktop.ValidateText("reason", body.Reason, maxReason, true); err != nil {
		return reply{}, err
	}
	r, err := s.people.Decide(c.Request.Context(), desktopID, c.Param("rid"), p, approve, body.Reason)
	return reply{http.StatusOK, r}, err
}

func (s *requestHandlers) answerRequest(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	p, err := apiPerson(c, "", "answering a request")
	if err != nil {
		return reply{}, err
	}
	return s.answer(c, d.ID, p)
}

func (s *requestHandlers) approveRequest(c *gin.Context) (reply, error) { return s.apiDecide(c, true) }

func (s *requestHandlers) denyRequest(c *gin.Context) (reply, error) { return s.apiDecide(c, false) }

func (s *requestHandlers) apiDecide(c *gin.Context, approve bool) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	p, err := apiPerson(c, "", "deciding an approval")
	if err != nil {
		return reply{}, err
	}
	return s.decide(c, d.ID, p, approve)
}
