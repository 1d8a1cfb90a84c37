package link

import (
	"errors"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestQMPErrorsAreTyped(t *testing.T) {
	for desc, want := range map[string]error{
		"Snapshot with id 'null' and name 'x' does not exist": desktop.ErrNoSnapshot,
		"Could not write to disk: No space left on device":    syscall.ENOSPC,
	} {
		if got := qmpClass(desc); !errors.Is(got, want) {
			t.Errorf("%q: %v, want %v", desc, got, want)
		}
	}
	if qmpClass("Device 'x' not found") != nil {
		t.Error("an unrelated error was given a type")
	}
}
