package webhooks

import (
	"context"
	"time"
)

// Store keeps endpoints (their secrets sealed) and deliveries. Not found
// is desktop.ErrNotFound.
type Store interface {
	Endpoints
	Deliveries
}

// Endpoints keeps the endpoints and their sealed secrets.
type Endpoints interface {
	CreateWebhook(ctx context.Context, e *Endpoint, sealedSecret string) error
	Webhook(ctx context.Context, id string) (*Endpoint, error)
	// WebhookSecrets are the sealed current and previous ("" if none)
	// secrets.
	WebhookSecrets(ctx context.Context, id string) (current, previous string, err error)
	// ListWebhooks lists owner's endpoints ("" = everyone's).
	ListWebhooks(ctx context.Context, owner string) ([]*Endpoint, error)
	// MatchingWebhooks are the enabled endpoints that get owner's events:
	// owner's own and those set for all owners.
	MatchingWebhooks(ctx context.Context, owner string) ([]*Endpoint, error)
	// UpdateWebhook writes url, description, events, enabled and the
	// disabled and failing fields.
	UpdateWebhook(ctx context.Context, e *Endpoint) error
	RotateWebhookSecret(ctx context.Context, id, sealed, previous string, at, previousUntil time.Time) error
	DeleteWebhook(ctx context.Context, id string) error
	// WebhookFailed counts a failed attempt (failing since at, if it was
	// not failing) and returns the endpoint after; WebhookSucceeded
	// clears the count.
	WebhookFailed(ctx context.Context, id string, at time.Time) (*Endpoint, error)
	WebhookSucceeded(ctx context.Context, id string) error
	// DisableWebhook disables an enabled endpoint (false: it was not).
	DisableWebhook(ctx context.Context, id string, at time.Time, reason string) (bool, error)
}

// Deliveries keeps the deliveries: queued, claimed, attempted, listed.
type Deliveries interface {
	AddDelivery(ctx context.Context, d *Delivery) error
	// ClaimDeliveries takes up to limit pending deliveries due at now,
	// each claimed (its next attempt moved to until) by one caller only.
	ClaimDeliveries(ctx context.Context, now, until time.Time, limit int) ([]*Delivery, error)
	// FinishAttempt writes a delivery's status, attempts, response code,
	// latency, last error, next attempt and delivered time.
	FinishAttempt(ctx context.Context, d *Delivery) error
	// ListDeliveries lists an endpoint's deliveries, newest first, made
	// before before (zero: any), of status ("" = any), without payloads.
	ListDeliveries(ctx context.Context, webhookID, status string, before time.Time, limit int) ([]*Delivery, error)
	GetDelivery(ctx context.Context, id string) (*Delivery, error)
	// PruneDeliveries deletes delivered and failed deliveries made before.
	PruneDeliveries(ctx context.Context, before time.Time) (int64, error)
}
