package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/webhooks"
	"github.com/gin-gonic/gin"
)

// Webhooks registers owners' webhook endpoints and reads and repeats
// their deliveries (docs/webhooks.md).
type Webhooks interface {
	Create(ctx context.Context, req webhooks.CreateRequest) (*webhooks.Endpoint, string, error)
	List(ctx context.Context, owner string) ([]*webhooks.Endpoint, error)
	Get(ctx context.Context, id string) (*webhooks.Endpoint, error)
	Update(ctx context.Context, id string, p webhooks.Patch) (*webhooks.Endpoint, error)
	Delete(ctx context.Context, id string) error
	RotateSecret(ctx context.Context, id string) (string, *webhooks.Endpoint, error)
	Ping(ctx context.Context, id, actor string) (*webhooks.Delivery, error)
	Deliveries(ctx context.Context, id, status string, before time.Time, limit int) ([]*webhooks.Delivery, error)
	Delivery(ctx context.Context, id, deliveryID string) (*webhooks.Delivery, error)
	Redeliver(ctx context.Context, id, deliveryID string) (*webhooks.Delivery, error)
	// QuotaRefused sends quota.refused to owner's endpoints.
	QuotaRefused(ctx context.Context, owner, actor, limit, message string)
}

var errNoWebhooks = fmt.Errorf("this bureau sends no webhooks: %w", desktop.ErrUnavailable)

// webhookHandlers manage webhook endpoints. Desktop tokens reach none of
// these routes (scopeAllows: they are not a desktop's).
type webhookHandlers struct {
	*core
	hooks Webhooks
}

func (s *webhookHandlers) webhookRoutes(v1 *gin.RouterGroup) {
	v1.GET("/webhooks", s.handle(s.listWebhooks))
	v1.POST("/webhooks", s.handle(s.createWebhook))
	v1.GET("/webhooks/:wid", s.handle(s.getWebhook))
	v1.PATCH("/webhooks/:wid", s.handle(s.updateWebhook))
	v1.DELETE("/webhooks/:wid", s.handle(s.deleteWebhook))
	v1.POST("/webhooks/:wid/ping", s.handle(s.pingWebhook))
	v1.POST("/webhooks/:wid/rotate-secret", s.handle(s.rotateWebhookSecret))
	v1.GET("/webhooks/:wid/deliveries", s.handle(s.listDeliveries))
	v1.GET("/webhooks/:wid/deliveries/:did", s.handle(s.getDelivery))
	v1.POST("/webhooks/:wid/deliveries/:did/redeliver", s.handle(s.redeliver))
}

// withSecret is an endpoint with its secret, shown when made or rotated
// only.
type withSecret struct {
	*webhooks.Endpoint
	Secret string `json:"secret"`
}

// ownedWebhook is the endpoint the route names if the caller may manage
// it (an owner's own; an admin's any), else not found.
func (s *webhookHandlers) ownedWebhook(c *gin.Context) (*webhooks.Endpoint, error) {
	if s.hooks == nil {
		return nil, errNoWebhooks
	}
	e, err := s.hooks.Get(c.Request.Context(), c.Param("wid"))
	if err != nil {
		return nil, err
	}
	if !isAdmin(c) && e.Owner != caller(c).Owner {
		return nil, fmt.Errorf("webhook %s: %w", c.Param("wid"), desktop.ErrNotFound)
	}
	return e, nil
}

func (s *webhookHandlers) listWebhooks(c *gin.Context) (reply, error) {
	if s.hooks == nil {
		return reply{}, errNoWebhooks
	}
	owner := ownerFilter(c)
	if o := c.Query("owner"); o != "" {
		if o != caller(c).Owner {
			if err := requireAdmin(c); err != nil {
				return reply{}, err
			}
		}
		owner = o
	}
	list, err := s.hooks.List(c.Request.Context(), owner)
	return reply{http.StatusOK, gin.H{"webhooks": list}}, err
}

