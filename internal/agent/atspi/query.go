package atspi

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// Defaults of ui.find, which looks deeper and wider than a tree shows.
const (
	findDefaultMatches = 100
)

// query is a wire.UIQuery checked, with its defaults filled in.
type query struct {
	wire.UIQuery
	roles   []string
	name    string
	window  string
	app     string
	states  []stateWant
	root    *obj
	timeout time.Duration
}

type stateWant struct {
	index int
	set   bool
}

// parseQuery checks q. A find walks deeper and wider by default.
func parseQuery(q wire.UIQuery, find bool) (*query, error) {
	p := &query{UIQuery: q, name: fold(q.Name), window: fold(q.Window), app: fold(q.App)}
	switch {
	case q.Depth < 0 || q.Depth > wire.UIMaxDepth:
		return nil, invalid(fmt.Sprintf("depth must be 1..%d", wire.UIMaxDepth))
	case q.Limit < 0 || q.Limit > wire.UIMaxLimit:
		return nil, invalid(fmt.Sprintf("limit must be 1..%d", wire.UIMaxLimit))
	case q.Matches < 0 || q.Matches > wire.UIMaxLimit:
		return nil, invalid(fmt.Sprintf("the matches asked for must be 1..%d", wire.UIMaxLimit))
	case q.TimeoutMS < 0 || q.TimeoutMS > wire.UIMaxTimeout:
		return nil, invalid(fmt.Sprintf("timeout_ms must be 1..%d", wire.UIMaxTimeout))
	}
	if p.Depth == 0 {
		p.Depth = wire.UIDefaultDepth
		if find {
			p.Depth = wire.UIMaxDepth
		}
	}
	if p.Limit == 0 {
		p.Limit = wire.UIDefaultLimit
		if find {
			p.Limit = wire.UIMaxLimit
		}
	}
	if p.Matches == 0 {
		p.Matches = findDefaultMatches
	}
	p.timeout = time.Duration(q.TimeoutMS) * time.Millisecond
	if p.timeout == 0 {
		p.timeout = wire.UIDefaultTimeout * time.Millisecond
	}
	for r := range strings.SplitSeq(q.Role, ",") {
		if r = normRole(r); r != "" {
			p.roles = append(p.roles, r)
		}
	}
	for _, s := range q.States {
		want := stateWant{set: true}
		name, neg := strings.CutPrefix(strings.TrimSpace(s), "!")
		if name == "" {
			continue
		}
		want.set = !neg
		if want.index = stateIndex(name); want.index < 0 {
			return nil, invalid(fmt.Sprintf("unknown state %q; states are %s", name, strings.Join(stateNames[1:], ", ")))
		}
		p.states = append(p.states, want)
	}
	if q.Root != "" {
		if q.Window != "" || q.App != "" {
			return nil, invalid("give root, or window and app, not both")
		}
		o, err := decodeID(q.Root)
		if err != nil {
			return nil, err
		}
		p.root = &o
	}
	return p, nil
}

// filtered: the query picks some nodes (tree answers those and their
// ancestors).
func (q *query) filtered() bool { return len(q.roles) > 0 || q.name != "" || len(q.states) > 0 }

// matches says whether n is one of the nodes the query picks.
func (q *query) matches(n *wire.UINode) bool {
	if len(q.roles) > 0 && !slices.ContainsFunc(q.roles, func(r string) bool { return roleMatches(n.Role, r) }) {
		return false
	}
	if q.name != "" && !strings.Contains(fold(n.Name), q.name) {
		return false
	}
	for _, w := range q.states {
		if slices.Contains(n.States, stateNames[w.index]) != w.set {
			return false
		}
	}
	return true
}

// roleMatches: a role asked for matches the role itself or its last word
// ("button" matches "push button" and "toggle button").
func roleMatches(role, want string) bool {
	role = normRole(role)
	return role == want || strings.HasSuffix(role, " "+want)
}

func normRole(r string) string {
	r = strings.NewReplacer("_", " ", "-", " ").Replace(fold(r))
	return strings.Join(strings.Fields(r), " ")
}

func fold(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
