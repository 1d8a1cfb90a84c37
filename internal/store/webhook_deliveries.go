package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/webhooks"
)

const deliveryCols = `id, webhook_id, message_id, event_type, status, attempts, response_code, latency_ms, last_error,
created_at, next_at, delivered_at, redelivery_of`

// AddDelivery records a delivery.
func (w *Webhooks) AddDelivery(ctx context.Context, d *webhooks.Delivery) error {
	_, err := w.s.exec(ctx, `INSERT INTO webhook_deliveries (`+deliveryCols+`, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		d.ID, d.WebhookID, d.MessageID, d.EventType, d.Status, d.Attempts, d.ResponseCode, d.LatencyMS, d.LastError,
		millis(d.CreatedAt), nullMillis(d.NextAttemptAt), nullMillis(d.DeliveredAt), d.RedeliveryOf, string(d.Payload))
	if err != nil {
		return fmt.Errorf("add webhook delivery: %w", err)
	}
	return nil
}

// ClaimDeliveries claims up to limit pending deliveries due at now: each
// is taken by moving its next attempt to until, on the condition that it
// is still pending and due, so one claimer of several (senders, bureau
// servers on one database) gets it.
func (w *Webhooks) ClaimDeliveries(ctx context.Context, now, until time.Time, limit int) ([]*webhooks.Delivery, error) {
	rows, err := w.s.query(ctx, `SELECT id FROM webhook_deliveries WHERE status=? AND next_at<=? ORDER BY next_at LIMIT ?`,
		webhooks.StatusPending, millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("due webhook deliveries: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("due webhook deliveries: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("due webhook deliveries: %w", err)
	}
	var out []*webhooks.Delivery
	for _, id := range ids {
		res, err := w.s.exec(ctx, `UPDATE webhook_deliveries SET next_at=? WHERE id=? AND status=? AND next_at<=?`,
			millis(until), id, webhooks.StatusPending, millis(now))
		if err != nil {
			return out, fmt.Errorf("claim webhook delivery: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			continue // another sender took it
		}
		d, err := w.GetDelivery(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// FinishAttempt records the outcome of an attempt.
func (w *Webhooks) FinishAttempt(ctx context.Context, d *webhooks.Delivery) error {
	_, err := w.s.exec(ctx, `UPDATE webhook_deliveries SET status=?, attempts=?, response_code=?, latency_ms=?, last_error=?,
		next_at=?, delivered_at=? WHERE id=?`, d.Status, d.Attempts, d.ResponseCode, d.LatencyMS, d.LastError,
		nullMillis(d.NextAttemptAt), nullMillis(d.DeliveredAt), d.ID)
	if err != nil {
		return fmt.Errorf("webhook delivery %s: %w", d.ID, err)
	}
	return nil
}

// ListDeliveries lists an endpoint's deliveries, newest first.
func (w *Webhooks) ListDeliveries(ctx context.Context, webhookID, status string, before time.Time, limit int) ([]*webhooks.Delivery, error) {
	q, args := `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE webhook_id=?`, []any{webhookID}
	if status != "" {
		q, args = q+` AND status=?`, append(args, status)
	}
	if !before.IsZero() {
		q, args = q+` AND created_at<?`, append(args, millis(before))
	}
	rows, err := w.s.query(ctx, q+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []*webhooks.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			return nil, fmt.Errorf("list webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// GetDelivery returns one delivery with its payload.
func (w *Webhooks) GetDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	d, err := scanDelivery(w.s.queryRow(ctx, `SELECT `+deliveryCols+`, payload FROM webhook_deliveries WHERE id=?`, id), true)
	if err != nil {
		return nil, fmt.Errorf("webhook delivery %s: %w", id, notFound(err))
	}
	return d, nil
}

// PruneDeliveries deletes finished deliveries made before before.
func (w *Webhooks) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	res, err := w.s.exec(ctx, `DELETE FROM webhook_deliveries WHERE status<>? AND created_at<?`, webhooks.StatusPending, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune webhook deliveries: %w", err)
	}
	return res.RowsAffected()
}

func scanDelivery(row scanner, payload bool) (*webhooks.Delivery, error) {
	var d webhooks.Delivery
	var created int64
	var next, delivered sql.NullInt64
	dest := []any{&d.ID, &d.WebhookID, &d.MessageID, &d.EventType, &d.Status, &d.Attempts, &d.ResponseCode, &d.LatencyMS,
		&d.LastError, &created, &next, &delivered, &d.RedeliveryOf}
	var body string
	if payload {
		dest = append(dest, &body)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	d.CreatedAt, d.NextAttemptAt, d.DeliveredAt = fromMillis(created), fromNullMillis(next), fromNullMillis(delivered)
	if payload {
		d.Payload = []byte(body)
	}
	return &d, nil
}