func (s *webhookHandlers) createWebhook(c *gin.Context) (reply, error) {
	if s.hooks == nil {
		return reply{}, errNoWebhooks
	}
	var body struct {
		URL         string   `json:"url"`
		Events      []string `json:"events"`
		Description string   `json:"description"`
		AllOwners   bool     `json:"all_owners"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	if body.AllOwners && !isAdmin(c) {
		return reply{}, fmt.Errorf("all_owners: only an admin's webhook receives every owner's events: %w", desktop.ErrForbidden)
	}
	e, secret, err := s.hooks.Create(c.Request.Context(), webhooks.CreateRequest{Owner: caller(c).Owner, URL: body.URL,
		Events: body.Events, Description: body.Description, AllOwners: body.AllOwners, Actor: actor(c)})
	if err != nil {
		return reply{}, err
	}
	created(c, "webhook", e.ID)
	return reply{http.StatusCreated, withSecret{e, secret}}, nil
}

func (s *webhookHandlers) getWebhook(c *gin.Context) (reply, error) {
	e, err := s.ownedWebhook(c)
	return reply{http.StatusOK, e}, err
}

func (s *webhookHandlers) updateWebhook(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	var body struct {
		URL         *string   `json:"url"`
		Events      *[]string `json:"events"`
		Description *string   `json:"description"`
		Enabled     *bool     `json:"enabled"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	e, err := s.hooks.Update(c.Request.Context(), c.Param("wid"), webhooks.Patch{URL: body.URL, Events: body.Events,
		Description: body.Description, Enabled: body.Enabled, Actor: actor(c)})
	return reply{http.StatusOK, e}, err
}

func (s *webhookHandlers) deleteWebhook(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, s.hooks.Delete(c.Request.Context(), c.Param("wid"))
}

func (s *webhookHandlers) pingWebhook(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	d, err := s.hooks.Ping(c.Request.Context(), c.Param("wid"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *webhookHandlers) rotateWebhookSecret(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	secret, e, err := s.hooks.RotateSecret(c.Request.Context(), c.Param("wid"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, withSecret{e, secret}}, nil
}

func (s *webhookHandlers) listDeliveries(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return reply{}, &desktop.ValidationError{Field: "limit", Message: "must be 1 to 1000"}
		}
		limit = n
	}
	var before time.Time
	if v := c.Query("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return reply{}, &desktop.ValidationError{Field: "before", Message: "want an RFC 3339 time (a delivery's created_at)"}
		}
		before = t
	}
	list, err := s.hooks.Deliveries(c.Request.Context(), c.Param("wid"), c.Query("status"), before, limit)
	return reply{http.StatusOK, gin.H{"deliveries": list}}, err
}

func (s *webhookHandlers) getDelivery(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	d, err := s.hooks.Delivery(c.Request.Context(), c.Param("wid"), c.Param("did"))
	return reply{http.StatusOK, d}, err
}

func (s *webhookHandlers) redeliver(c *gin.Context) (reply, error) {
	if _, err := s.ownedWebhook(c); err != nil {
		return reply{}, err
	}
	d, err := s.hooks.Redeliver(c.Request.Context(), c.Param("wid"), c.Param("did"))
	return reply{http.StatusAccepted, d}, err
}

// quotaRefusals sends quota.refused to the caller's webhooks when a
// request was refused for going over a quota (fail records the error).
func (s *webhookHandlers) quotaRefusals(c *gin.Context) {
	c.Next()
	if s.hooks == nil {
		return
	}
	v, ok := c.Get(ctxFailure)
	if !ok {
		return
	}
	var qe *desktop.QuotaError
	if err, _ := v.(error); errors.As(err, &qe) {
		s.hooks.QuotaRefused(context.WithoutCancel(c.Request.Context()), caller(c).Owner, actor(c), qe.Limit, err.Error())
	}
}
