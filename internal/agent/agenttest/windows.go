package agenttest

import (
	"testing"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
)

// ClientWithWindows is Client whose desktops' windows are ws (a
// fakewm.WM, say) instead of an X session.
func ClientWithWindows(t testing.TB, ws server.WindowSystem) *client.Client {
	t.Helper()
	srv := &server.Server{Info: wire.Info{SHA256: "x", Version: "test"}, StateDir: t.TempDir(), RunDir: t.TempDir(), Windows: ws}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	return ClientOf(t, Dialer{srv})
}
