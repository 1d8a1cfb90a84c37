package desktop

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	good := []string{"a", "agent-1", "x9", strings.Repeat("a", 63)}
	bad := []string{"", "-a", "a-", "Agent", "a_b", "a.b", strings.Repeat("a", 64), "a b", "ä"}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		var ve *ValidationError
		if err := ValidateName(n); !errors.As(err, &ve) || ve.Field != "name" {
			t.Errorf("ValidateName(%q) = %v, want a name ValidationError", n, err)
		}
	}
}

func TestSpecValidateNamesField(t *testing.T) {
	ok := Spec{VCPUs: 2, MemoryMiB: 4096, DataDiskGiB: 20}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	cases := map[string]Spec{
		"vcpus":         {VCPUs: 17, MemoryMiB: 4096, DataDiskGiB: 20},
		"memory_mib":    {VCPUs: 2, MemoryMiB: 256, DataDiskGiB: 20},
		"data_disk_gib": {VCPUs: 2, MemoryMiB: 4096, DataDiskGiB: 4096},
	}
	for field, s := range cases {
		var ve *ValidationError
		if err := s.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%+v: got %v, want error on %s", s, err, field)
		}
	}
}

func TestBegin(t *testing.T) {
	if s, err := Begin(OpStop, StateRunning); err != nil || s != StateStopping {
		t.Fatalf("stop running = %s, %v", s, err)
	}
	_, err := Begin(OpStop, StateStopped)
	var se *TransitionError
	if !errors.As(err, &se) || se.State != StateStopped {
		t.Fatalf("stop stopped = %v, want StateError", err)
	}
	if !strings.Contains(err.Error(), "stopped") {
		t.Errorf("message %q does not name the state", err)
	}
	if _, err := Begin(OpStart, StateRunning); err == nil {
		t.Error("start running allowed")
	}
	if _, err := Begin(OpDelete, StateDeleted); err == nil {
		t.Error("delete deleted allowed")
	}
}

func TestIDOfDomain(t *testing.T) {
	d := &Desktop{ID: "3f9c0a1b2c3d"}
	if id, ok := IDOfDomain(d.DomainName()); !ok || id != d.ID {
		t.Errorf("IDOfDomain(%q) = %q %v", d.DomainName(), id, ok)
	}
	for _, name := range []string{"other-vm", "bureau-", "bureau-../x", "bureau-a/b", "bureau-.."} {
		if id, ok := IDOfDomain(name); ok {
			t.Errorf("IDOfDomain(%q) = %q, want not a desktop's", name, id)
		}
	}
}
