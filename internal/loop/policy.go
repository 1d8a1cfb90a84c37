package loop

// Policy names what needs a person's approval on one desktop. The zero
// Policy gates nothing.
type Policy struct {
	// Exec: regular expressions (RE2) matched against an exec call's
	// command line (the argv joined with spaces).
	Exec []string `json:"exec,omitempty"`
	// FileDelete gates every file delete through the files API.
	FileDelete bool `json:"file_delete,omitempty"`
	// Keys: key actions (computer use "key") naming a key, optionally
	// only while the active window's title matches.
	Keys []KeyRule `json:"keys,omitempty"`
	// Clicks: clicks (any button, any count) inside a screen region.
	Clicks []Region `json:"clicks,omitempty"`
	// URLs: regular expressions matched against URLs the agent opens
	// (launch_app arguments and exec command lines that contain URLs).
	URLs []string `json:"urls,omitempty"`
	// TimeoutS is how long a gated action waits for a decision before it
	// is denied (default 300, at most 3600).
	TimeoutS int `json:"timeout_s,omitempty"`

	// re is the policy compiled (ParsePolicy and the Service's cache set
	// it; nil: Match compiles it).
	re *compiled
}

// KeyRule gates a key press. Key is an xdotool key name or combination
// ("Return", "ctrl+s"), matched case-insensitively against each
// combination the action presses; WindowTitle (RE2, optional) must match
// the active window's title.
type KeyRule struct {
	Key         string `json:"key"`
	WindowTitle string `json:"window_title,omitempty"`
}

// Region gates clicks inside a rectangle of the screen (pixels of the
// desktop's display), optionally only while the active window's title
// matches WindowTitle (RE2). Name, optional, says what it is ("Pay
// button").
type Region struct {
	Name        string `json:"name,omitempty"`
	X           int    `json:"x"`
	Y           int    `json:"y"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	WindowTitle string `json:"window_title,omitempty"`
}

// Input is a call a policy may gate, as the API sees it.
type Input struct {
	// Kind is one of ActionExec, ActionFileDelete, ActionKey,
	// ActionClick, ActionURL.
	Kind    string
	Command string // exec: the command line
	Path    string // file_delete
	Keys    string // key: the action's text ("ctrl+s", "Return")
	X, Y    int    // click
	URL     string // url
	// WindowTitle is the active window's title (key and click rules
	// that name one; "" when not known).
	WindowTitle string
}
