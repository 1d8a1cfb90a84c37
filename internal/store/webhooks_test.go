package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/webhooks"
)

var _ webhooks.Store = (*Webhooks)(nil)

func TestWebhooksRoundTrip(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			w := s.Webhooks()
			now := time.Now().UTC().Truncate(time.Millisecond)
			a := &webhooks.Endpoint{ID: "wh_a", Owner: "alice", URL: "https://a.example/hook", Events: []string{"desktop.*"},
				Enabled: true, CreatedAt: now, CreatedBy: "alice/tok"}
			all := &webhooks.Endpoint{ID: "wh_root", Owner: "root", URL: "https://r.example/", Events: []string{"*"},
				AllOwners: true, Enabled: true, CreatedAt: now.Add(time.Millisecond)}
			bob := &webhooks.Endpoint{ID: "wh_b", Owner: "bob", URL: "https://b.example/", Events: []string{"help.*"},
				Enabled: true, CreatedAt: now.Add(2 * time.Millisecond)}
			for _, e := range []*webhooks.Endpoint{a, all, bob} {
				if err := w.CreateWebhook(ctx, e, "sealed-"+e.ID); err != nil {
					t.Fatal(err)
				}
			}
			got, err := w.Webhook(ctx, "wh_a")
			if err != nil || got.URL != a.URL || got.Events[0] != "desktop.*" || !got.Enabled || !got.CreatedAt.Equal(now) {
				t.Fatalf("webhook: %+v %v", got, err)
			}
			if _, err := w.Webhook(ctx, "wh_none"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("missing webhook: %v", err)
			}
			if l, _ := w.ListWebhooks(ctx, "alice"); len(l) != 1 {
				t.Fatalf("alice's: %d", len(l))
			}
			if l, _ := w.ListWebhooks(ctx, ""); len(l) != 3 {
				t.Fatalf("all: %d", len(l))
			}
			m, _ := w.MatchingWebhooks(ctx, "alice")
			if len(m) != 2 || m[0].ID != "wh_a" || m[1].ID != "wh_root" {
				t.Fatalf("matching alice: %+v", m)
			}
			// Failures, disabling, re-enabling.
			e, err := w.WebhookFailed(ctx, "wh_a", now)
			if err != nil || e.Failures != 1 || !e.FailingSince.Equal(now) {
				t.Fatalf("failed: %+v %v", e, err)
			}
			e, _ = w.WebhookFailed(ctx, "wh_a", now.Add(time.Hour))
			if e.Failures != 2 || !e.FailingSince.Equal(now) {
				t.Fatalf("failed twice: %+v", e)
			}
			if ok, err := w.DisableWebhook(ctx, "wh_a", now, "kept failing"); !ok || err != nil {
				t.Fatalf("disable: %v %v", ok, err)
			}
			if ok, _ := w.DisableWebhook(ctx, "wh_a", now, "again"); ok {
				t.Fatal("disabled twice")
			}
			if m, _ := w.MatchingWebhooks(ctx, "alice"); len(m) != 1 {
				t.Fatalf("a disabled endpoint matches: %+v", m)
			}
			e, _ = w.Webhook(ctx, "wh_a")
			if e.Enabled || e.DisabledReason != "kept failing" || e.DisabledAt == nil {
				t.Fatalf("disabled: %+v", e)
			}
			e.Enabled, e.DisabledAt, e.DisabledReason, e.FailingSince, e.Failures = true, nil, "", nil, 0
			e.Events = []string{"help.*", "desktop.started"}
			if err := w.UpdateWebhook(ctx, e); err != nil {
				t.Fatal(err)
			}
			e, _ = w.Webhook(ctx, "wh_a")
			if !e.Enabled || e.FailingSince != nil || len(e.Events) != 2 {
				t.Fatalf("updated: %+v", e)
			}
			// Rotation keeps the previous secret.
			if err := w.RotateWebhookSecret(ctx, "wh_a", "new", "sealed-wh_a", now, now.Add(24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			cur, prev, _ := w.WebhookSecrets(ctx, "wh_a")
			e, _ = w.Webhook(ctx, "wh_a")
			if cur != "new" || prev != "sealed-wh_a" || !e.PreviousSecretUntil.Equal(now.Add(24*time.Hour)) {
				t.Fatalf("rotated: %q %q %+v", cur, prev, e)
			}
			// Deliveries.
			old := now.Add(-10 * 24 * time.Hour)
			for i, d := range []*webhooks.Delivery{
				{ID: "whd_1", WebhookID: "wh_a", MessageID: "msg_1", EventType: "desktop.started", Status: webhooks.StatusPending, CreatedAt: now, NextAttemptAt: &now, Payload: []byte(`{"a":1}`)},
				{ID: "whd_2", WebhookID: "wh_a", MessageID: "msg_2", EventType: "desktop.stopped", Status: webhooks.StatusPending, CreatedAt: now.Add(time.Millisecond), NextAttemptAt: ptr(now.Add(time.Hour)), Payload: []byte(`{}`)},
				{ID: "whd_3", WebhookID: "wh_a", MessageID: "msg_3", EventType: "desktop.stopped", Status: webhooks.StatusDelivered, CreatedAt: old, DeliveredAt: &old, Payload: []byte(`{}`)},
			} {
				if err := w.AddDelivery(ctx, d); err != nil {
					t.Fatal(i, err)
				}
			}
			// Several claimers at once: each due delivery is claimed once.
			var mu sync.Mutex
			claimed := map[string]int{}
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := w.ClaimDeliveries(ctx, now, now.Add(time.Minute), 10)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					for _, d := range got {
						claimed[d.ID]++
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			if len(claimed) != 1 || claimed["whd_1"] != 1 {
				t.Fatalf("claimed: %v", claimed)
			}
			d, _ := w.GetDelivery(ctx, "whd_1")
			if string(d.Payload) != `{"a":1}` || !d.NextAttemptAt.Equal(now.Add(time.Minute)) {
				t.Fatalf("claimed delivery: %+v", d)
			}
			d.Status, d.Attempts, d.ResponseCode, d.LatencyMS, d.DeliveredAt, d.NextAttemptAt = webhooks.StatusDelivered, 1, 200, 12, &now, nil
			if err := w.FinishAttempt(ctx, d); err != nil {
				t.Fatal(err)
			}
			list, _ := w.ListDeliveries(ctx, "wh_a", "", time.Time{}, 10)
			if len(list) != 3 || list[0].ID != "whd_2" || list[2].ID != "whd_3" || list[0].Payload != nil {
				t.Fatalf("deliveries: %+v", list)
			}
			if list, _ := w.ListDeliveries(ctx, "wh_a", webhooks.StatusDelivered, now, 10); len(list) != 1 || list[0].ID != "whd_3" {
				t.Fatalf("delivered before now: %+v", list)
			}
			if n, err := w.PruneDeliveries(ctx, now.Add(-7*24*time.Hour)); n != 1 || err != nil {
				t.Fatalf("pruned: %d %v", n, err)
			}
			if err := w.DeleteWebhook(ctx, "wh_a"); err != nil {
				t.Fatal(err)
			}
			if _, err := w.GetDelivery(ctx, "whd_1"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("delivery of a deleted webhook: %v", err)
			}
			if err := w.DeleteWebhook(ctx, "wh_a"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("deleted twice: %v", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
