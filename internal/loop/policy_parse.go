package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// Bounds of a policy.
const (
	MaxPolicyRules  = 50 // per list
	MaxKeyName      = 64
	MaxRegionName   = 200
	MinGateTimeoutS = 5
	MaxGateTimeoutS = 3600
	// DefaultGateTimeoutS is how long a gated call waits when the policy
	// does not say.
	DefaultGateTimeoutS = 300
)

// compiled is a policy made ready to match: its regular expressions
// compiled, its keys normalised.
type compiled struct {
	exec, urls []*regexp.Regexp
	keys       []compiledKey
	// clicks: each region's window title (nil: any window).
	clicks []*regexp.Regexp
}

type compiledKey struct {
	key   string
	title *regexp.Regexp
}

// ParsePolicy reads a policy from JSON strictly (an unknown field is an
// error naming it) and validates it. Errors are *desktop.ValidationError
// naming the field at fault ("exec[1]", "keys[0].window_title").
func ParsePolicy(b []byte) (Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return Policy{}, jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Policy{}, &desktop.ValidationError{Field: "policy", Message: "one JSON object, with nothing after it"}
	}
	c, err := p.compile()
	if err != nil {
		return Policy{}, err
	}
	p.re = c
	return p, nil
}

// jsonError names the field a policy's JSON got wrong.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &desktop.ValidationError{Field: strings.Trim(name, `"`), Message: "unknown field"}
	}
	if errors.As(err, &te) && te.Field != "" {
		return &desktop.ValidationError{Field: te.Field, Message: "want " + jsonKind(te.Type.Kind().String())}
	}
	return &desktop.ValidationError{Field: "policy", Message: "not a JSON object: " + err.Error()}
}

func jsonKind(k string) string {
	switch k {
	case "slice":
		return "a list"
	case "int":
		return "a whole number"
	case "struct":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a " + k
}

// Validate checks a policy: its patterns compile (RE2), its keys are
// named, its regions are on the screen and its timeout is 0 or 5–3600.
func (p Policy) Validate() error {
	_, err := p.compile()
	return err
}

func (p Policy) compile() (*compiled, error) {
	c := &compiled{}
	var err error
	if c.exec, err = patterns("exec", p.Exec); err != nil {
		return nil, err
	}
	if c.urls, err = patterns("urls", p.URLs); err != nil {
		return nil, err
	}
	if len(p.Keys) > MaxPolicyRules {
		return nil, tooMany("keys")
	}
	for i, k := range p.Keys {
		field := fmt.Sprintf("keys[%d]", i)
		key := strings.TrimSpace(k.Key)
		if n := utf8.RuneCountInString(key); n < 1 || n > MaxKeyName || strings.ContainsAny(key, " \t\n") ||
			slices.Contains(strings.Split(key, "+"), "") {
			return nil, &desktop.ValidationError{Field: field + ".key",
				Message: fmt.Sprintf("a key or combination of up to %d characters, such as Return or ctrl+s", MaxKeyName)}
		}
		re, err := title(field, k.WindowTitle)
		if err != nil {
			return nil, err
		}
		c.keys = append(c.keys, compiledKey{key: normKey(key), title: re})
	}
	if len(p.Clicks) > MaxPolicyRules {
		return nil, tooMany("clicks")
	}
	for i, r := range p.Clicks {
		field := fmt.Sprintf("clicks[%d]", i)
		switch {
		case utf8.RuneCountInString(r.Name) > MaxRegionName:
			return nil, &desktop.ValidationError{Field: field + ".name", Message: fmt.Sprintf("at most %d characters", MaxRegionName)}
		case r.X < 0:
			return nil, &desktop.ValidationError{Field: field + ".x", Message: "0 or more"}
		case r.Y < 0:
			return nil, &desktop.ValidationError{Field: field + ".y", Message: "0 or more"}
		case r.Width <= 0:
			return nil, &desktop.ValidationError{Field: field + ".width", Message: "more than 0"}
		case r.Height <= 0:
			return nil, &desktop.ValidationError{Field: field + ".height", Message: "more than 0"}
		}
		re, err := title(field, r.WindowTitle)
		if err != nil {
			return nil, err
		}
		c.clicks = append(c.clicks, re)
	}
	if p.TimeoutS != 0 && (p.TimeoutS < MinGateTimeoutS || p.TimeoutS > MaxGateTimeoutS) {
		return nil, &desktop.ValidationError{Field: "timeout_s",
			Message: fmt.Sprintf("from %d to %d seconds (0: %d)", MinGateTimeoutS, MaxGateTimeoutS, DefaultGateTimeoutS)}
	}
	return c, nil
}

func tooMany(field string) error {
	return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("at most %d rules", MaxPolicyRules)}
}

