package guest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
)

// fakeUI is a bureau-agent that records the ui calls it gets.
type fakeUI struct {
	Channel // the rest is not called
	queries []client.UIQuery
	actions []client.UIAction
	err     error
}

func (f *fakeUI) UITree(_ context.Context, _ string, q client.UIQuery) (*client.UIResult, error) {
	f.queries = append(f.queries, q)
	return &client.UIResult{}, f.err
}

func (f *fakeUI) UIFind(_ context.Context, _ string, q client.UIQuery) (*client.UIResult, error) {
	f.queries = append(f.queries, q)
	return &client.UIResult{}, f.err
}

func (f *fakeUI) UIAct(_ context.Context, _ string, a client.UIAction) (*client.UIResult, error) {
	f.actions = append(f.actions, a)
	return &client.UIResult{}, f.err
}

func TestUICallsAsTheDesktopsUser(t *testing.T) {
	f := &fakeUI{}
	s := New(nil).WithChannel(f)
	ctx := context.Background()
	if _, err := s.UITree(ctx, "d", UIQuery{Role: "button", User: "root"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UIAct(ctx, "d", UIAction{Node: "n", Action: "set_value", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	if f.queries[0].User != "agent" || f.queries[0].Role != "button" || f.actions[0].User != "agent" {
		t.Errorf("calls %+v %+v", f.queries, f.actions)
	}
	for _, c := range []struct {
		field string
		call  func() error
	}{
		{"depth", func() error { _, err := s.UITree(ctx, "d", UIQuery{Depth: UIMaxDepth + 1}); return err }},
		{"limit", func() error { _, err := s.UIFind(ctx, "d", UIQuery{Matches: UIMaxLimit + 1}); return err }},
		{"root", func() error { _, err := s.UITree(ctx, "d", UIQuery{Root: "r", Window: "w"}); return err }},
		{"timeout_ms", func() error { _, err := s.UIFind(ctx, "d", UIQuery{TimeoutMS: -1}); return err }},
		{"action", func() error { _, err := s.UIAct(ctx, "d", UIAction{Node: "n"}); return err }},
		{"value", func() error {
			_, err := s.UIAct(ctx, "d", UIAction{Node: "n", Action: "click", Value: "v"})
			return err
		}},
	} {
		var ve *desktop.ValidationError
		if err := c.call(); !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: %v", c.field, err)
		}
	}
	if len(f.queries) != 1 || len(f.actions) != 1 {
		t.Errorf("invalid calls reached the agent: %+v %+v", f.queries, f.actions)
	}
}

func TestUIWithoutTheAgentIsUnavailable(t *testing.T) {
	ctx := context.Background()
	if _, err := New(nil).UITree(ctx, "d", UIQuery{}); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("no channel: %v", err)
	}
	s := New(nil).WithChannel(&fakeUI{err: fmt.Errorf("dial: %w", client.ErrNoAgent)})
	if _, err := s.UIFind(ctx, "d", UIQuery{}); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("agent down: %v", err)
	}
	if _, err := s.UIFind(ViaQEMU(ctx), "d", UIQuery{}); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("via QEMU: %v", err)
	}
	// A real client whose desktop has no agent.
	s = New(nil).WithChannel(agenttest.ClientOf(t, agenttest.NoAgent{}))
	if _, err := s.UITree(ctx, "d", UIQuery{}); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("no agent in the desktop: %v", err)
	}
}
