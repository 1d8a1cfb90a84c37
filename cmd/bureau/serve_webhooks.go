package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/webhooks"
)

// startWebhooks starts the webhook dispatcher (following every owner's
// events) and senders until ctx ends, and returns the service the API
// manages endpoints with. key is bureau's secrets key: endpoints'
// secrets are sealed with it.
func startWebhooks(ctx context.Context, cfg *config.Config, st *store.Store, key []byte, m *manager.Manager, log *slog.Logger) (*webhooks.Service, error) {
	wcfg, err := webhooks.ParseConfig(cfg.WebhookRetrySchedule, cfg.WebhookDisableAfter, cfg.WebhookAllowPrivate, cfg.WebhookKeepDays)
	if err != nil {
		return nil, err
	}
	log = log.With("part", "webhooks")
	send, err := webhooks.NewSender(st.Webhooks(), key, wcfg, log)
	if err != nil {
		return nil, err
	}
	// The owner of an endpoint bureau disabled is told on the live feed
	// (an event with no desktop; their other endpoints get webhook.disabled).
	send.Disabled = func(_ context.Context, e *webhooks.Endpoint) {
		b := make([]byte, 6)
		rand.Read(b)
		m.Publish(manager.Change{Owner: e.Owner, Event: &desktop.Event{ID: hex.EncodeToString(b), Type: "webhook_disabled",
			Message: "webhook " + e.ID + " (" + e.URL + ") " + e.DisabledReason, Actor: "bureau", CreatedAt: time.Now().UTC()}})
	}
	svc, err := webhooks.NewService(st.Webhooks(), key, wcfg, send.Wake, log)
	if err != nil {
		return nil, err
	}
	d := &webhooks.Dispatcher{Store: st.Webhooks(), Desktops: m, Log: log, Wake: send.Wake}
	go d.Run(ctx, feedSource(m.Subscribe(ctx, "")))
	go send.Run(ctx)
	return svc, nil
}

// feedSource reads the manager's feed for the webhook dispatcher.
func feedSource(sub *manager.Subscription) webhooks.Source {
	return func(ctx context.Context) (webhooks.Change, bool) {
		select {
		case <-ctx.Done():
			return webhooks.Change{}, false
		case ch := <-sub.C:
			return webhooks.Change{Owner: ch.Owner, Event: ch.Event, Dropped: sub.Dropped()}, true
		}
	}
}
