package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/webhooks"
)

// Webhooks keeps webhook endpoints and their deliveries.
type Webhooks struct{ s *Store }

// Webhooks returns the store's webhook records.
func (s *Store) Webhooks() *Webhooks { return &Webhooks{s: s} }

const webhookCols = `id, owner, url, description, events, all_owners, enabled, created_at, created_by, disabled_at,
disabled_reason, failing_since, failures, secret_rotated_at, previous_secret_until`

// CreateWebhook records an endpoint with its sealed secret.
func (w *Webhooks) CreateWebhook(ctx context.Context, e *webhooks.Endpoint, sealed string) error {
	events, err := json.Marshal(e.Events)
	if err != nil {
		return err
	}
	_, err = w.s.exec(ctx, `INSERT INTO webhooks (id, owner, url, description, events, all_owners, enabled, created_at, created_by,
		secret_sealed) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		e.ID, e.Owner, e.URL, e.Description, string(events), e.AllOwners, e.Enabled, millis(e.CreatedAt), e.CreatedBy, sealed)
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	return nil
}

// Webhook returns one endpoint.
func (w *Webhooks) Webhook(ctx context.Context, id string) (*webhooks.Endpoint, error) {
	e, err := scanWebhook(w.s.queryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id=?`, id))
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", id, notFound(err))
	}
	return e, nil
}

// WebhookSecrets returns an endpoint's sealed secrets.
func (w *Webhooks) WebhookSecrets(ctx context.Context, id string) (cur, prev string, err error) {
	err = w.s.queryRow(ctx, `SELECT secret_sealed, previous_secret_sealed FROM webhooks WHERE id=?`, id).Scan(&cur, &prev)
	if err != nil {
		return "", "", fmt.Errorf("webhook %s: %w", id, notFound(err))
	}
	return cur, prev, nil
}

// ListWebhooks lists owner's endpoints ("" = all), oldest first.
func (w *Webhooks) ListWebhooks(ctx context.Context, owner string) ([]*webhooks.Endpoint, error) {
	q, args := `SELECT `+webhookCols+` FROM webhooks`, []any{}
	if owner != "" {
		q, args = q+` WHERE owner=?`, append(args, owner)
	}
	return w.listWebhooks(ctx, q+` ORDER BY created_at, id`, args...)
}

// MatchingWebhooks lists the enabled endpoints that get owner's events.
func (w *Webhooks) MatchingWebhooks(ctx context.Context, owner string) ([]*webhooks.Endpoint, error) {
	return w.listWebhooks(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE enabled=? AND (owner=? OR all_owners=?) ORDER BY created_at, id`,
		true, owner, true)
}

func (w *Webhooks) listWebhooks(ctx context.Context, q string, args ...any) ([]*webhooks.Endpoint, error) {
	rows, err := w.s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	out := []*webhooks.Endpoint{}
	for rows.Next() {
		e, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// UpdateWebhook writes an endpoint's settings and state.
func (w *Webhooks) UpdateWebhook(ctx context.Context, e *webhooks.Endpoint) error {
	events, err := json.Marshal(e.Events)
	if err != nil {
		return err
	}
	res, err := w.s.exec(ctx, `UPDATE webhooks SET url=?, description=?, events=?, enabled=?, disabled_at=?, disabled_reason=?,
		failing_since=?, failures=? WHERE id=?`, e.URL, e.Description, string(events), e.Enabled, nullMillis(e.DisabledAt),
		e.DisabledReason, nullMillis(e.FailingSince), e.Failures, e.ID)
	return w.one(res, err, e.ID)
}

func (w *Webhooks) one(res sql.Result, err error, id string) error {
	if err != nil {
		return fmt.Errorf("webhook %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook %s: %w", id, errNotFound)
	}
	return nil
}

// RotateWebhookSecret sets a new sealed secret, keeping the previous one
// until previousUntil.
func (w *Webhooks) RotateWebhookSecret(ctx context.Context, id, sealed, previous string, at, previousUntil time.Time) error {
	res, err := w.s.exec(ctx, `UPDATE webhooks SET secret_sealed=?, previous_secret_sealed=?, secret_rotated_at=?, previous_secret_until=?
		WHERE id=?`, sealed, previous, millis(at), millis(previousUntil), id)
	return w.one(res, err, id)
}

// DeleteWebhook deletes an endpoint and its deliveries.
func (w *Webhooks) DeleteWebhook(ctx context.Context, id string) error {
	tx, err := w.s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, w.s.q(`DELETE FROM webhook_deliveries WHERE webhook_id=?`), id); err != nil {
		return fmt.Errorf("delete webhook deliveries: %w", classify(err))
	}
	res, err := tx.ExecContext(ctx, w.s.q(`DELETE FROM webhooks WHERE id=?`), id)
	if err := w.one(res, classify(err), id); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	return nil
}

// WebhookFailed counts a failed attempt and returns the endpoint after.
func (w *Webhooks) WebhookFailed(ctx context.Context, id string, at time.Time) (*webhooks.Endpoint, error) {
	res, err := w.s.exec(ctx, `UPDATE webhooks SET failures=failures+1, failing_since=COALESCE(failing_since, ?) WHERE id=?`, millis(at), id)
	if err := w.one(res, err, id); err != nil {
		return nil, err
	}
	return w.Webhook(ctx, id)
}

// WebhookSucceeded clears an endpoint's failures.
func (w *Webhooks) WebhookSucceeded(ctx context.Context, id string) error {
	_, err := w.s.exec(ctx, `UPDATE webhooks SET failures=0, failing_since=NULL WHERE id=?`, id)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", id, err)
	}
	return nil
}

// DisableWebhook disables an enabled endpoint; false if it was not.
func (w *Webhooks) DisableWebhook(ctx context.Context, id string, at time.Time, reason string) (bool, error) {
	res, err := w.s.exec(ctx, `UPDATE webhooks SET enabled=?, disabled_at=?, disabled_reason=? WHERE id=? AND enabled=?`,
		false, millis(at), reason, id, true)
	if err != nil {
		return false, fmt.Errorf("disable webhook %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func scanWebhook(row scanner) (*webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	var events string
	var created int64
	var disabled, failing, rotated, prevUntil sql.NullInt64
	if err := row.Scan(&e.ID, &e.Owner, &e.URL, &e.Description, &events, &e.AllOwners, &e.Enabled, &created, &e.CreatedBy,
		&disabled, &e.DisabledReason, &failing, &e.Failures, &rotated, &prevUntil); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return nil, fmt.Errorf("webhook %s events: %w", e.ID, err)
	}
	e.CreatedAt = fromMillis(created)
	e.DisabledAt, e.FailingSince = fromNullMillis(disabled), fromNullMillis(failing)
	e.SecretRotatedAt, e.PreviousSecretUntil = fromNullMillis(rotated), fromNullMillis(prevUntil)
	return &e, nil
}
