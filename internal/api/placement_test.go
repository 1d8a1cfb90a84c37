package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// HostLoads: bureau's own host runs two desktops holding 6 GiB.
func (f *fakeHosts) HostLoads(context.Context) (map[string]placement.Load, error) {
	return map[string]placement.Load{"local": {Desktops: 2, CommittedMiB: 6144, PendingMiB: 2048, Creating: 1}}, nil
}

func TestHostsShowWhatTheirDesktopsHold(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/api/v1/hosts", "/api/v1/hosts/local"} {
		_, out := e.call(t, specCall{token: e.admin, method: "GET", path: path, want: 200})
		local := out
		if hs, ok := out["hosts"].([]any); ok {
			local = hs[0].(map[string]any)
		}
		if local["desktops"] != 2.0 || local["committed_memory_mib"] != 6144.0 {
			t.Errorf("%s: local shows %v desktops holding %v MiB", path, local["desktops"], local["committed_memory_mib"])
		}
	}
}

func TestCreateAsksForHostLabels(t *testing.T) {
	e := newEnv(t)
	_, out := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops",
		body: `{"name":"w","placement":{"labels":{"zone":"b","gpu":"a100"}}}`, want: 202})
	if got := e.desktops.lastReq.PlaceLabels; fmt.Sprint(got) != "map[gpu:a100 zone:b]" || e.desktops.lastReq.Host != "" {
		t.Errorf("labels passed on: %v (host %q); reply %v", got, e.desktops.lastReq.Host, out)
	}
	_, out = e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops",
		body: `{"name":"w2","placement":{"labels":{"no spaces":"x"}}}`, want: 422})
	if errCode(out) != "invalid" || errField(out) != "placement.labels" {
		t.Errorf("a bad label key: %v", out)
	}
	// No host fits: 507, the message naming each host.
	e.desktops.err = fmt.Errorf("%w: %w", desktop.ErrCapacity, &placement.NoHostError{Refusals: []placement.Refusal{{Host: "local", Why: "labels: no zone"}}})
	_, out = e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops",
		body: `{"name":"w3","placement":{"labels":{"zone":"c"}}}`, want: 507})
	var nh *placement.NoHostError
	if errCode(out) != "insufficient_capacity" || !errors.As(e.desktops.err, &nh) || out["error"].(map[string]any)["message"] != e.desktops.err.Error() {
		t.Errorf("no host fits: %v", out)
	}
}
