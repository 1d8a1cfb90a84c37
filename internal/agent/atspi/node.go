package atspi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/agent/wire"
)

// maxWalked bounds the children of one node a walk looks at (a list of a
// hundred thousand rows is not read row by row).
const maxWalked = wire.UIMaxLimit

// childRef is how AT-SPI2 names an object: (so).
type childRef struct {
	Bus  string
	Path string
}

// read is one node as read from the bus, with what the walk and actions
// need besides the wire node.
type read struct {
	node wire.UINode
	o    obj
	kids []obj
	// ifaces are the interfaces it implements; actions its actions'
	// names in AT-SPI's order (DoAction takes the index).
	ifaces  []string
	actions []string
}

func (r *read) implements(iface string) bool { return slices.Contains(r.ifaces, iface) }

// readState reads a node's states only: a walk that skips what is not
// showing looks at them before anything else.
func readState(ctx context.Context, b bus, o obj) ([]string, error) {
	var words []uint32
	if err := b.call(ctx, o, ifAccessible+".GetState", nil, &words); err != nil {
		return nil, err
	}
	return decodeStates(words), nil
}

// readNode reads everything the API shows of o. states, when not nil, are
// its states read just before.
func readNode(ctx context.Context, b bus, o obj, states []string) (*read, error) {
	r := &read{o: o}
	n := &r.node
	n.ID = encodeID(o)
	var err error
	if states == nil {
		if states, err = readState(ctx, b, o); err != nil {
			return nil, err
		}
	}
	n.States = states
	if err := b.call(ctx, o, ifAccessible+".GetRoleName", nil, &n.Role); err != nil {
		return nil, err
	}
	p, err := b.props(ctx, o, ifAccessible)
	if err != nil {
		return nil, err
	}
	n.Name, _ = p["Name"].(string)
	n.Description, _ = p["Description"].(string)
	count, _ := p["ChildCount"].(int32)
	if err := b.call(ctx, o, ifAccessible+".GetInterfaces", nil, &r.ifaces); err != nil {
		return nil, err
	}
	if r.implements(ifComponent) {
		if n.Bounds, err = readBounds(ctx, b, o); err != nil {
			return nil, err
		}
	}
	if r.implements(ifAction) {
		if r.actions, err = readActions(ctx, b, o); err != nil {
			return nil, err
		}
	}
	n.Actions = append([]string{}, r.actions...)
	if r.implements(ifValue) {
		if n.Value, err = readValue(ctx, b, o); err != nil {
			return nil, err
		}
	}
	if r.implements(ifText) && showsText(n.Role, n.States) {
		if err := readText(ctx, b, o, n); err != nil {
			return nil, err
		}
	}
	n.Children = []string{}
	if count > 0 {
		var kids []childRef
		if err := b.call(ctx, o, ifAccessible+".GetChildren", nil, &kids); err != nil {
			return nil, err
		}
		n.ChildCount = len(kids)
		for i, k := range kids[:min(len(kids), maxWalked)] {
			c := obj{bus: k.Bus, path: k.Path}
			if c.bus == "" {
				c.bus = o.bus
			}
			r.kids = append(r.kids, c)
			if i < wire.UIMaxChildren {
				n.Children = append(n.Children, encodeID(c))
			}
		}
	}
	return r, nil
}

// readBounds is the object's extents on the screen (coordinate type 0);
// an object that says it has no size has none.
func readBounds(ctx context.Context, b bus, o obj) (*wire.UIRect, error) {
	var e struct{ X, Y, W, H int32 }
	if err := b.call(ctx, o, ifComponent+".GetExtents", []any{uint32(0)}, &e); err != nil {
		if errors.Is(err, errNoInterface) {
			return nil, nil
		}
		return nil, err
	}
	if e.W <= 0 || e.H <= 0 {
		return nil, nil
	}
	return &wire.UIRect{X: int(e.X), Y: int(e.Y), Width: int(e.W), Height: int(e.H)}, nil
}

// readActions lists the object's action names: GetName's, which are the
// toolkit's own ("click"), not GetActions' (translated, "Click").
func readActions(ctx context.Context, b bus, o obj) ([]string, error) {
	p, err := b.props(ctx, o, ifAction)
	if err != nil {
		if errors.Is(err, errNoInterface) {
			return nil, nil
		}
		return nil, err
	}
	count, _ := p["NActions"].(int32)
	var names []string
	for i := range min(count, 32) {
		var name string
		if err := b.call(ctx, o, ifAction+".GetName", []any{i}, &name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

func readValue(ctx context.Context, b bus, o obj) (*wire.UIValue, error) {
	p, err := b.props(ctx, o, ifValue)
	if err != nil {
		if errors.Is(err, errNoInterface) {
			return nil, nil
		}
		return nil, err
	}
	v := &wire.UIValue{}
	v.Current, _ = p["CurrentValue"].(float64)
	v.Min, _ = p["MinimumValue"].(float64)
	v.Max, _ = p["MaximumValue"].(float64)
	return v, nil
}

// textRoles are roles whose text is their content (a label's or a
// button's text is its name already).
var textRoles = map[string]bool{
	"text": true, "entry": true, "paragraph": true, "heading": true, "terminal": true,
	"document text": true, "static": true, "caption": true, "editbar": true, "block quote": true,
}

// showsText: the node's text is worth answering, and may be answered (a
// password's never is).
func showsText(role string, states []string) bool {
	if role == "password text" {
		return false
	}
	return textRoles[role] || slices.Contains(states, "editable")
}

func readText(ctx context.Context, b bus, o obj, n *wire.UINode) error {
	p, err := b.props(ctx, o, ifText)
	if err != nil {
		if errors.Is(err, errNoInterface) {
			return nil
		}
		return err
	}
	count, _ := p["CharacterCount"].(int32)
	end := min(count, wire.UIMaxText)
	var s string
	if err := b.call(ctx, o, ifText+".GetText", []any{int32(0), end}, &s); err != nil {
		if errors.Is(err, errNoInterface) {
			return nil
		}
		return err
	}
	// U+FFFC stands for an embedded child (a link in a paragraph), which
	// is a node of its own.
	s = strings.ReplaceAll(s, "\ufffc", "")
	if utf8.RuneCountInString(s) > wire.UIMaxText {
		s = string([]rune(s)[:wire.UIMaxText])
	}
	n.Text = &s
	n.TextTruncated = count > wire.UIMaxText
	return nil
}
