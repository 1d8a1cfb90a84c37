package teams

import (
	"errors"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestRoles(t *testing.T) {
	if !RoleAdmin.AtLeast(RoleMember) || !RoleMember.AtLeast(RoleViewer) || RoleViewer.AtLeast(RoleMember) || Role("boss").AtLeast(RoleViewer) {
		t.Error("viewer < member < admin")
	}
	if Min(RoleAdmin, RoleMember) != RoleMember || Min(RoleViewer, RoleMember) != RoleViewer {
		t.Error("Min")
	}
	var ve *desktop.ValidationError
	if _, err := ParseRole("role", "owner"); !errors.As(err, &ve) || ve.Field != "role" {
		t.Errorf("a bad role: %v", err)
	}
	for _, bad := range []string{"", "a b", "a/b", "x\x07"} {
		if err := ValidateMember(bad); !errors.As(err, &ve) || ve.Field != "member" {
			t.Errorf("member %q: %v", bad, err)
		}
	}
	if err := ValidateName("ops"); err != nil {
		t.Error(err)
	}
	tm := &Team{Members: []Member{{Member: "a", Role: RoleAdmin}, {Member: "b", Role: RoleViewer}}}
	if tm.RoleOf("b") != RoleViewer || tm.RoleOf("c") != "" || tm.admins() != 1 {
		t.Error("RoleOf/admins")
	}
	if err := (&BusyError{Team: "t", Desktops: []string{"d1"}}); !errors.Is(err, desktop.ErrBusy) {
		t.Error("BusyError is ErrBusy")
	}
}
