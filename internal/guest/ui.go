package guest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// The accessibility tree (AT-SPI2) of a desktop's session: its query,
// action and answer (see internal/agent/wire/ui.go).
type (
	UIQuery  = client.UIQuery
	UIAction = client.UIAction
	UIResult = client.UIResult
	UINode   = client.UINode
	UIRect   = wire.UIRect
)

// Bounds of a UI query.
const (
	UIDefaultDepth = wire.UIDefaultDepth
	UIMaxDepth     = wire.UIMaxDepth
	UIDefaultLimit = wire.UIDefaultLimit
	UIMaxLimit     = wire.UIMaxLimit
	UIMaxTimeoutMS = wire.UIMaxTimeout
	maxUIValue     = 64 << 10
)

// UIChannel is the part of bureau-agent that reads and drives the
// accessibility tree; QEMU's guest agent cannot.
type UIChannel interface {
	UITree(ctx context.Context, domain string, q client.UIQuery) (*client.UIResult, error)
	UIFind(ctx context.Context, domain string, q client.UIQuery) (*client.UIResult, error)
	UIAct(ctx context.Context, domain string, a client.UIAction) (*client.UIResult, error)
}

// UITree reads the desktop's accessibility tree as its user sees it.
func (s *Session) UITree(ctx context.Context, domain string, q UIQuery) (*UIResult, error) {
	ui, err := s.uiChannel(ctx, q.TimeoutMS)
	if err != nil {
		return nil, err
	}
	if err := validUIQuery(q); err != nil {
		return nil, err
	}
	q.User = s.x.User
	return uiAnswer(ui.UITree(ctx, domain, q))
}

// UIFind lists the nodes of the tree that match q (none is no error).
func (s *Session) UIFind(ctx context.Context, domain string, q UIQuery) (*UIResult, error) {
	ui, err := s.uiChannel(ctx, q.TimeoutMS)
	if err != nil {
		return nil, err
	}
	if err := validUIQuery(q); err != nil {
		return nil, err
	}
	if q.Matches < 0 || q.Matches > UIMaxLimit {
		return nil, invalid("limit", fmt.Sprintf("must be 1..%d", UIMaxLimit))
	}
	q.User = s.x.User
	return uiAnswer(ui.UIFind(ctx, domain, q))
}

// UIAct does an action on one node of the tree and answers the node
// read again.
func (s *Session) UIAct(ctx context.Context, domain string, a UIAction) (*UIResult, error) {
	ui, err := s.uiChannel(ctx, a.TimeoutMS)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.TrimSpace(a.Action) == "":
		return nil, invalid("action", `give an action: "click", "focus", "set_value" or one of the node's own actions`)
	case len(a.Value) > maxUIValue:
		return nil, invalid("value", fmt.Sprintf("at most %d bytes", maxUIValue))
	case a.Value != "" && a.Action != "set_value":
		return nil, invalid("value", "value goes with the action set_value only")
	}
	a.User = s.x.User
	return uiAnswer(ui.UIAct(ctx, domain, a))
}

// uiChannel is bureau-agent's part that reads the tree, or why there is
// none.
func (s *Session) uiChannel(ctx context.Context, timeoutMS int) (UIChannel, error) {
	if timeoutMS < 0 || timeoutMS > UIMaxTimeoutMS {
		return nil, invalid("timeout_ms", fmt.Sprintf("must be 1..%d", UIMaxTimeoutMS))
	}
	ui, ok := s.x.channel(ctx).(UIChannel)
	if !ok {
		return nil, fmt.Errorf("the accessibility tree is read by bureau-agent, which this call does not use: %w", desktop.ErrUnavailable)
	}
	return ui, nil
}

func validUIQuery(q UIQuery) error {
	switch {
	case q.Depth < 0 || q.Depth > UIMaxDepth:
		return invalid("depth", fmt.Sprintf("must be 1..%d", UIMaxDepth))
	case q.Limit < 0 || q.Limit > UIMaxLimit:
		return invalid("limit", fmt.Sprintf("must be 1..%d", UIMaxLimit))
	case q.Root != "" && (q.Window != "" || q.App != ""):
		return invalid("root", "give root, or window and app, not both")
	}
	return nil
}

// uiAnswer says a missing bureau-agent in the desktop's words.
func uiAnswer(res *UIResult, err error) (*UIResult, error) {
	if noAgent(err) {
		return nil, fmt.Errorf("the accessibility tree is read by bureau-agent, which does not answer: %v: %w", err, desktop.ErrUnavailable)
	}
	return res, err
}
