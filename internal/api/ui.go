package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// UI reads and drives the accessibility tree (AT-SPI2) of desktops'
// sessions: what the applications say their windows hold, with roles,
// names, states and screen bounds, and their actions.
type UI interface {
	UITree(ctx context.Context, domain string, q guest.UIQuery) (*guest.UIResult, error)
	UIFind(ctx context.Context, domain string, q guest.UIQuery) (*guest.UIResult, error)
	UIAct(ctx context.Context, domain string, a guest.UIAction) (*guest.UIResult, error)
}

// uiHandlers serve a desktop's accessibility tree.
type uiHandlers struct {
	*core
	ui UI
}

func (s *uiHandlers) uiRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/ui", s.rateLimited(rateScreen, s.handle(s.tree)))
	v1.GET("/desktops/:id/ui/find", s.rateLimited(rateScreen, s.handle(s.find)))
	v1.POST("/desktops/:id/ui/:node", s.rateLimited(rateScreen, s.handle(s.act)))
}

var errNoUI = fmt.Errorf("this bureau does not read desktops' accessibility trees: %w", desktop.ErrUnavailable)

// uiNode is a node with, when the caller names its display, its bounds
// in that display's coordinates.
type uiNode struct {
	*guest.UINode
	DisplayBounds *computer.Rect `json:"display_bounds,omitempty"`
}

// uiNodes is the answer of the tree and find.
type uiNodes struct {
	Nodes     []uiNode       `json:"nodes"`
	Truncated bool           `json:"truncated"`
	Screen    computer.Size  `json:"screen"`
	Display   *computer.Size `json:"display,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// uiActed is the answer of an action.
type uiActed struct {
	Node      *uiNode        `json:"node"`
	Changed   bool           `json:"changed"`
	Gone      bool           `json:"gone"`
	Performed string         `json:"performed"`
	Screen    computer.Size  `json:"screen"`
	Display   *computer.Size `json:"display,omitempty"`
}

// tree answers the accessibility tree of what shows on the screen
// (?visible_only=false: all of it), parents first, filtered by window,
// app, role, name and states, bounded by depth and limit, from root.
func (s *uiHandlers) tree(c *gin.Context) (reply, error) {
	q, display, err := uiQuery(c, false)
	if err != nil {
		return reply{}, err
	}
	d, err := s.uiDesktop(c, "read the accessibility tree of")
	if err != nil {
		return reply{}, err
	}
	res, err := s.ui.UITree(c.Request.Context(), d.DomainName(), q)
	if err != nil {
		return reply{}, err
	}
	return uiList(res, display)
}

// find answers the nodes that match, flat; none is an empty list.
func (s *uiHandlers) find(c *gin.Context) (reply, error) {
	q, display, err := uiQuery(c, true)
	if err != nil {
		return reply{}, err
	}
	d, err := s.uiDesktop(c, "search the accessibility tree of")
	if err != nil {
		return reply{}, err
	}
	res, err := s.ui.UIFind(c.Request.Context(), d.DomainName(), q)
	if err != nil {
		return reply{}, err
	}
	return uiList(res, display)
}

// act does {"action", "value"} to a node and answers it read again, and
// whether it changed.
func (s *uiHandlers) act(c *gin.Context) (reply, error) {
	var body struct {
		Action    string `json:"action"`
		Value     string `json:"value"`
		TimeoutMS int    `json:"timeout_ms"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	display, err := displayQuery(c)
	if err != nil {
		return reply{}, err
	}
	d, err := s.uiDesktop(c, "act in the accessibility tree of")
	if err != nil {
		return reply{}, err
	}
	res, err := s.ui.UIAct(c.Request.Context(), d.DomainName(),
		guest.UIAction{Node: c.Param("node"), Action: body.Action, Value: body.Value, TimeoutMS: body.TimeoutMS})
	if err != nil {
		return reply{}, err
	}
	out := uiActed{Changed: res.Changed, Gone: res.Gone, Performed: res.Performed, Display: display,
		Screen: computer.Size{Width: res.Screen.Width, Height: res.Screen.Height}}
	if res.Node != nil {
		n, err := viewNode(res.Node, out.Screen, display)
		if err != nil {
			return reply{}, err
		}
		out.Node = &n
	}
	return reply{http.StatusOK, out}, nil
}

// uiDesktop is the caller's desktop, ready (its session is up).
func (s *uiHandlers) uiDesktop(c *gin.Context, op desktop.Op) (*desktop.Desktop, error) {
	d, err := s.ready(c, op)
	if err != nil {
		return nil, err
	}
	if s.ui == nil {
		return nil, errNoUI
	}
	return d, nil
}

func uiList(res *guest.UIResult, display *computer.Size) (reply, error) {
	out := uiNodes{Nodes: make([]uiNode, 0, len(res.Nodes)), Truncated: res.Truncated, Display: display, Warnings: res.Warnings,
		Screen: computer.Size{Width: res.Screen.Width, Height: res.Screen.Height}}
	for i := range res.Nodes {
		n, err := viewNode(&res.Nodes[i], out.Screen, display)
		if err != nil {
			return reply{}, err
		}
		out.Nodes = append(out.Nodes, n)
	}
	return reply{http.StatusOK, out}, nil
}

// viewNode adds a node's bounds in the caller's display.
func viewNode(n *guest.UINode, screen computer.Size, display *computer.Size) (uiNode, error) {
	v := uiNode{UINode: n}
	if display == nil || n.Bounds == nil || screen.Width == 0 || screen.Height == 0 {
		return v, nil
	}
	b := n.Bounds
	r, ok, err := computer.DisplayRect(computer.Rect{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height}, screen, display)
	if err != nil {
		return v, err
	}
	if ok {
		v.DisplayBounds = &r
	}
	return v, nil
}

// uiQuery reads the query string of the tree and find: window, app,
// role, name, states (comma-separated, "!" for absent), visible_only
// (default true), depth, limit (find: of matches), root, display,
// timeout_ms.
func uiQuery(c *gin.Context, find bool) (guest.UIQuery, *computer.Size, error) {
	q := guest.UIQuery{Window: c.Query("window"), App: c.Query("app"), Role: c.Query("role"), Name: c.Query("name")}
	for st := range strings.SplitSeq(c.Query("states"), ",") {
		if st = strings.TrimSpace(st); st != "" {
			q.States = append(q.States, st)
		}
	}
	visible := true
	if v := c.Query("visible_only"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return q, nil, &desktop.ValidationError{Field: "visible_only", Message: "must be true or false"}
		}
		visible = b
	}
	q.Hidden = !visible
	limit := 0
	for _, f := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"depth", &q.Depth, 1, guest.UIMaxDepth}, {"limit", &limit, 1, guest.UIMaxLimit}, {"timeout_ms", &q.TimeoutMS, 1, guest.UIMaxTimeoutMS}} {
		v := c.Query(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < f.min || n > f.max {
			return q, nil, &desktop.ValidationError{Field: f.name, Message: fmt.Sprintf("must be %d..%d", f.min, f.max)}
		}
		*f.dst = n
	}
	q.Root = c.Query("root")
	if find {
		q.Matches = limit
	} else {
		q.Limit = limit
	}
	display, err := displayQuery(c)
	return q, display, err
}
