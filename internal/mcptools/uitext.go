package mcptools

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/computer"
)

// UINodeList is the API's answer of GET /ui and /ui/find, as far as
// its text form (WriteUINodes) needs it.
type UINodeList struct {
	Nodes     []UINode       `json:"nodes"`
	Truncated bool           `json:"truncated"`
	Screen    computer.Size  `json:"screen"`
	Display   *computer.Size `json:"display,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// UINode is an element of the accessibility tree as the API answers it.
type UINode struct {
	ID            string         `json:"id"`
	Role          string         `json:"role"`
	Name          string         `json:"name"`
	States        []string       `json:"states"`
	Value         *UIValue       `json:"value,omitempty"`
	Text          *string        `json:"text,omitempty"`
	Actions       []string       `json:"actions"`
	Bounds        *computer.Rect `json:"bounds,omitempty"`
	DisplayBounds *computer.Rect `json:"display_bounds,omitempty"`
	Children      []string       `json:"children"`
	ChildCount    int            `json:"child_count"`
	App           string         `json:"app"`
	Depth         int            `json:"depth"`
}

// UIValue is a range's value.
type UIValue struct {
	Current float64 `json:"current"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}

// shownStates are the states a node's line names: those that tell one
// element from its neighbours. The rest (enabled, sensitive, visible,
// showing, focusable…) hold for nearly everything shown.
var shownStates = []string{"focused", "checked", "selected", "expanded", "pressed", "editable", "indeterminate", "modal"}

// maxLineText bounds the text a node's line quotes.
const maxLineText = 60

// WriteUINodes writes nodes one a line, for a model or a terminal:
// role, name, id, where it is (in the display asked for, else in screen
// pixels), the states that tell it apart, its value or text and its
// actions. tree indents each node by its depth and says how many
// children a node has that the answer leaves out (root=its id reads
// them).
func WriteUINodes(w io.Writer, l *UINodeList, tree bool) {
	where := fmt.Sprintf("screen pixels (%dx%d)", l.Screen.Width, l.Screen.Height)
	if l.Display != nil {
		where = fmt.Sprintf("the %dx%d display", l.Display.Width, l.Display.Height)
	}
	more := ""
	if l.Truncated {
		more = ", truncated (a limit or the time left some out)"
	}
	fmt.Fprintf(w, "%d nodes%s; positions in %s\n", len(l.Nodes), more, where)
	listed := map[string]bool{}
	top := 0
	for i, n := range l.Nodes {
		listed[n.ID] = true
		if i == 0 || n.Depth < top {
			top = n.Depth
		}
	}
	for _, n := range l.Nodes {
		if tree {
			io.WriteString(w, strings.Repeat("  ", n.Depth-top))
		}
		io.WriteString(w, UINodeLine(&n, l.Display != nil))
		if left := n.ChildCount - countListed(n.Children, listed); tree && left > 0 {
			fmt.Fprintf(w, " (+%d children not listed)", left)
		}
		io.WriteString(w, "\n")
	}
	for _, warn := range l.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

func countListed(ids []string, listed map[string]bool) int {
	n := 0
	for _, id := range ids {
		if listed[id] {
			n++
		}
	}
	return n
}

// UINodeLine is one node on a line: `push button "Save" id=… @516,426
// 70x28 [focused] actions=click`; display says to give its display
// bounds rather than its screen bounds.
func UINodeLine(n *UINode, display bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q id=%s", n.Role, n.Name, n.ID)
	r := n.Bounds
	if display {
		r = n.DisplayBounds
	}
	if r != nil {
		fmt.Fprintf(&b, " @%d,%d %dx%d", r.X, r.Y, r.Width, r.Height)
	}
	var states []string
	for _, s := range shownStates {
		if slices.Contains(n.States, s) {
			states = append(states, s)
		}
	}
	if len(n.Actions) > 0 && !slices.Contains(n.States, "enabled") && !slices.Contains(n.States, "sensitive") {
		states = append(states, "disabled")
	}
	if n.Depth > 0 && !slices.Contains(n.States, "showing") {
		states = append(states, "hidden")
	}
	if len(states) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(states, ","))
	}
	if v := n.Value; v != nil {
		fmt.Fprintf(&b, " value=%g (%g..%g)", v.Current, v.Min, v.Max)
	}
	if n.Text != nil && *n.Text != "" {
		t := []rune(*n.Text)
		if len(t) > maxLineText {
			t = append(t[:maxLineText], '…')
		}
		fmt.Fprintf(&b, " text=%q", string(t))
	}
	if len(n.Actions) > 0 {
		fmt.Fprintf(&b, " actions=%s", strings.Join(n.Actions, ","))
	}
	return b.String()
}
