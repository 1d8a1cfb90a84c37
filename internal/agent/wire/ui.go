package wire

// The ui.* ops read and drive the desktop's accessibility tree (AT-SPI2)
// as the session's user. The agent answers an empty Response at once (the
// call is accepted) and a second Response, with UI or an error, when the
// work is done: a walk may take longer than bureau waits for a first
// header.
const (
	OpUITree = "ui.tree" // nodes of the tree, parents first
	OpUIFind = "ui.find" // the nodes that match, flat
	OpUIAct  = "ui.act"  // act on one node, then read it again
)

// CodeGone: the node's id is well formed but its application or object is
// no longer there.
const CodeGone = "gone"

// Limits of a ui call (the agent clamps what it is asked).
const (
	UIDefaultDepth   = 8
	UIMaxDepth       = 30
	UIDefaultLimit   = 500
	UIMaxLimit       = 5000
	UIDefaultTimeout = 10_000 // ms
	UIMaxTimeout     = 30_000 // ms
	// UIMaxText caps a node's text (in characters).
	UIMaxText = 2000
	// UIMaxChildren caps the children ids a node lists (ChildCount says
	// how many it has).
	UIMaxChildren = 200
)

// UIQuery asks ui.tree and ui.find (Request.UI).
type UIQuery struct {
	// User owns the X session whose accessibility bus is read.
	User string `json:"user"`
	// Root starts the walk at a node (tree); "" is every application.
	Root string `json:"root,omitempty"`
	// Window keeps applications whose name, or top-level windows whose
	// title, contains it (case-insensitive); App keeps applications whose
	// name contains it.
	Window string `json:"window,omitempty"`
	App    string `json:"app,omitempty"`
	// Role (comma-separated; a role matches one of them whole or as its
	// last word: "button" matches "push button"), Name (substring,
	// case-insensitive) and States (all of them; "!name" for absent) pick
	// the nodes answered. tree keeps the ancestors of those it picks.
	Role   string   `json:"role,omitempty"`
	Name   string   `json:"name,omitempty"`
	States []string `json:"states,omitempty"`
	// Hidden walks into nodes that are not showing too.
	Hidden bool `json:"hidden,omitempty"`
	// Depth below the applications, or Root (0: UIDefaultDepth; find:
	// UIMaxDepth); Limit on the nodes the walk keeps, applications aside
	// (0: UIDefaultLimit; find: UIMaxLimit); TimeoutMS on the walk.
	Depth     int `json:"depth,omitempty"`
	Limit     int `json:"limit,omitempty"`
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Matches bounds what ui.find answers (0: Limit).
	Matches int `json:"matches,omitempty"`
}

// UIAction asks ui.act (Request.UIAct).
type UIAction struct {
	User string `json:"user"`
	Node string `json:"node"`
	// Action is "click" (the node's default action), "focus",
	// "set_value" (Value) or the name of one of the node's actions.
	Action    string `json:"action"`
	Value     string `json:"value,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// UIResult answers the ui ops (Response.UI).
type UIResult struct {
	// tree, find: the nodes; Truncated when a limit, the depth of find or
	// the time stopped the walk before it saw everything it was to see.
	Nodes     []UINode `json:"nodes,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	// Screen is the size of the screen bounds are in (0 if unknown).
	Screen UISize `json:"screen"`
	// Warnings name applications that did not answer in time, and the
	// like: the walk went on without them.
	Warnings []string `json:"warnings,omitempty"`
	// act: the node read again after the action (Node) and whether it
	// changed; Gone when the action made it go away (Node is then as it
	// was before). Performed names the AT-SPI action that was done.
	Node      *UINode `json:"node,omitempty"`
	Changed   bool    `json:"changed,omitempty"`
	Gone      bool    `json:"gone,omitempty"`
	Performed string  `json:"performed,omitempty"`
}

// UINode is one accessible object.
type UINode struct {
	ID          string   `json:"id"`
	Role        string   `json:"role"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	States      []string `json:"states"`
	// Value is a range's (slider, spin button, scroll bar, progress bar).
	Value *UIValue `json:"value,omitempty"`
	// Text is a text node's content (never a password's), at most
	// UIMaxText characters (TextTruncated then).
	Text          *string  `json:"text,omitempty"`
	TextTruncated bool     `json:"text_truncated,omitempty"`
	Actions       []string `json:"actions"`
	// Bounds is where it is on the screen, in screen pixels (nil: it has
	// no place, or says none).
	Bounds *UIRect `json:"bounds,omitempty"`
	Parent string  `json:"parent,omitempty"`
	// Children are its children's ids, answered or not; of a node with
	// more than UIMaxChildren (ChildCount says how many), those answered.
	Children   []string `json:"children"`
	ChildCount int      `json:"child_count"`
	// App is the application's name; Depth is 0 for an application.
	App   string `json:"app"`
	Depth int    `json:"depth"`
}

// UIRect is a rectangle in pixels.
type UIRect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// UISize is a screen's size in pixels.
type UISize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// UIValue is a range's value and bounds.
type UIValue struct {
	Current float64 `json:"current"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}
