package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// The accessibility tree's query, action and answer.
type (
	UIQuery  = wire.UIQuery
	UIAction = wire.UIAction
	UIResult = wire.UIResult
	UINode   = wire.UINode
)

// maxUIAnswer bounds an answer (a 5000-node tree is a few MiB).
const maxUIAnswer = 64 << 20

// UITree reads the desktop's accessibility tree.
func (c *Client) UITree(ctx context.Context, domain string, q UIQuery) (*UIResult, error) {
	return c.uiCall(ctx, domain, wire.Request{Op: wire.OpUITree, UI: &q})
}

// UIFind lists the nodes of the tree that match q.
func (c *Client) UIFind(ctx context.Context, domain string, q UIQuery) (*UIResult, error) {
	return c.uiCall(ctx, domain, wire.Request{Op: wire.OpUIFind, UI: &q})
}

// UIAct acts on one node and answers it read again.
func (c *Client) UIAct(ctx context.Context, domain string, a UIAction) (*UIResult, error) {
	return c.uiCall(ctx, domain, wire.Request{Op: wire.OpUIAct, UIAct: &a})
}

// uiCall sends a ui op; the agent accepts it at once and answers, when
// done, with a Response as JSON in data frames.
func (c *Client) uiCall(ctx context.Context, domain string, req wire.Request) (*UIResult, error) {
	st, resp, err := c.open(ctx, domain, req)
	if err != nil {
		if resp.Error != "" {
			return nil, uiError(req.Op, resp)
		}
		return nil, err
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	var buf bytes.Buffer
	if _, err := wire.ReceiveData(st, &limited{w: &buf, n: maxUIAnswer}); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("bureau-agent %s: %w", req.Op, err)
	}
	var answer wire.Response
	if err := json.Unmarshal(buf.Bytes(), &answer); err != nil {
		return nil, fmt.Errorf("bureau-agent %s: its answer: %w", req.Op, err)
	}
	if answer.Error != "" {
		return nil, uiError(req.Op, answer)
	}
	if answer.UI == nil {
		return nil, fmt.Errorf("bureau-agent %s answered nothing", req.Op)
	}
	return answer.UI, nil
}

// uiError turns a ui op's refusal into bureau's error kinds: a node that
// is gone, a session without its accessibility bus.
func uiError(op string, r wire.Response) error {
	switch r.Code {
	case wire.CodeGone:
		return fmt.Errorf("%s: %w", r.Error, desktop.ErrGone)
	case wire.CodeUnavailable:
		return fmt.Errorf("%s: %w", r.Error, desktop.ErrUnavailable)
	case wire.CodeNotFound:
		return fmt.Errorf("%s: %w", r.Error, desktop.ErrNotFound)
	case wire.CodeInvalid:
		field := "ui"
		if op == wire.OpUIAct {
			field = "action"
		}
		return &desktop.ValidationError{Field: field, Message: r.Error}
	}
	return fmt.Errorf("bureau-agent %s: %s", op, r.Error)
}

// limited takes at most n bytes, then fails.
type limited struct {
	w *bytes.Buffer
	n int
}

var errTooMuch = errors.New("the answer is over its limit")

func (l *limited) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, errTooMuch
	}
	return l.w.Write(p)
}
