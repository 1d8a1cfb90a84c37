package atspi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/godbus/dbus/v5"
)

// Desktop is one session's accessibility bus.
type Desktop struct {
	b bus
	// callWithin bounds one call to one application: one that does not
	// answer is left out of the rest of the walk (and named in its
	// warnings) instead of eating the whole call's time.
	callWithin time.Duration
	// parallel is how many nodes are read at once (the bus carries the
	// calls side by side; each application answers its own in turn).
	parallel int
}

// New reads the accessibility bus c is connected to.
func New(c *dbus.Conn) *Desktop { return newDesktop(dbusBus{c}) }

func newDesktop(b bus) *Desktop { return &Desktop{b: b, callWithin: 3 * time.Second, parallel: 16} }

// Tree answers ui.tree: the nodes under the applications (or q.Root),
// parents before children, pruned to those the filters pick and their
// ancestors.
func (d *Desktop) Tree(ctx context.Context, q wire.UIQuery) (*wire.UIResult, error) {
	p, err := parseQuery(q, false)
	if err != nil {
		return nil, err
	}
	w, err := d.walk(ctx, p)
	if err != nil {
		return nil, err
	}
	nodes := w.nodes
	if p.filtered() {
		nodes = withAncestors(nodes, p)
	}
	return &wire.UIResult{Nodes: nodes, Truncated: w.truncated, Screen: d.screen(ctx), Warnings: w.warnings}, nil
}

// Find answers ui.find: the nodes the filters pick, flat, at most
// q.Matches of them.
func (d *Desktop) Find(ctx context.Context, q wire.UIQuery) (*wire.UIResult, error) {
	p, err := parseQuery(q, true)
	if err != nil {
		return nil, err
	}
	w, err := d.walk(ctx, p)
	if err != nil {
		return nil, err
	}
	res := &wire.UIResult{Nodes: []wire.UINode{}, Truncated: w.truncated, Screen: d.screen(ctx), Warnings: w.warnings}
	for i := range w.nodes {
		if !p.matches(&w.nodes[i]) {
			continue
		}
		if len(res.Nodes) == p.Matches {
			res.Truncated = true
			break
		}
		res.Nodes = append(res.Nodes, w.nodes[i])
	}
	return res, nil
}

// screen is the desktop's size: the extents of the registry's root.
func (d *Desktop) screen(ctx context.Context) wire.UISize {
	ctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	r, err := readBounds(ctx, d.b, obj{bus: registryName, path: rootPath})
	if err != nil || r == nil {
		return wire.UISize{}
	}
	return wire.UISize{Width: r.X + r.Width, Height: r.Y + r.Height}
}

// pending is a node the walk is to read.
type pending struct {
	o      obj
	parent string
	// depth is the node's own (0: an application); below counts from
	// where the walk started.
	depth, below int
	app          string
	// order is its place in the tree (child indices from the top), for
	// answering nodes parents first, in the order the tree has them.
	order []int
	// inWindow: an ancestor already passed the window filter.
	inWindow bool
}

// walked is what a walk saw.
type walked struct {
	nodes     []wire.UINode
	truncated bool
	warnings  []string
}

