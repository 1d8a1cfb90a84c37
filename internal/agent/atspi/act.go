package atspi

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// Actions bureau names itself; any other is one of the node's own.
const (
	ActClick    = "click"
	ActFocus    = "focus"
	ActSetValue = "set_value"
)

// clickActions are the AT-SPI actions a click does, in order of
// preference: toolkits name a widget's main action differently (GTK
// "click", Firefox "press", "jump" for a link, "check"/"uncheck" for a
// check box, "switch" for a tab).
var clickActions = []string{"click", "press", "activate", "jump", "check", "uncheck", "switch", "toggle"}

// settle: after an action the node is read again until it differs from
// before, for at most this long (toolkits often do an action in their
// next main-loop turn).
var settle = []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond}

// Act answers ui.act: it does the action and reads the node again.
func (d *Desktop) Act(ctx context.Context, a wire.UIAction) (*wire.UIResult, error) {
	if a.TimeoutMS < 0 || a.TimeoutMS > wire.UIMaxTimeout {
		return nil, invalid(fmt.Sprintf("timeout_ms must be 1..%d", wire.UIMaxTimeout))
	}
	timeout := time.Duration(a.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = wire.UIDefaultTimeout * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	o, err := decodeID(a.Node)
	if err != nil {
		return nil, err
	}
	before, err := d.fresh(ctx, o)
	if err != nil {
		return nil, err
	}
	performed, err := d.do(ctx, before, a)
	if err != nil {
		return nil, err
	}
	res := &wire.UIResult{Performed: performed, Screen: d.screen(ctx)}
	for _, wait := range settle {
		if err := sleep(ctx, wait); err != nil {
			break
		}
		after, err := d.reread(ctx, before)
		if errors.Is(err, errNoApp) || errors.Is(err, errNoObject) {
			res.Node, res.Changed, res.Gone = &before.node, true, true
			return res, nil
		}
		if err != nil {
			return nil, nodeError(o, err)
		}
		res.Node, res.Changed = &after.node, changed(&before.node, &after.node)
		if res.Changed {
			break
		}
	}
	return res, nil
}

// fresh reads a node asked for by id, with its place in the tree: one
// whose application or object went away, or that says it is defunct, is
// gone.
func (d *Desktop) fresh(ctx context.Context, o obj) (*read, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	if ok, err := d.b.hasOwner(cctx, o.bus); err == nil && !ok {
		return nil, nodeError(o, errNoApp)
	}
	at, err := d.startAt(ctx, o)
	if errors.Is(err, errSlow) && d.left(ctx, o) {
		// It did not answer because it was shutting down.
		return nil, nodeError(o, errNoApp)
	}
	if err != nil {
		return nil, err
	}
	r, err := readNode(cctx, d.b, o, nil)
	if errors.Is(err, errSlow) && d.left(ctx, o) {
		err = errNoApp
	}
	if err != nil {
		return nil, nodeError(o, err)
	}
	if slices.Contains(r.node.States, "defunct") {
		return nil, nodeError(o, errNoObject)
	}
	r.node.Parent, r.node.Depth, r.node.App = at[0].parent, at[0].depth, at[0].app
	return r, nil
}

// left says whether o's application has left the bus (asked within
// callWithin; an answer that does not come says no).
func (d *Desktop) left(ctx context.Context, o obj) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.callWithin)
	defer cancel()
	ok, err := d.b.hasOwner(ctx, o.bus)
	return err == nil && !ok
}

// reread reads a node again after an action; one that went away is
// errNoApp or errNoObject.
func (d *Desktop) reread(ctx context.Context, before *read) (*read, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	r, err := readNode(cctx, d.b, before.o, nil)
	if err != nil {
		return nil, err
	}
	if slices.Contains(r.node.States, "defunct") {
		return nil, errNoObject
	}
	r.node.Parent, r.node.Depth, r.node.App = before.node.Parent, before.node.Depth, before.node.App
	return r, nil
}

