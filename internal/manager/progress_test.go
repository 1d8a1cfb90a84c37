package manager

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Operations a caller waits through record each step and when they began,
// so clients can show where they are; the end of an operation clears both.
func TestOperationsRecordStepsAndStart(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := h.m.Subscribe(ctx, "")
	begun := time.Now().Add(-time.Second)

	d := h.settle(t, h.create(t, "steps").ID)
	want := []string{"create/disks", "create/define", "create/start", "running"}
	if got := progressOf(t, sub, d.ID, begun); !slices.Equal(got, want) {
		t.Errorf("create: %v, want %v", got, want)
	}
	if d.Operation != "" || d.Step != "" || d.OperationStartedAt != nil {
		t.Errorf("after create: %q %q %v", d.Operation, d.Step, d.OperationStartedAt)
	}

	ctx0 := context.Background()
	steps := []struct {
		run  func() (*desktop.Desktop, error)
		want []string
	}{
		{func() (*desktop.Desktop, error) { return h.m.Stop(ctx0, d.ID, "test", StopOptions{Force: true}) },
			[]string{"force_stop/", "stopped"}},
		{func() (*desktop.Desktop, error) { return h.m.Start(ctx0, d.ID, "test") },
			[]string{"start/", "start/define", "start/start", "running"}},
		{func() (*desktop.Desktop, error) { return h.m.Hibernate(ctx0, d.ID, "test") },
			[]string{"hibernate/", "hibernate/shrink guest memory", "hibernated"}},
		{func() (*desktop.Desktop, error) { return h.m.Start(ctx0, d.ID, "test") },
			[]string{"start/", "start/restore", "running"}},
	}
	for i, s := range steps {
		begun = time.Now().Add(-time.Second)
		if _, err := s.run(); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		h.settle(t, d.ID)
		if got := progressOf(t, sub, d.ID, begun); !slices.Equal(got, s.want) {
			t.Errorf("%d: %v, want %v", i, got, s.want)
		}
	}
}

// progressOf reads the changes of desktop id published so far as
// "operation/step" while an operation runs and as the state once it ended,
// checking that an operation's start time is set, recent and kept.
func progressOf(t *testing.T, sub *Subscription, id string, begun time.Time) []string {
	t.Helper()
	var out []string
	var started *time.Time
	for {
		select {
		case ch := <-sub.C:
			d := ch.Desktop
			if d == nil || d.ID != id {
				continue
			}
			switch {
			case d.Operation == "":
				if d.OperationStartedAt != nil || d.Step != "" {
					t.Errorf("settled %s with step %q started at %v", d.State, d.Step, d.OperationStartedAt)
				}
				out = append(out, string(d.State))
			case d.OperationStartedAt == nil || d.OperationStartedAt.Before(begun) || d.OperationStartedAt.After(time.Now()):
				t.Errorf("%s/%s started at %v", d.Operation, d.Step, d.OperationStartedAt)
			case started != nil && !started.Equal(*d.OperationStartedAt):
				t.Errorf("%s/%s: start moved from %v to %v", d.Operation, d.Step, started, d.OperationStartedAt)
			default:
				started = d.OperationStartedAt
				out = append(out, fmt.Sprintf("%s/%s", d.Operation, d.Step))
			}
		default:
			return out
		}
	}
}