// walk reads the tree breadth first, a level at a time, so a limit
// leaves the deepest nodes out rather than whole applications; the nodes
// are answered in the tree's own order.
func (d *Desktop) walk(ctx context.Context, q *query) (*walked, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	level, err := d.start(ctx, q)
	if err != nil {
		return nil, err
	}
	st := &walkState{d: d, q: q, slow: map[string]bool{}}
	type kept struct {
		r     *read
		order []int
	}
	// all are the nodes kept, level by level; counted leaves applications
	// out: they take no room until they are answered (see below).
	var all []kept
	counted := 0
	for stop := false; len(level) > 0 && !stop; {
		var next []pending
		for len(level) > 0 {
			if ctx.Err() != nil {
				stop = true
				break
			}
			room := q.Limit - counted
			if room == 0 {
				st.truncated, stop = true, true
				break
			}
			chunk := level[:min(room, len(level))]
			level = level[len(chunk):]
			for i, r := range st.readLevel(ctx, chunk) {
				if r == nil {
					continue
				}
				p := chunk[i]
				all = append(all, kept{r, p.order})
				if p.o.path != rootPath || q.root != nil {
					counted++
				}
				if p.below >= q.Depth {
					continue
				}
				inWindow := p.inWindow || p.depth == 0 && q.window != "" && strings.Contains(fold(r.node.Name), q.window)
				for j, k := range r.kids {
					next = append(next, pending{o: k, parent: r.node.ID, depth: p.depth + 1, below: p.below + 1,
						app: r.node.App, order: append(slices.Clip(p.order), j), inWindow: inWindow})
				}
			}
		}
		level = next
	}
	if ctx.Err() != nil { // nodes read after it are left out
		st.truncated = true
		st.warn(fmt.Sprintf("the walk stopped after %s (timeout_ms): nodes deeper or later are left out", q.timeout))
	}
	w := &walked{truncated: st.truncated, warnings: st.warnings}
	for _, k := range all {
		w.nodes = append(w.nodes, k.r.node)
	}
	// Applications with nothing to show go; the others take room from the
	// deepest nodes (ancestors come before descendants level by level, so
	// cutting the end keeps every node's parent).
	prune := q.root == nil && (!q.Hidden || q.window != "")
	if prune {
		w.nodes = dropEmptyApps(w.nodes)
	}
	if len(w.nodes) > q.Limit {
		w.nodes, w.truncated = w.nodes[:q.Limit], true
		if prune {
			w.nodes = dropEmptyApps(w.nodes)
		}
	}
	listAnswered(w.nodes)
	place := make(map[string][]int, len(all))
	for _, k := range all {
		place[k.r.node.ID] = k.order
	}
	slices.SortStableFunc(w.nodes, func(a, b wire.UINode) int { return slices.Compare(place[a.ID], place[b.ID]) })
	return w, nil
}

// start is the walk's first level: the applications the registry lists
// (those q.App names), or q.Root with its place in the tree.
func (d *Desktop) start(ctx context.Context, q *query) ([]pending, error) {
	if q.root != nil {
		return d.startAt(ctx, *q.root)
	}
	var apps []childRef
	cctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	if err := d.b.call(cctx, obj{bus: registryName, path: rootPath}, ifAccessible+".GetChildren", nil, &apps); err != nil {
		return nil, &Error{Code: wire.CodeUnavailable, Msg: "the accessibility registry does not answer: " + err.Error()}
	}
	var level []pending
	for i, a := range apps {
		level = append(level, pending{o: obj{bus: a.Bus, path: a.Path}, order: []int{i}})
	}
	return level, nil
}

// startAt places a node in the tree: its parent, depth and application,
// read by going up its parents.
func (d *Desktop) startAt(ctx context.Context, o obj) ([]pending, error) {
	ctx, cancel := context.WithTimeout(ctx, d.callWithin)
	defer cancel()
	p := pending{o: o}
	cur := o
	for i := 0; cur.path != rootPath; i++ {
		if i > wire.UIMaxDepth*4 {
			return nil, &Error{Code: wire.CodeFailed, Msg: "the node's parents do not end at its application"}
		}
		props, err := d.b.props(ctx, cur, ifAccessible)
		if err != nil {
			return nil, nodeError(o, err)
		}
		var parent childRef
		if v, ok := props["Parent"].([]any); ok {
			if err := dbus.Store(v, &parent.Bus, &parent.Path); err != nil {
				return nil, &Error{Code: wire.CodeFailed, Msg: "the node's parent: " + err.Error()}
			}
		}
		if parent.Path == "" || parent.Path == nullPath {
			break // a node outside its application's tree
		}
		if i == 0 {
			p.parent = encodeID(obj{bus: parent.Bus, path: parent.Path})
		}
		cur = obj{bus: parent.Bus, path: parent.Path}
		p.depth++
	}
	props, err := d.b.props(ctx, obj{bus: o.bus, path: rootPath}, ifAccessible)
	if err != nil {
		return nil, nodeError(o, err)
	}
	p.app, _ = props["Name"].(string)
	if o.path == rootPath {
		p.parent = ""
	}
	return []pending{p}, nil
}

// nodeError: the node asked for by id is gone, or the bus failed.
func nodeError(o obj, err error) error {
	if errors.Is(err, errNoApp) {
		return gone(fmt.Sprintf("node %s is gone: its application (%s) left the desktop", encodeID(o), o.bus))
	}
	if errors.Is(err, errNoObject) {
		return gone(fmt.Sprintf("node %s is gone: its application no longer has it", encodeID(o)))
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: wire.CodeFailed, Msg: err.Error(), cause: err}
}

// walkState is a walk under way.
type walkState struct {
	d         *Desktop
	q         *query
	truncated bool
	mu        sync.Mutex
	slow      map[string]bool
	warnings  []string
}

