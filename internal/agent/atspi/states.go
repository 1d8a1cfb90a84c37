package atspi

import "strings"

// stateNames are AT-SPI2's StateType values in order (atspi-constants.h),
// as the API names them. "invalid" (0) is never set by a toolkit.
var stateNames = [...]string{
	"invalid", "active", "armed", "busy", "checked", "collapsed", "defunct", "editable",
	"enabled", "expandable", "expanded", "focusable", "focused", "has_tooltip", "horizontal", "iconified",
	"modal", "multi_line", "multiselectable", "opaque", "pressed", "resizable", "selectable", "selected",
	"sensitive", "showing", "single_line", "stale", "transient", "vertical", "visible", "manages_descendants",
	"indeterminate", "required", "truncated", "animated", "invalid_entry", "supports_autocompletion", "selectable_text", "is_default",
	"visited", "checkable", "has_popup", "read_only",
}

// decodeStates turns GetState's bit set (32 states a word, lowest bit
// first) into state names, in the order of the enum.
func decodeStates(words []uint32) []string {
	out := []string{}
	for w, word := range words {
		for bit := range 32 {
			if word&(1<<bit) == 0 {
				continue
			}
			i := w*32 + bit
			if i > 0 && i < len(stateNames) {
				out = append(out, stateNames[i])
			}
		}
	}
	return out
}

// stateIndex is the enum value of a state name ("-" and "_" alike), or -1.
func stateIndex(name string) int {
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	for i, n := range stateNames {
		if i > 0 && n == name {
			return i
		}
	}
	return -1
}
