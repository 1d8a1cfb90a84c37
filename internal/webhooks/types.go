// Package webhooks delivers desktop events to HTTP endpoints that owners
// register, signed per the Standard Webhooks specification
// (https://www.standardwebhooks.com): a dispatcher turns events of the
// manager's feed into deliveries kept in the store, and senders POST them,
// retrying with back-off, and disable endpoints that keep failing.
package webhooks

import (
	"encoding/json"
	"time"
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Endpoint is a registered webhook: where to POST which events.
type Endpoint struct {
	ID          string   `json:"id"`
	Owner       string   `json:"owner"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
	// AllOwners (an admin's endpoint only) receives every owner's events.
	AllOwners bool      `json:"all_owners"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	// DisabledAt and DisabledReason are set when bureau (or its owner)
	// disabled it.
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	// FailingSince is the first of the attempts that have failed since
	// the last success; Failures counts them.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	Failures     int        `json:"failures"`
	// SecretRotatedAt is when the secret last changed; until
	// PreviousSecretUntil deliveries are signed with the old one too.
	SecretRotatedAt     *time.Time `json:"secret_rotated_at,omitempty"`
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
}

// Delivery is one message to one endpoint and the attempts to send it.
type Delivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	// MessageID is the webhook-id header: the same for every attempt and
	// for manual redeliveries, so receivers can deduplicate.
	MessageID     string     `json:"message_id"`
	EventType     string     `json:"event_type"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	ResponseCode  int        `json:"response_code,omitempty"`
	LatencyMS     int64      `json:"latency_ms,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	// RedeliveryOf is the delivery a manual redelivery repeats.
	RedeliveryOf string `json:"redelivery_of,omitempty"`
	// Payload is the body POSTed (shown by GET of one delivery).
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Message is a delivery's body.
type Message struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what a message is about.
type Data struct {
	DesktopID string       `json:"desktop_id,omitempty"`
	Owner     string       `json:"owner"`
	EventID   string       `json:"event_id,omitempty"`
	Message   string       `json:"message"`
	Actor     string       `json:"actor,omitempty"`
	Desktop   *DesktopInfo `json:"desktop,omitempty"`
	// WebhookID names the endpoint a webhook.* message is about.
	WebhookID string `json:"webhook_id,omitempty"`
	// Limit is the quota limit a quota.refused message is about.
	Limit string `json:"limit,omitempty"`
}

// DesktopInfo is the desktop an event is about, as it was when the
// message was made.
type DesktopInfo struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
	Owner string `json:"owner"`
}
