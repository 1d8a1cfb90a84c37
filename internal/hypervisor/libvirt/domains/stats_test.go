package domains

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/guestchan"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
)

// Stats reads the figures of bureau's running VMs on every host: here
// (the test driver's default node, whose one domain is not bureau's) and
// on a remote host "two" (a test node of its own, from a file) where
// bureau-far runs; a host that does not answer is left out.
func TestStatsCoverRemoteHosts(t *testing.T) {
	ctx := context.Background()
	node := filepath.Join(t.TempDir(), "two.xml")
	if err := os.WriteFile(node, []byte(`<node>
  <domain type='test'>
    <name>bureau-far</name>
    <memory unit='MiB'>512</memory>
    <vcpu>2</vcpu>
    <os><type>hvm</type></os>
  </domain>
</node>`), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := link.Open(ctx, "test:///default", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.SetRemotes(link.Remotes{
		Where: func(string) string { return "" },
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"two": "test://" + node, "gone": "test:///nonexistent/node.xml"}, nil
		},
	})
	t.Cleanup(func() { h.ForgetRemote("two"); h.ForgetRemote("gone") })
	stats, err := New(h, guestchan.NewAgent(h)).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The test driver reports no figures, only the domain: its being
	// there is the point (it runs on host two alone).
	if _, ok := stats["bureau-far"]; len(stats) != 1 || !ok {
		t.Fatalf("stats: %+v", stats)
	}
}
