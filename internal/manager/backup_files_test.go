package manager

import "testing"

func TestFSPath(t *testing.T) {
	for in, want := range map[string]string{"/home": "/", "/home/agent/x": "/agent/x", "/home/agent/": "/agent"} {
		if got, err := FSPath(in); err != nil || got != want {
			t.Errorf("%s: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"/etc/passwd", "/homework", "/home/../etc", `/home/"x`, "home/agent"} {
		if _, err := FSPath(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
