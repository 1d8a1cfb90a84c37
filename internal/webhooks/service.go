package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// RotationOverlap is how long deliveries are also signed with the
// previous secret after a rotation.
const RotationOverlap = 24 * time.Hour

// Limits.
const (
	MaxEvents      = 64
	MaxURL         = 2048
	MaxDescription = 500
)

// Service registers endpoints and reads and repeats their deliveries
// (the API's Webhooks).
type Service struct {
	st    Store
	seal  *sealer
	guard *Guard
	log   *slog.Logger
	// wake (may be nil) tells the senders a delivery is due.
	wake func()
	// Now is the clock (time.Now; tests set their own).
	Now func() time.Time
}

// NewService builds the service; key is bureau's secrets key, wake (may
// be nil) the senders' Wake.
func NewService(st Store, key []byte, cfg Config, wake func(), log *slog.Logger) (*Service, error) {
	seal, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	return &Service{st: st, seal: seal, guard: &Guard{Allow: cfg.Allow}, log: log, wake: wake, Now: time.Now}, nil
}

// CreateRequest registers an endpoint.
type CreateRequest struct {
	Owner, URL, Description string
	Events                  []string
	AllOwners               bool
	Actor                   string
}

// Patch changes an endpoint (nil: unchanged).
type Patch struct {
	URL         *string
	Events      *[]string
	Description *string
	Enabled     *bool
	Actor       string
}

func invalid(field, msg string) error { return &desktop.ValidationError{Field: field, Message: msg} }

func (s *Service) checkURL(ctx context.Context, u string) error {
	if u == "" {
		return invalid("url", "is required")
	}
	if len(u) > MaxURL {
		return invalid("url", fmt.Sprintf("at most %d characters", MaxURL))
	}
	if err := s.guard.CheckURL(ctx, u); err != nil {
		return invalid("url", err.Error())
	}
	return nil
}

