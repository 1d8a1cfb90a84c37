package api

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// Services are commands bureau-agent keeps running in a desktop.
type Services interface {
	PutService(ctx context.Context, domain string, r guest.ServiceRequest, values map[string]string) (*guest.ServiceInfo, error)
	Services(ctx context.Context, domain string) ([]*guest.ServiceInfo, error)
	ServiceByName(ctx context.Context, domain, name string) (*guest.ServiceInfo, error)
	ControlService(ctx context.Context, domain, name, action string) (*guest.ServiceInfo, error)
	ServiceLog(ctx context.Context, domain, name string, tail int64, follow bool, w io.Writer) error
}

// SecretValues looks secrets up by name for a desktop (a desktop's own
// secret before its owner's); a name with neither is a ValidationError.
// ResolveForDesktop is for the desktop's own token: owner secrets only
// where their owner allowed them on it.
type SecretValues interface {
	Resolve(ctx context.Context, owner, desktopID string, names []string) (map[string]string, error)
	ResolveForDesktop(ctx context.Context, owner, desktopID string, names []string) (map[string]string, error)
}

// serviceHandlers manage the services bureau-agent keeps running in
// desktops.
type serviceHandlers struct {
	*core
	services Services
	// secretValues gives services the secrets they name; secrets allows
	// them on the desktop (nil: this bureau keeps none).
	secretValues SecretValues
	secrets      Secrets
	// links makes services' live URLs (nil: none are served).
	links *liveLinks
}

func (s *serviceHandlers) serviceRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/services", s.handle(s.listServices))
	v1.POST("/desktops/:id/services", s.handle(s.createService))
	v1.PUT("/desktops/:id/services/:name", s.handle(s.replaceService))
	v1.GET("/desktops/:id/services/:name", s.handle(s.getService))
	v1.DELETE("/desktops/:id/services/:name", s.handle(s.controlService("delete")))
	v1.POST("/desktops/:id/services/:name/start", s.handle(s.controlService("start")))
	v1.POST("/desktops/:id/services/:name/stop", s.handle(s.controlService("stop")))
	v1.POST("/desktops/:id/services/:name/restart", s.handle(s.controlService("restart")))
	v1.GET("/desktops/:id/services/:name/logs", s.serviceLogs)
}

// serviceView is a service with where to reach it.
type serviceView struct {
	*guest.ServiceInfo
	// URL reaches the service's port through bureau's API (the owner's
	// token); LiveURL is its live URL (private until shared or made public).
	URL     string `json:"url,omitempty"`
	LiveURL string `json:"live_url,omitempty"`
}

func (s *serviceHandlers) view(c *gin.Context, d *desktop.Desktop, sv *guest.ServiceInfo) serviceView {
	v := serviceView{ServiceInfo: sv}
	if sv.Port > 0 {
		v.URL = fmt.Sprintf("/api/v1/desktops/%s/ports/%d/", d.ID, sv.Port)
		if s.links != nil {
			host, path := s.links.previewURL(c, d.ID, sv.Port)
			v.LiveURL = cmp.Or(host, path)
		}
	}
	return v
}

// secretsFor resolves the secrets a request names: as the desktop's owner
// for the owner and admins, as the desktop itself for its own token
// (owner secrets only where the owner allowed them on it).
func secretsFor(c *gin.Context, values SecretValues, d *desktop.Desktop, names []string) (map[string]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if values == nil {
		return nil, &desktop.ValidationError{Field: "secrets", Message: "this bureau keeps no secrets"}
	}
	if caller(c).Scope == desktop.ScopeDesktop {
		return values.ResolveForDesktop(c.Request.Context(), d.Owner, d.ID, names)
	}
	return values.Resolve(c.Request.Context(), d.Owner, d.ID, names)
}

func (s *serviceHandlers) listServices(c *gin.Context) (reply, error) {
	d, err := s.running(c, "list the services of")
	if err != nil {
		return reply{}, err
	}
	list, err := s.services.Services(c.Request.Context(), d.DomainName())
	if err != nil {
		return reply{}, err
	}
	out := make([]serviceView, 0, len(list))
	for _, sv := range list {
		out = append(out, s.view(c, d, sv))
	}
	return reply{http.StatusOK, gin.H{"services": out}}, nil
}

func (s *serviceHandlers) createService(c *gin.Context) (reply, error) {
	return s.putService(c, "")
}

