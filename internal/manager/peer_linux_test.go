package manager

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPeerIsChecksTheServingUser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		uid  int
		want string
	}{{0, ""}, {os.Getuid(), ""}, {os.Getuid() + 4242, "not the desktop's QEMU user"}} {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		err = peerIs(c, tc.uid)
		c.Close()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("uid %d: err = %v, want %q", tc.uid, err, tc.want)
		}
	}
}
