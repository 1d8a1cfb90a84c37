package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Timeout bounds one attempt; lease is how long a claimed delivery is
// the claimer's (a sender that died gives it back after that).
const (
	Timeout = 10 * time.Second
	lease   = time.Minute
	// maxError clips a delivery's last error.
	maxError = 500
)

// Sender sends due deliveries: Workers at once, each attempt signed, its
// outcome recorded, failures retried on Config.Schedule, endpoints that
// keep failing disabled.
type Sender struct {
	Store  Store
	Config Config
	Log    *slog.Logger
	// Workers is how many deliveries are sent at once (0: 4).
	Workers int
	// Disabled (may be nil) is told when bureau disables an endpoint.
	Disabled func(ctx context.Context, e *Endpoint)
	// Delivered (may be nil) counts attempts by outcome.
	Delivered func(status string, took time.Duration)

	// Now is the clock (time.Now; tests set their own).
	Now func() time.Time

	seal   *sealer
	client *http.Client
	wake   chan struct{}
}

// NewSender builds a sender; key seals endpoints' secrets (bureau's
// secrets key).
func NewSender(st Store, key []byte, cfg Config, log *slog.Logger) (*Sender, error) {
	seal, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	g := &Guard{Allow: cfg.Allow}
	return &Sender{Store: st, Config: cfg, Log: log, seal: seal, client: newClient(g), Now: time.Now,
		wake: make(chan struct{}, 1)}, nil
}

// newClient posts through g, follows no redirects and uses no proxy.
func newClient(g *Guard) *http.Client {
	return &http.Client{
		Timeout:       Timeout,
		Transport:     &http.Transport{DialContext: g.DialContext, Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Wake tells the sender deliveries may be due now.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends, looking every second (and
// when woken), and prunes old deliveries hourly.
func (s *Sender) Run(ctx context.Context) {
	workers := s.Workers
	if workers <= 0 {
		workers = 4
	}
	work := make(chan *Delivery)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				s.Attempt(ctx, d)
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	s.prune(ctx)
	for {
		for {
			now := s.Now()
			due, err := s.Store.ClaimDeliveries(ctx, now, now.Add(lease), workers)
			if err != nil && ctx.Err() == nil {
				s.Log.Error("webhooks: taking due deliveries", "err", err)
			}
			for _, d := range due {
				select {
				case work <- d:
				case <-ctx.Done():
					return
				}
			}
			if len(due) < workers {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		case <-prune.C:
			s.prune(ctx)
		}
	}
}

func (s *Sender) prune(ctx context.Context) {
	n, err := s.Store.PruneDeliveries(ctx, s.Now().Add(-s.Config.Keep))
	if err != nil {
		s.Log.Error("webhooks: pruning old deliveries", "err", err)
	} else if n > 0 {
		s.Log.Info("webhooks: old deliveries pruned", "count", n)
	}
}

// secrets are the secrets a message to e is signed with now: its secret
// and, for a day after a rotation, the previous one.
func (s *Sender) secrets(ctx context.Context, e *Endpoint, now time.Time) ([]string, error) {
	cur, prev, err := s.Store.WebhookSecrets(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	c, err := s.seal.open(e.ID, cur)
	if err != nil {
		return nil, err
	}
	out := []string{c}
	if prev != "" && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		p, err := s.seal.open(e.ID, prev)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Attempt makes one attempt at a claimed delivery and records it.
func (s *Sender) Attempt(ctx context.Context, d *Delivery) {
	e, err := s.Store.Webhook(ctx, d.WebhookID)
	if errors.Is(err, desktop.ErrNotFound) {
		return // deleted with its deliveries
	} else if err != nil {
		s.Log.Error("webhooks: reading an endpoint", "webhook", d.WebhookID, "err", err)
		return // claimed: tried again once the lease ends
	}
	now := s.Now()
	if !e.Enabled {
		d.Status, d.NextAttemptAt, d.LastError = StatusFailed, nil, "not sent: the endpoint is disabled"
		s.finish(ctx, d)
		return
	}
	code, took, err := s.post(ctx, e, d, now)
	d.Attempts++
	d.ResponseCode, d.LatencyMS = code, took.Milliseconds()
	if s.Delivered != nil {
		status := StatusDelivered
		if err != nil {
			status = StatusFailed
		}
		s.Delivered(status, took)
	}
	if err == nil {
		d.Status, d.LastError, d.NextAttemptAt, d.DeliveredAt = StatusDelivered, "", nil, &now
		s.finish(ctx, d)
		if e.Failures > 0 || e.FailingSince != nil {
			if err := s.Store.WebhookSucceeded(ctx, e.ID); err != nil {
				s.Log.Error("webhooks: recording a success", "webhook", e.ID, "err", err)
			}
		}
		return
	}
	d.LastError = clip(err.Error())
	if next, ok := s.Config.next(now, d.Attempts); ok {
		d.Status, d.NextAttemptAt = StatusPending, &next
	} else {
		d.Status, d.NextAttemptAt = StatusFailed, nil
	}
	s.finish(ctx, d)
	s.failed(ctx, e, now, d.LastError)
}

// post sends d to e and returns the response's status and the time it
// took; an error unless the answer was 2xx.
func (s *Sender) post(ctx context.Context, e *Endpoint, d *Delivery, now time.Time) (int, time.Duration, error) {
	secrets, err := s.secrets(ctx, e, now)
	if err != nil {
		return 0, 0, err
	}
	h, err := Headers(secrets, d.MessageID, now, d.Payload)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, 0, fmt.Errorf("webhook request: %w", err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "bureau-webhooks/1")
	start := time.Now()
	resp, err := s.client.Do(req)
	took := time.Since(start)
	if err != nil {
		return 0, took, fmt.Errorf("POST %s: %w", e.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, took, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return resp.StatusCode, took, nil
}

func (s *Sender) finish(ctx context.Context, d *Delivery) {
	if err := s.Store.FinishAttempt(ctx, d); err != nil {
		s.Log.Error("webhooks: recording an attempt", "delivery", d.ID, "err", err)
	}
}

// failed counts a failed attempt against e and disables it once it has
// failed MinFailures times in a row for longer than DisableAfter.
func (s *Sender) failed(ctx context.Context, e *Endpoint, now time.Time, lastErr string) {
	after, err := s.Store.WebhookFailed(ctx, e.ID, now)
	if err != nil {
		s.Log.Error("webhooks: recording a failure", "webhook", e.ID, "err", err)
		return
	}
	if after.FailingSince == nil || after.Failures < MinFailures || now.Sub(*after.FailingSince) < s.Config.DisableAfter {
		return
	}
	reason := fmt.Sprintf("disabled by bureau at %s: every attempt failed since %s (%d in a row); last: %s",
		now.UTC().Format(time.RFC3339), after.FailingSince.UTC().Format(time.RFC3339), after.Failures, lastErr)
	changed, err := s.Store.DisableWebhook(ctx, e.ID, now, reason)
	if err != nil {
		s.Log.Error("webhooks: disabling a failing endpoint", "webhook", e.ID, "err", err)
		return
	}
	if !changed {
		return
	}
	s.Log.Warn("webhook endpoint disabled: it kept failing", "webhook", e.ID, "owner", e.Owner, "url", e.URL, "reason", reason)
	after.Enabled, after.DisabledAt, after.DisabledReason = false, &now, reason
	if s.Disabled != nil {
		s.Disabled(ctx, after)
	}
}

func clip(s string) string {
	if len(s) <= maxError {
		return s
	}
	return s[:maxError] + "…"
}
