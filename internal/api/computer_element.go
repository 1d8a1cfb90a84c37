package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// elementQuery is an element named by what it is rather than its id.
type elementQuery struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	App    string `json:"app"`
	Window string `json:"window"`
}

// elementAt is an action's element, resolved: the node and where in the
// request's display the action goes.
type elementAt struct {
	index int
	node  guest.UINode
}

// invalidElement is a 422 about action i's element.
func invalidElement(i, n int, msg string) error {
	field := "element"
	if n > 1 {
		field = fmt.Sprintf("actions[%d].element", i)
	}
	return &desktop.ValidationError{Field: field, Message: msg}
}

// resolveElements turns each action's element into the coordinate of the
// middle of its node's bounds in the request's display, and answers the
// nodes so what became of them can be told after the actions ran. A node
// id that is no longer there is a 410; a query matching no node showing
// on the screen a 422.
func (s *computerHandlers) resolveElements(ctx context.Context, domain string, req *computer.Request) ([]elementAt, error) {
	actions := req.Actions
	if len(actions) == 0 {
		actions = []computer.Action{req.Action}
	}
	var out []elementAt
	for i := range actions {
		a := &actions[i]
		if len(a.Element) == 0 {
			continue
		}
		name := a.Action + a.Type
		switch {
		case !computer.ElementActions[name]:
			return nil, invalidElement(i, len(actions), fmt.Sprintf("%s does not act at a point; element goes with the clicks, moves and scrolls", name))
		case len(a.Coordinate) > 0 || a.X != nil || a.Y != nil:
			return nil, invalidElement(i, len(actions), "give an element or a coordinate, not both")
		case s.ui == nil:
			return nil, errNoUI
		}
		node, screen, err := s.findElement(ctx, domain, a.Element)
		if err != nil {
			var ve *desktop.ValidationError
			if errors.As(err, &ve) && ve.Field == "element" {
				return nil, invalidElement(i, len(actions), ve.Message)
			}
			return nil, err
		}
		if node.Bounds == nil || node.Bounds.Width <= 0 || node.Bounds.Height <= 0 {
			return nil, invalidElement(i, len(actions), fmt.Sprintf("%s %q has no bounds on the screen to act at", node.Role, node.Name))
		}
		b := node.Bounds
		r, ok, err := computer.DisplayRect(computer.Rect{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height}, screen, req.Display)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, invalidElement(i, len(actions), fmt.Sprintf("%s %q is off the screen", node.Role, node.Name))
		}
		x, y := r.X+r.Width/2, r.Y+r.Height/2
		if a.Action != "" {
			a.Coordinate = []int{x, y}
		} else {
			a.X, a.Y = &x, &y
		}
		a.Element = nil
		out = append(out, elementAt{index: i, node: node})
	}
	if len(req.Actions) == 0 {
		req.Action = actions[0]
	}
	return out, nil
}

// findElement reads the node an element names: by id (a JSON string) or
// the first match of a query among the nodes showing.
func (s *computerHandlers) findElement(ctx context.Context, domain string, raw json.RawMessage) (guest.UINode, computer.Size, error) {
	var id string
	if err := json.Unmarshal(raw, &id); err == nil {
		if strings.TrimSpace(id) == "" {
			return guest.UINode{}, computer.Size{}, &desktop.ValidationError{Field: "element", Message: "an empty node id"}
		}
		return s.nodeByID(ctx, domain, id)
	}
	var q elementQuery
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return guest.UINode{}, computer.Size{}, &desktop.ValidationError{Field: "element",
			Message: `give a node id from GET /ui, or a query {"role", "name", "app", "window"}: ` + err.Error()}
	}
	if q == (elementQuery{}) {
		return guest.UINode{}, computer.Size{}, &desktop.ValidationError{Field: "element", Message: "an empty query: give role, name, app or window"}
	}
	res, err := s.ui.UIFind(ctx, domain, guest.UIQuery{Role: q.Role, Name: q.Name, App: q.App, Window: q.Window, States: []string{"showing"}, Matches: 20})
	if err != nil {
		return guest.UINode{}, computer.Size{}, err
	}
	screen := computer.Size{Width: res.Screen.Width, Height: res.Screen.Height}
	for _, n := range res.Nodes {
		if n.Bounds != nil && n.Bounds.Width > 0 && n.Bounds.Height > 0 {
			return n, screen, nil
		}
	}
	return guest.UINode{}, screen, &desktop.ValidationError{Field: "element", Message: fmt.Sprintf("no element showing on the screen matches %s", describeQuery(q))}
}

func describeQuery(q elementQuery) string {
	var parts []string
	for _, kv := range [][2]string{{"role", q.Role}, {"name", q.Name}, {"app", q.App}, {"window", q.Window}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%s %q", kv[0], kv[1]))
		}
	}
	return strings.Join(parts, ", ")
}

// nodeByID reads one node (the root of a walk one level deep). A node
// gone is the UI service's 410.
func (s *computerHandlers) nodeByID(ctx context.Context, domain, id string) (guest.UINode, computer.Size, error) {
	res, err := s.ui.UITree(ctx, domain, guest.UIQuery{Root: id, Depth: 1, Hidden: true, Limit: 1})
	if err != nil {
		return guest.UINode{}, computer.Size{}, err
	}
	screen := computer.Size{Width: res.Screen.Width, Height: res.Screen.Height}
	for _, n := range res.Nodes {
		if n.ID == id {
			return n, screen, nil
		}
	}
	return guest.UINode{}, screen, fmt.Errorf("node %s: %w", id, desktop.ErrGone)
}

// elementResults tells each action that named an element what became of
// its node: read again, its states compared with before.
func (s *computerHandlers) elementResults(ctx context.Context, domain string, res *computer.Result, els []elementAt) {
	for _, e := range els {
		if e.index >= len(res.Results) {
			continue
		}
		out := &computer.ElementResult{ID: e.node.ID, Role: e.node.Role, Name: e.node.Name}
		after, _, err := s.nodeByID(ctx, domain, e.node.ID)
		switch {
		case err == nil:
			out.Changed = !slices.Equal(sortedStates(e.node.States), sortedStates(after.States))
		case errors.Is(err, desktop.ErrGone):
			out.Changed, out.Gone = true, true
		}
		res.Results[e.index].Element = out
	}
}

func sortedStates(st []string) []string {
	out := slices.Clone(st)
	slices.Sort(out)
	return out
}
