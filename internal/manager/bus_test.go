package manager

import (
	"context"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestSubscribersSeeTheirOwnersChanges(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice := h.m.Subscribe(ctx, "alice")
	bob := h.m.Subscribe(ctx, "bob")
	d := h.settle(t, h.create(t, "live").ID) // owner alice
	var states []desktop.State
	var events []string
	timeout := time.After(2 * time.Second)
	for len(states) == 0 || states[len(states)-1] != desktop.StateRunning {
		select {
		case ch := <-alice.C:
			if ch.Desktop != nil && ch.Desktop.ID == d.ID {
				states = append(states, ch.Desktop.State)
			}
			if ch.Event != nil {
				events = append(events, ch.Event.Type)
			}
		case <-timeout:
			t.Fatalf("alice saw states %v events %v", states, events)
		}
	}
	if len(events) == 0 {
		t.Error("alice saw no events")
	}
	select {
	case ch := <-bob.C:
		t.Errorf("bob saw alice's change %+v", ch)
	default:
	}
}