func (st *walkState) warn(msg string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.warnings = append(st.warnings, msg)
}

// readLevel reads a level's nodes side by side; a node left out (not
// showing, outside the window asked for, gone meanwhile, or of an
// application that did not answer) is nil.
func (st *walkState) readLevel(ctx context.Context, level []pending) []*read {
	out := make([]*read, len(level))
	sem := make(chan struct{}, max(st.d.parallel, 1))
	var wg sync.WaitGroup
	for i, p := range level {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = st.visit(ctx, p)
		})
	}
	wg.Wait()
	return out
}

// visit reads one node, or leaves it (and so its subtree) out.
func (st *walkState) visit(ctx context.Context, p pending) *read {
	st.mu.Lock()
	slow := st.slow[p.o.bus]
	st.mu.Unlock()
	if slow || ctx.Err() != nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, st.d.callWithin)
	defer cancel()
	var states []string
	var err error
	if p.depth > 0 { // applications have no states of their own
		if states, err = readState(cctx, st.d.b, p.o); err != nil {
			st.failed(ctx, p, err)
			return nil
		}
		if slices.Contains(states, "defunct") || !st.q.Hidden && !slices.Contains(states, "showing") {
			return nil
		}
	}
	r, err := readNode(cctx, st.d.b, p.o, states)
	if err != nil {
		st.failed(ctx, p, err)
		return nil
	}
	n := &r.node
	n.Parent, n.Depth, n.App = p.parent, p.depth, p.app
	if p.o.path == rootPath {
		n.App = n.Name
		if st.q.app != "" && !strings.Contains(fold(n.Name), st.q.app) {
			return nil
		}
	}
	if p.depth == 1 && st.q.window != "" && !p.inWindow && !strings.Contains(fold(n.Name), st.q.window) {
		return nil
	}
	return r
}

// failed notes why a node was left out: a node that went away meanwhile
// is no news, an application that does not answer is left out of the
// rest of the walk.
func (st *walkState) failed(ctx context.Context, p pending, err error) {
	switch {
	case errors.Is(err, errNoApp), errors.Is(err, errNoObject):
	case errors.Is(err, errSlow) && ctx.Err() == nil:
		st.mu.Lock()
		first := !st.slow[p.o.bus]
		st.slow[p.o.bus] = true
		st.mu.Unlock()
		if first {
			st.warn(fmt.Sprintf("application %q (%s) did not answer within %s: left out", p.app, p.o.bus, st.d.callWithin))
		}
	case errors.Is(err, errSlow):
	default:
		st.warn(fmt.Sprintf("node %s of %q: %v", encodeID(p.o), p.app, err))
	}
}

// listAnswered gives a node with more children than it lists the ids of
// those answered instead: which of its first UIMaxChildren were is no
// help when what shows is further down (GTK lists a grid's children last
// added first).
func listAnswered(nodes []wire.UINode) {
	capped := map[string]int{}
	for i, n := range nodes {
		if n.ChildCount > len(n.Children) {
			capped[n.ID] = i
			nodes[i].Children = []string{}
		}
	}
	if len(capped) == 0 {
		return
	}
	for _, n := range nodes {
		if i, ok := capped[n.Parent]; ok && len(nodes[i].Children) < wire.UIMaxChildren {
			nodes[i].Children = append(nodes[i].Children, n.ID)
		}
	}
}

// dropEmptyApps leaves out applications none of whose windows are left.
func dropEmptyApps(nodes []wire.UINode) []wire.UINode {
	hasChild := map[string]bool{}
	for _, n := range nodes {
		hasChild[n.Parent] = true
	}
	return slices.DeleteFunc(nodes, func(n wire.UINode) bool { return n.Depth == 0 && n.Parent == "" && !hasChild[n.ID] })
}

// withAncestors keeps the nodes q picks and the ancestors that join them
// to the top, in the order given.
func withAncestors(nodes []wire.UINode, q *query) []wire.UINode {
	parent := make(map[string]string, len(nodes))
	for _, n := range nodes {
		parent[n.ID] = n.Parent
	}
	keep := map[string]bool{}
	for i := range nodes {
		if !q.matches(&nodes[i]) {
			continue
		}
		for id := nodes[i].ID; id != "" && !keep[id]; id = parent[id] {
			keep[id] = true
		}
	}
	out := []wire.UINode{}
	for _, n := range nodes {
		if keep[n.ID] {
			out = append(out, n)
		}
	}
	return out
}
