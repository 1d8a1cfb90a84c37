package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// DesktopGetter reads the desktop an event is about.
type DesktopGetter interface {
	Get(ctx context.Context, id string) (*desktop.Desktop, error)
}

// queue is what enqueuing needs of the store.
type queue interface {
	MatchingWebhooks(ctx context.Context, owner string) ([]*Endpoint, error)
	AddDelivery(ctx context.Context, d *Delivery) error
}

// Dispatcher turns the manager's events into deliveries: it only writes
// them to the store, from its own goroutine, so no operation waits on a
// webhook. If it falls behind, the feed drops events and says so.
type Dispatcher struct {
	Store    queue
	Desktops DesktopGetter
	Log      *slog.Logger
	// Wake (may be nil) tells the senders new deliveries are due.
	Wake func()
	// Dropped (may be nil) counts events the feed dropped.
	Dropped func(n int)
	// Now (nil: time.Now) dates messages of events without a time.
	Now     func() time.Time
	dropped atomic.Int64
}

// Change is what the dispatcher reads from the manager's feed: a new
// event of owner's (nil for a change of a desktop's record, which makes no
// message), and how many changes the feed dropped before it.
type Change struct {
	Owner   string
	Event   *desktop.Event
	Dropped int
}

// Source is the manager's feed of every owner's changes as the
// dispatcher reads it: the next change, false once ctx ends.
type Source func(ctx context.Context) (Change, bool)

// Run enqueues the events of src until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, src Source) {
	for {
		ch, ok := src(ctx)
		if !ok {
			return
		}
		if ch.Dropped > 0 {
			d.dropped.Add(int64(ch.Dropped))
			d.Log.Warn("webhooks fell behind: events dropped, not delivered", "count", ch.Dropped)
			if d.Dropped != nil {
				d.Dropped(ch.Dropped)
			}
		}
		if ch.Event == nil {
			continue
		}
		if err := d.Handle(ctx, ch.Owner, ch.Event); err != nil {
			d.Log.Error("webhooks: enqueuing an event", "type", ch.Event.Type, "desktop", ch.Event.DesktopID, "err", err)
		}
	}
}

// DroppedTotal is how many events the feed dropped before they could be
// enqueued.
func (d *Dispatcher) DroppedTotal() int64 { return d.dropped.Load() }

// Handle enqueues the deliveries of one of owner's events.
func (d *Dispatcher) Handle(ctx context.Context, owner string, ev *desktop.Event) error {
	types := TypesOf(ev.Type)
	if len(types) == 0 {
		return nil
	}
	data := Data{DesktopID: ev.DesktopID, Owner: owner, EventID: ev.ID, Message: ev.Message, Actor: ev.Actor}
	if ev.DesktopID != "" && d.Desktops != nil {
		if dt, err := d.Desktops.Get(ctx, ev.DesktopID); err == nil {
			data.Desktop = &DesktopInfo{ID: dt.ID, Name: dt.Name, State: string(dt.State), Owner: dt.Owner}
		}
	}
	at := ev.CreatedAt
	if at.IsZero() {
		at = d.clock()
	}
	n, err := enqueue(ctx, d.Store, owner, types, at, data)
	if n > 0 && d.Wake != nil {
		d.Wake()
	}
	return err
}

func (d *Dispatcher) clock() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// enqueue makes a pending delivery of an event to every endpoint that
// gets owner's events and asked for one of types (the first it matches),
// and returns how many.
func enqueue(ctx context.Context, q queue, owner string, types []string, at time.Time, data Data) (int, error) {
	eps, err := q.MatchingWebhooks(ctx, owner)
	if err != nil {
		return 0, fmt.Errorf("webhooks of %s: %w", owner, err)
	}
	msgs := map[string]string{} // a type's message id: one per event and type
	n := 0
	for _, ep := range eps {
		typ := firstMatch(ep.Events, types)
		if typ == "" {
			continue
		}
		if msgs[typ] == "" {
			msgs[typ] = randomID("msg_")
		}
		del, err := newDelivery(ep.ID, msgs[typ], Message{Type: typ, Timestamp: at.UTC(), Data: data}, at)
		if err != nil {
			return n, err
		}
		if err := q.AddDelivery(ctx, del); err != nil {
			return n, fmt.Errorf("webhook delivery to %s: %w", ep.ID, err)
		}
		n++
	}
	return n, nil
}

// newDelivery is a pending delivery of m, due at once.
func newDelivery(webhookID, messageID string, m Message, now time.Time) (*Delivery, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("webhook message: %w", err)
	}
	now = now.UTC().Truncate(time.Millisecond)
	return &Delivery{ID: randomID("whd_"), WebhookID: webhookID, MessageID: messageID, EventType: m.Type,
		Status: StatusPending, CreatedAt: now, NextAttemptAt: &now, Payload: body}, nil
}