func (s *serviceHandlers) replaceService(c *gin.Context) (reply, error) {
	return s.putService(c, c.Param("name"))
}

// putService creates (POST: a name not yet used, 201) or replaces (PUT:
// 200) a service and starts it.
func (s *serviceHandlers) putService(c *gin.Context, name string) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req guest.ServiceRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if name != "" {
		if req.Name != "" && req.Name != name {
			return reply{}, &desktop.ValidationError{Field: "name", Message: "differs from the name in the path"}
		}
		req.Name = name
	}
	if err := req.Validate(); err != nil {
		return reply{}, err
	}
	d, err := s.running(c, "start a service in")
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	status := http.StatusOK
	if name == "" {
		status = http.StatusCreated
		if _, err := s.services.ServiceByName(ctx, d.DomainName(), req.Name); err == nil {
			return reply{}, &conflict{fmt.Sprintf("service %s exists: replace it with PUT /desktops/%s/services/%s", req.Name, d.ID, req.Name)}
		}
	}
	values, err := secretsFor(c, s.secretValues, d, req.Secrets)
	if err != nil {
		return reply{}, err
	}
	if caller(c).Scope != desktop.ScopeDesktop && s.secrets != nil {
		// The owner hands the service its secrets: bureau gives them to the
		// desktop's agent again at every boot, so they are allowed there.
		if err := s.secrets.AllowNamed(ctx, d.Owner, d.ID, req.Secrets); err != nil {
			return reply{}, err
		}
	}
	sv, err := s.services.PutService(ctx, d.DomainName(), req, values)
	if err != nil {
		return reply{}, err
	}
	s.screen.Touch(d.ID)
	return reply{status, s.view(c, d, sv)}, nil
}

func (s *serviceHandlers) getService(c *gin.Context) (reply, error) {
	d, err := s.running(c, "read the services of")
	if err != nil {
		return reply{}, err
	}
	sv, err := s.services.ServiceByName(c.Request.Context(), d.DomainName(), c.Param("name"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, s.view(c, d, sv)}, nil
}

func (s *serviceHandlers) controlService(action string) func(c *gin.Context) (reply, error) {
	return func(c *gin.Context) (reply, error) {
		d, err := s.running(c, desktop.Op(action+" a service of"))
		if err != nil {
			return reply{}, err
		}
		sv, err := s.services.ControlService(c.Request.Context(), d.DomainName(), c.Param("name"), action)
		if err != nil {
			return reply{}, err
		}
		if action == "delete" {
			return reply{http.StatusNoContent, nil}, nil
		}
		return reply{http.StatusOK, s.view(c, d, sv)}, nil
	}
}

// serviceLogs answers a service's log: ?tail=N bytes (default all) as
// text, or with ?follow=true as server-sent "log" events ({"data": text})
// that go on across restarts until the client hangs up. Secret values the
// service names are scrubbed.
func (s *serviceHandlers) serviceLogs(c *gin.Context) {
	tail, follow, err := logQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.running(c, "read the services of")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	sv, err := s.services.ServiceByName(ctx, d.DomainName(), c.Param("name"))
	if err != nil {
		s.fail(c, err)
		return
	}
	// Only to mask them in the log: resolved as the owner, never shown.
	var values map[string]string
	if s.secretValues != nil && len(sv.Secrets) > 0 {
		values, _ = s.secretValues.Resolve(ctx, d.Owner, d.ID, sv.Secrets) // one since removed is not in the log's new runs
	}
	var w io.Writer
	if follow {
		defer s.screen.AddViewer(d.ID)()
		sse := &sseWriter{w: c.Writer}
		if err := sse.Started(); err != nil {
			return
		}
		defer sse.stop()
		w = sseText{sse}
	} else {
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.Header("X-Content-Type-Options", "nosniff")
		c.Status(http.StatusOK)
		w = &flushWriter{w: c.Writer}
	}
	sw := newScrubber(w, values)
	err = s.services.ServiceLog(ctx, d.DomainName(), sv.Name, tail, follow, sw)
	if f, ok := sw.(*scrubber); ok {
		f.Flush()
	}
	if err != nil && ctx.Err() == nil {
		s.log.Error("service log", "desktop", d.ID, "service", sv.Name, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// sseText sends what is written as "log" events.
type sseText struct{ e *sseWriter }

func (t sseText) Write(p []byte) (int, error) {
	if err := t.e.Output("log", p); err != nil {
		return 0, err
	}
	return len(p), nil
}