// patterns compiles a list of RE2 patterns.
func patterns(field string, list []string) ([]*regexp.Regexp, error) {
	if len(list) > MaxPolicyRules {
		return nil, tooMany(field)
	}
	out := make([]*regexp.Regexp, len(list))
	for i, s := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if s == "" {
			return nil, &desktop.ValidationError{Field: f, Message: `an empty pattern matches everything: use "." to mean that`}
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, &desktop.ValidationError{Field: f, Message: "not a regular expression (RE2): " + err.Error()}
		}
		out[i] = re
	}
	return out, nil
}

// title compiles a rule's window title pattern (nil: none).
func title(field, pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, &desktop.ValidationError{Field: field + ".window_title", Message: "not a regular expression (RE2): " + err.Error()}
	}
	return re, nil
}

// keyNames are the names one key goes by, as normKey writes them.
var keyNames = map[string]string{
	"enter": "return", "control": "ctrl", "control_l": "ctrl", "control_r": "ctrl", "ctrl_l": "ctrl", "ctrl_r": "ctrl",
	"alt_l": "alt", "alt_r": "alt", "shift_l": "shift", "shift_r": "shift", "super_l": "super", "super_r": "super",
	"win": "super", "cmd": "super", "esc": "escape", "del": "delete",
}

// normKey writes a key or combination ("Ctrl+Shift+S") one way
// ("ctrl+shift+s"): lower case, one name per key, modifiers in order.
func normKey(k string) string {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(k)), "+")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if n, ok := keyNames[p]; ok {
			p = n
		}
		parts[i] = p
	}
	if len(parts) > 1 {
		slices.Sort(parts[:len(parts)-1])
	}
	return strings.Join(parts, "+")
}

// hit is the rule an input matched.
type hit struct {
	rule string
	// region: the click rule's region.
	region *Region
}

// Match says whether the policy gates in, and which rule does
// ("exec[0]: rm\\s+-rf"). Key and click rules naming a window title look
// at in.WindowTitle.
func (p Policy) Match(in Input) (rule string, ok bool) {
	h, ok := p.match(in, func() string { return in.WindowTitle })
	return h.rule, ok
}

// match is Match asking for the active window's title only when a rule
// that matches otherwise names one.
func (p Policy) match(in Input, windowTitle func() string) (hit, bool) {
	c := p.re
	if c == nil {
		var err error
		if c, err = p.compile(); err != nil {
			return hit{}, false // SetPolicy and ParsePolicy let no such policy in
		}
	}
	switch in.Kind {
	case ActionExec:
		for i, re := range c.exec {
			if re.MatchString(in.Command) {
				return hit{rule: fmt.Sprintf("exec[%d]: %s", i, p.Exec[i])}, true
			}
		}
	case ActionURL:
		for i, re := range c.urls {
			if re.MatchString(in.URL) {
				return hit{rule: fmt.Sprintf("urls[%d]: %s", i, p.URLs[i])}, true
			}
		}
	case ActionFileDelete:
		if p.FileDelete {
			return hit{rule: "file_delete"}, true
		}
	case ActionKey:
		combos := strings.Fields(in.Keys)
		for i := range combos {
			combos[i] = normKey(combos[i])
		}
		for i, k := range c.keys {
			if !slices.Contains(combos, k.key) || k.title != nil && !k.title.MatchString(windowTitle()) {
				continue
			}
			rule := fmt.Sprintf("keys[%d]: %s", i, p.Keys[i].Key)
			if k.title != nil {
				rule += fmt.Sprintf(" in a window titled /%s/", p.Keys[i].WindowTitle)
			}
			return hit{rule: rule}, true
		}
	case ActionClick:
		for i, r := range p.Clicks {
			if in.X < r.X || in.X >= r.X+r.Width || in.Y < r.Y || in.Y >= r.Y+r.Height ||
				c.clicks[i] != nil && !c.clicks[i].MatchString(windowTitle()) {
				continue
			}
			return hit{rule: fmt.Sprintf("clicks[%d]: %s", i, r.describe()), region: &p.Clicks[i]}, true
		}
	}
	return hit{}, false
}

// describe names a region: its name, or where it is.
func (r Region) describe() string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("the region at (%d, %d), %d×%d", r.X, r.Y, r.Width, r.Height)
}
