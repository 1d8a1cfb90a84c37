package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/images"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

// ctxFailure is the error a request failed with (set by fail).
const ctxFailure = "bureau.failure"

var (
	errNoRoute  = errors.New("no such route")
	errNoMethod = errors.New("method not allowed on this route")
	errPanic    = errors.New("internal error")
)

// badRequest is a malformed request (not JSON, unknown field…).
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

// conflict is a 409 that is not a state transition (e.g. image in use).
type conflict struct{ msg string }

func (e *conflict) Error() string { return e.msg }

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	State   string `json:"state,omitempty"`
	// not_ready: how far the desktop has come and what it waits for.
	Up         string `json:"up,omitempty"`
	WaitingFor string `json:"waiting_for,omitempty"`
	// no_effect: the computer-use action at fault.
	Index *int `json:"index,omitempty"`
	// human_in_control: who holds the desktop's input, since when.
	Holder string     `json:"holder,omitempty"`
	Person string     `json:"person,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
	// denied: why, the approval request, and who decided ("" when its
	// time ran out).
	Reason    string  `json:"reason,omitempty"`
	RequestID string  `json:"request_id,omitempty"`
	DecidedBy *string `json:"decided_by,omitempty"`
	// already_decided: the request's status.
	Status string `json:"status,omitempty"`
}

// fail is the one place errors become HTTP responses.
func (s *core) fail(c *gin.Context, err error) {
	status, body := classify(err)
	if status >= 500 {
		s.log.Error("request failed", "path", c.Request.URL.Path, "err", err)
	}
	body.Message = s.textForCaller(c, body.Message)
	if _, ok := c.Get(stepReplyKey); ok {
		c.Set(stepErrorKey, body.Message) // for the step this call is
	}
	c.Set(ctxFailure, err) // for webhooks' quota.refused
	c.AbortWithStatusJSON(status, gin.H{"error": body})
}

func classify(err error) (int, errorBody) {
	var (
		ve *desktop.ValidationError
		te *desktop.TransitionError
		br *badRequest
		cf *conflict
		iu *images.InUseError
		qe *desktop.QuotaError
		dc *desktop.ConflictError
		hi *hosts.InvalidError
		hn *hosts.NotReadyError
		ne *computer.NoEffectError
	)
	var nr *notReady
	var ip *invalidPath
	if status, body, ok := classifyLoop(err); ok {
		return status, body
	}
	switch {
	case errors.As(err, &ip):
		return http.StatusBadRequest, errorBody{Code: "invalid_path", Message: err.Error(), Field: ip.field}
	case errors.As(err, new(*existsAlready)):
		return http.StatusConflict, errorBody{Code: "exists", Message: err.Error()}
	case errors.As(err, &nr):
		return http.StatusConflict, errorBody{Code: "not_ready", Message: err.Error(), State: string(desktop.StateRunning), Up: nr.up, WaitingFor: nr.waiting}
	case errors.As(err, &hi):
		return http.StatusUnprocessableEntity, errorBody{Code: "invalid", Message: err.Error(), Field: hi.Field}
	case errors.As(err, &hn):
		return http.StatusUnprocessableEntity, errorBody{Code: "host_not_ready", Message: err.Error(), Field: hn.Field}
	case errors.Is(err, hosts.ErrNotFound):
		return http.StatusNotFound, errorBody{Code: "not_found", Message: err.Error()}
	case errors.Is(err, hosts.ErrExists):
		return http.StatusConflict, errorBody{Code: "exists", Message: err.Error()}
	case errors.Is(err, hosts.ErrNeedsPostgres):
		return http.StatusConflict, errorBody{Code: "needs_postgres", Message: err.Error()}
	case errors.Is(err, hosts.ErrInUse):
		return http.StatusConflict, errorBody{Code: "in_use", Message: err.Error()}
	case errors.Is(err, hosts.ErrUnreachable):
		return http.StatusUnprocessableEntity, errorBody{Code: "host_unreachable", Message: err.Error(), Field: "uri"}
	case errors.As(err, &ne):
		return http.StatusUnprocessableEntity, errorBody{Code: "no_effect", Message: err.Error(), Index: &ne.Index}
	case errors.As(err, new(*computer.CannotVerifyError)):
		return http.StatusConflict, errorBody{Code: "cannot_verify", Message: err.Error()}
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, errorBody{Code: "invalid", Message: err.Error(), Field: ve.Field}
	case errors.As(err, &te):
		return http.StatusConflict, errorBody{Code: "invalid_state", Message: err.Error(), State: string(te.State)}
	case errors.As(err, &br):
		return http.StatusBadRequest, errorBody{Code: "bad_request", Message: err.Error()}
	case errors.As(err, &iu):
		return http.StatusConflict, errorBody{Code: "in_use", Message: err.Error()}
	case errors.Is(err, images.ErrExists):
		return http.StatusConflict, errorBody{Code: "exists", Message: err.Error()}
	case errors.As(err, &cf), errors.As(err, &dc):
		return http.StatusConflict, errorBody{Code: "conflict", Message: err.Error()}
	case errors.Is(err, recording.ErrBusy), errors.Is(err, recording.ErrNotDone):
		return http.StatusConflict, errorBody{Code: "conflict", Message: err.Error()}
	case errors.Is(err, recording.ErrNoFFmpeg):
		return http.StatusServiceUnavailable, errorBody{Code: "unavailable", Message: err.Error()}
	case errors.As(err, new(*teams.LastAdminError)):
		return http.StatusConflict, errorBody{Code: "last_admin", Message: err.Error()}
	case errors.Is(err, desktop.ErrNameTaken):
		return http.StatusConflict, errorBody{Code: "name_taken", Message: err.Error()}
	case errors.Is(err, desktop.ErrBusy):
		return http.StatusConflict, errorBody{Code: "busy", Message: err.Error()}
	case errors.Is(err, desktop.ErrConflict):
		return http.StatusConflict, errorBody{Code: "conflict", Message: err.Error()}
	case errors.Is(err, desktop.ErrNotFound):
		return http.StatusNotFound, errorBody{Code: "not_found", Message: err.Error()}
	case errors.Is(err, desktop.ErrGone):
		return http.StatusGone, errorBody{Code: "gone", Message: err.Error()}
	case errors.Is(err, errNoRoute):
		return http.StatusNotFound, errorBody{Code: "not_found", Message: err.Error()}
	case errors.Is(err, errNoMethod):
		return http.StatusMethodNotAllowed, errorBody{Code: "method_not_allowed", Message: err.Error()}
	case errors.Is(err, desktop.ErrUnauthorized):
		return http.StatusUnauthorized, errorBody{Code: "unauthorized", Message: err.Error()}
	case errors.As(err, new(*csrfRefused)):
		return http.StatusForbidden, errorBody{Code: "csrf", Message: err.Error()}
	case errors.Is(err, desktop.ErrForbidden):
		return http.StatusForbidden, errorBody{Code: "forbidden", Message: err.Error()}
	case errors.As(err, &qe):
		return http.StatusForbidden, errorBody{Code: "quota_exceeded", Message: err.Error(), Field: qe.Limit}
	case errors.Is(err, desktop.ErrCapacity):
		return http.StatusInsufficientStorage, errorBody{Code: "insufficient_capacity", Message: err.Error()}
	case errors.Is(err, desktop.ErrUnavailable), errors.Is(err, desktop.ErrHostLost):
		return http.StatusServiceUnavailable, errorBody{Code: "unavailable", Message: err.Error()}
	}
	return http.StatusInternalServerError, errorBody{Code: "internal", Message: "internal error; see the server log"}
}

const maxBody = 1 << 20

// classifyLoop maps the errors of people in the loop (internal/loop):
// a person holding the desktop's input, a gated call denied, a request
// unknown, decided, of the wrong kind or the asker's own.
func classifyLoop(err error) (int, errorBody, bool) {
	var (
		ic *loop.InControlError
		de *loop.DeniedError
		dc *loop.DecidedError
	)
	switch {
	case errors.As(err, &ic):
		since := ic.Control.Since
		return http.StatusConflict, errorBody{Code: "human_in_control", Message: err.Error(), Holder: ic.Control.Holder,
			Person: ic.Control.Person, Since: &since}, true
	case errors.As(err, &de):
		by := de.Request.DecidedBy
		return http.StatusForbidden, errorBody{Code: "denied", Message: err.Error(), Reason: de.Request.Reason,
			RequestID: de.Request.ID, DecidedBy: &by}, true
	case errors.As(err, &dc) && dc.Expired():
		return http.StatusConflict, errorBody{Code: "expired", Message: err.Error(), Status: dc.Request.Status}, true
	case errors.As(err, &dc):
		return http.StatusConflict, errorBody{Code: "already_decided", Message: err.Error(), Status: dc.Request.Status}, true
	case errors.Is(err, loop.ErrAlreadyDecided):
		return http.StatusConflict, errorBody{Code: "already_decided", Message: err.Error()}, true
	case errors.Is(err, loop.ErrNotFound):
		return http.StatusNotFound, errorBody{Code: "not_found", Message: err.Error()}, true
	case errors.Is(err, loop.ErrWrongKind):
		return http.StatusConflict, errorBody{Code: "wrong_kind", Message: err.Error()}, true
	case errors.Is(err, loop.ErrOwnRequest):
		return http.StatusForbidden, errorBody{Code: "forbidden", Message: err.Error()}, true
	}
	return 0, errorBody{}, false
}

// decode reads a JSON body strictly: unknown fields and trailing data are
// refused, and so is a body over 1 MiB.
func decode(c *gin.Context, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return &badRequest{"request body is empty; expected a JSON object"}
		}
		return &badRequest{"invalid JSON body: " + err.Error()}
	}
	if dec.More() {
		return &badRequest{"invalid JSON body: data after the object"}
	}
	return nil
}

// decodeOptional is decode for requests whose body may be left out.
func decodeOptional(c *gin.Context, v any) error {
	if c.Request.ContentLength == 0 {
		return nil
	}
	return decode(c, v)
}
