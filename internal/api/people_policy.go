package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/gin-gonic/gin"
)

// getPolicy answers the desktop's approval policy ({} when none is set).
func (s *gateHandlers) getPolicy(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	p, err := s.people.Policy(c.Request.Context(), d.ID)
	return reply{http.StatusOK, p}, err
}

// putPolicy sets the desktop's approval policy whole: a body that is not
// a policy is a 400, a rule that does not hold (a pattern that does not
// compile, a region of no size) a 422 naming it (exec[1],
// keys[0].window_title, clicks[2].width).
func (s *gateHandlers) putPolicy(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	if err != nil {
		return reply{}, &badRequest{"reading the body: " + err.Error()}
	}
	// The shape first, strictly (unknown fields are 400 as everywhere).
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	var shape loop.Policy
	if err := decode(c, &shape); err != nil {
		return reply{}, err
	}
	if _, err := apiPerson(c, "", "changing the approval policy"); err != nil {
		return reply{}, err
	}
	p, err := loop.ParsePolicy(body)
	if err != nil {
		var ve *desktop.ValidationError
		if !errors.As(err, &ve) {
			err = &desktop.ValidationError{Field: "policy", Message: err.Error()}
		}
		return reply{}, err
	}
	if err := s.people.SetPolicy(c.Request.Context(), d.ID, p); err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, p}, nil
}

func (s *gateHandlers) deletePolicy(c *gin.Context) (reply, error) {
	d, err := s.loopDesktop(c)
	if err != nil {
		return reply{}, err
	}
	if _, err := apiPerson(c, "", "changing the approval policy"); err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusNoContent}, s.people.DeletePolicy(c.Request.Context(), d.ID)
}
