package manager

import (
	"strings"
)

// Failpoints are named places in multi-step operations where a test can
// make bureau die at once, as if killed with SIGKILL, to prove that a
// restart finishes or undoes what was left half done. Set them with
// BUREAU_FAILPOINTS=create:after-define,… (tests only).
type Failpoints map[string]bool

// ParseFailpoints reads a comma-separated list.
func ParseFailpoints(s string) Failpoints {
	fp := Failpoints{}
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			fp[name] = true
		}
	}
	return fp
}
