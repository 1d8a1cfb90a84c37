package api

import "testing"

// TestDeleteFileHonoursAgent: ?agent=qemu-ga reaches the delete like the
// other file routes, and an unknown agent is refused.
func TestDeleteFileHonoursAgent(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/files?path=notes.txt"
	if code, _ := e.do(t, e.alice, "DELETE", base+"&agent=qemu-ga", ""); code != 204 || e.guest.viaQEMU != 1 {
		t.Errorf("delete through qemu-ga: %d, %d calls skipped bureau-agent", code, e.guest.viaQEMU)
	}
	if code, r := e.do(t, e.alice, "DELETE", base+"&agent=other", ""); code != 422 || dig(r, "error.field") != "agent" {
		t.Errorf("unknown agent: %d %v", code, r)
	}
	if code, _ := e.do(t, e.alice, "DELETE", base, ""); code != 204 || e.guest.viaQEMU != 1 {
		t.Errorf("plain delete: %d, %d calls skipped bureau-agent", code, e.guest.viaQEMU)
	}
}