// do does a's action on r and names the AT-SPI action done.
func (d *Desktop) do(ctx context.Context, r *read, a wire.UIAction) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	n := &r.node
	switch a.Action {
	case "":
		return "", invalid(`give an action: "click", "focus", "set_value" or one of the node's own actions`)
	case ActFocus:
		if !r.implements(ifComponent) || !slices.Contains(n.States, "focusable") {
			return "", invalid(fmt.Sprintf("this %s cannot take the focus (not focusable)%s", n.Role, hint(r)))
		}
		var ok bool
		if err := d.b.call(cctx, r.o, ifComponent+".GrabFocus", nil, &ok); err != nil {
			return "", nodeError(r.o, err)
		}
		if !ok {
			return "", &Error{Code: wire.CodeFailed, Msg: "the application refused to give it the focus"}
		}
		return "grab_focus", nil
	case ActSetValue:
		if err := usable(r); err != nil {
			return "", err
		}
		return d.setValue(cctx, r, a.Value)
	}
	if a.Value != "" {
		return "", invalid("value goes with set_value only")
	}
	i := actionIndex(r.actions, a.Action)
	if a.Action == ActClick || a.Action == "press" && i < 0 {
		i = defaultAction(r.actions)
		if i < 0 {
			return "", invalid(fmt.Sprintf("this %s has no click action (%s)%s", n.Role, actionList(r.actions), coordinateHint(n)))
		}
	}
	if i < 0 {
		return "", invalid(fmt.Sprintf("this %s has no action %q (%s)", n.Role, a.Action, actionList(r.actions)))
	}
	if err := usable(r); err != nil {
		return "", err
	}
	var ok bool
	if err := d.b.call(cctx, r.o, ifAction+".DoAction", []any{int32(i)}, &ok); err != nil {
		return "", nodeError(r.o, err)
	}
	if !ok {
		return "", &Error{Code: wire.CodeFailed, Msg: fmt.Sprintf("the application refused the action %q", r.actions[i])}
	}
	return r.actions[i], nil
}

// setValue sets a text's content (EditableText) or a range's value
// (Value).
func (d *Desktop) setValue(ctx context.Context, r *read, value string) (string, error) {
	switch {
	case r.implements(ifEditable) && slices.Contains(r.node.States, "editable"):
		var ok bool
		if err := d.b.call(ctx, r.o, ifEditable+".SetTextContents", []any{value}, &ok); err != nil {
			return "", nodeError(r.o, err)
		}
		if !ok {
			return "", &Error{Code: wire.CodeFailed, Msg: "the application refused the text"}
		}
		return "set_text_contents", nil
	case r.implements(ifValue) && r.node.Value != nil:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return "", invalid(fmt.Sprintf("this %s takes a number from %g to %g, not %q", r.node.Role, r.node.Value.Min, r.node.Value.Max, value))
		}
		if f < r.node.Value.Min || f > r.node.Value.Max {
			return "", invalid(fmt.Sprintf("this %s takes a number from %g to %g", r.node.Role, r.node.Value.Min, r.node.Value.Max))
		}
		if err := d.b.setProp(ctx, r.o, ifValue, "CurrentValue", f); err != nil {
			return "", nodeError(r.o, err)
		}
		return "set_current_value", nil
	}
	return "", invalid(fmt.Sprintf("this %s has no value to set (no editable text, no range)%s", r.node.Role, hint(r)))
}

// usable refuses a node that says it is disabled: its application would
// ignore the action.
func usable(r *read) error {
	if r.o.path == rootPath || slices.Contains(r.node.States, "enabled") || slices.Contains(r.node.States, "sensitive") {
		return nil
	}
	return invalid(fmt.Sprintf("this %s is disabled (not enabled)", r.node.Role))
}

func actionIndex(actions []string, name string) int {
	return slices.IndexFunc(actions, func(a string) bool { return strings.EqualFold(a, name) })
}

// defaultAction is the index of the action a click does, or -1.
func defaultAction(actions []string) int {
	for _, want := range clickActions {
		if i := actionIndex(actions, want); i >= 0 {
			return i
		}
	}
	return -1
}

func actionList(actions []string) string {
	if len(actions) == 0 {
		return "it has no actions"
	}
	return "its actions: " + strings.Join(actions, ", ")
}

func hint(r *read) string {
	if len(r.actions) > 0 {
		return "; " + actionList(r.actions)
	}
	return ""
}

// coordinateHint points at a click by coordinates instead.
func coordinateHint(n *wire.UINode) string {
	if n.Bounds == nil {
		return "; it has no place on the screen either"
	}
	b := n.Bounds
	return fmt.Sprintf("; click it by coordinates instead (POST …/computer), at its middle (%d, %d) in screen pixels", b.X+b.Width/2, b.Y+b.Height/2)
}

// changed: what an action may change differs (states, focus among them,
// value, text, name).
func changed(a, b *wire.UINode) bool {
	return !slices.Equal(a.States, b.States) || !reflect.DeepEqual(a.Value, b.Value) ||
		!reflect.DeepEqual(a.Text, b.Text) || a.Name != b.Name
}

func sleep(ctx context.Context, d time.Duration) error {
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