func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, invalid("events", `name at least one event type or pattern (e.g. "desktop.*", or "*" for all)`)
	}
	if len(events) > MaxEvents {
		return nil, invalid("events", fmt.Sprintf("at most %d", MaxEvents))
	}
	out := make([]string, 0, len(events))
	for i, e := range events {
		e = strings.TrimSpace(e)
		if err := ValidPattern(e); err != nil {
			return nil, invalid(fmt.Sprintf("events[%d]", i), err.Error())
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// checkDescription refuses a description that is too long or is not
// plain text (control characters, bidirectional overrides): it is shown
// in listings and terminals.
func checkDescription(d string) error {
	return desktop.ValidateText("description", d, MaxDescription, true)
}

// Create registers an endpoint and returns it with its secret (which is
// never shown again).
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Endpoint, string, error) {
	if err := s.checkURL(ctx, req.URL); err != nil {
		return nil, "", err
	}
	events, err := checkEvents(req.Events)
	if err != nil {
		return nil, "", err
	}
	if err := checkDescription(req.Description); err != nil {
		return nil, "", err
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, "", err
	}
	e := &Endpoint{ID: randomID("wh_"), Owner: req.Owner, URL: req.URL, Description: req.Description, Events: events,
		AllOwners: req.AllOwners, Enabled: true, CreatedAt: s.Now().UTC().Truncate(time.Millisecond), CreatedBy: req.Actor}
	sealed, err := s.seal.seal(e.ID, secret)
	if err != nil {
		return nil, "", err
	}
	if err := s.st.CreateWebhook(ctx, e, sealed); err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

// List lists owner's endpoints ("" = everyone's).
func (s *Service) List(ctx context.Context, owner string) ([]*Endpoint, error) {
	return s.st.ListWebhooks(ctx, owner)
}

// Get returns one endpoint.
func (s *Service) Get(ctx context.Context, id string) (*Endpoint, error) {
	return s.st.Webhook(ctx, id)
}

// Update changes an endpoint; enabling it again clears why it was
// disabled and its failures.
func (s *Service) Update(ctx context.Context, id string, p Patch) (*Endpoint, error) {
	e, err := s.st.Webhook(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.URL != nil {
		if err := s.checkURL(ctx, *p.URL); err != nil {
			return nil, err
		}
		e.URL = *p.URL
	}
	if p.Events != nil {
		if e.Events, err = checkEvents(*p.Events); err != nil {
			return nil, err
		}
	}
	if p.Description != nil {
		if err := checkDescription(*p.Description); err != nil {
			return nil, err
		}
		e.Description = *p.Description
	}
	if p.Enabled != nil && *p.Enabled != e.Enabled {
		e.Enabled = *p.Enabled
		if e.Enabled {
			e.DisabledAt, e.DisabledReason, e.FailingSince, e.Failures = nil, "", nil, 0
		} else {
			now := s.Now().UTC().Truncate(time.Millisecond)
			e.DisabledAt, e.DisabledReason = &now, "disabled by "+p.Actor
		}
	}
	if err := s.st.UpdateWebhook(ctx, e); err != nil {
		return nil, err
	}
	return e, nil
}

// Delete deletes an endpoint and its deliveries.
func (s *Service) Delete(ctx context.Context, id string) error { return s.st.DeleteWebhook(ctx, id) }

// RotateSecret gives an endpoint a new secret (returned, never shown
// again); for RotationOverlap deliveries are signed with the old one too.
func (s *Service) RotateSecret(ctx context.Context, id string) (string, *Endpoint, error) {
	e, err := s.st.Webhook(ctx, id)
	if err != nil {
		return "", nil, err
	}
	cur, _, err := s.st.WebhookSecrets(ctx, id)
	if err != nil {
		return "", nil, err
	}
	secret, err := NewSecret()
	if err != nil {
		return "", nil, err
	}
	sealed, err := s.seal.seal(id, secret)
	if err != nil {
		return "", nil, err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	until := now.Add(RotationOverlap)
	if err := s.st.RotateWebhookSecret(ctx, id, sealed, cur, now, until); err != nil {
		return "", nil, err
	}
	e.SecretRotatedAt, e.PreviousSecretUntil = &now, &until
	return secret, e, nil
}

// Ping queues a webhook.ping message to an endpoint.
func (s *Service) Ping(ctx context.Context, id, actor string) (*Delivery, error) {
	e, err := s.st.Webhook(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	d, err := newDelivery(e.ID, randomID("msg_"), Message{Type: "webhook.ping", Timestamp: now.UTC(),
		Data: Data{Owner: e.Owner, Message: "ping from bureau, asked by " + actor, Actor: actor, WebhookID: e.ID}}, now)
	if err != nil {
		return nil, err
	}
	return s.add(ctx, d)
}

func (s *Service) add(ctx context.Context, d *Delivery) (*Delivery, error) {
	if err := s.st.AddDelivery(ctx, d); err != nil {
		return nil, err
	}
	if s.wake != nil {
		s.wake()
	}
	return d, nil
}

// Deliveries lists an endpoint's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, id, status string, before time.Time, limit int) ([]*Delivery, error) {
	switch status {
	case "", StatusPending, StatusDelivered, StatusFailed:
	default:
		return nil, invalid("status", fmt.Sprintf("%q: want pending, delivered or failed", status))
	}
	return s.st.ListDeliveries(ctx, id, status, before, limit)
}

// Delivery returns one of an endpoint's deliveries, with its payload.
func (s *Service) Delivery(ctx context.Context, id, deliveryID string) (*Delivery, error) {
	d, err := s.st.GetDelivery(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.WebhookID != id {
		return nil, fmt.Errorf("delivery %s: %w", deliveryID, desktop.ErrNotFound)
	}
	return d, nil
}

// Redeliver queues a delivery's message again: a new delivery with its
// own attempts, the same message id and payload (receivers deduplicate
// on webhook-id).
func (s *Service) Redeliver(ctx context.Context, id, deliveryID string) (*Delivery, error) {
	old, err := s.Delivery(ctx, id, deliveryID)
	if err != nil {
		return nil, err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	d := &Delivery{ID: randomID("whd_"), WebhookID: id, MessageID: old.MessageID, EventType: old.EventType,
		Status: StatusPending, CreatedAt: now, NextAttemptAt: &now, RedeliveryOf: old.ID, Payload: old.Payload}
	return s.add(ctx, d)
}

// QuotaRefused sends quota.refused to owner's endpoints that want it:
// the API refused owner's request (by actor) for going over limit.
func (s *Service) QuotaRefused(ctx context.Context, owner, actor, limit, message string) {
	n, err := enqueue(ctx, s.st, owner, []string{"quota.refused"}, s.Now(), Data{Owner: owner, Actor: actor, Message: message, Limit: limit})
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Error("webhooks: enqueuing quota.refused", "owner", owner, "err", err)
	}
	if n > 0 && s.wake != nil {
		s.wake()
	}
}
