package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/manager"
)

// Drain marks the host draining and records a drain that moved one
// desktop and left another.
func (f *fakeHosts) Drain(_ context.Context, host, _ string) (*manager.DrainStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.hosts {
		if f.hosts[i].Name == host {
			f.hosts[i].Draining = true
			f.drain = &manager.DrainStatus{Host: host, StartedAt: time.Date(2025, 1, 2, 5, 0, 0, 0, time.UTC), Moved: 1,
				Moving: "d-2", Left: map[string]string{"d-3": "it is error: start or delete it, then drain again"}}
			return f.drain, nil
		}
	}
	return nil, fmt.Errorf("host %s: %w", host, hosts.ErrNotFound)
}

func (f *fakeHosts) Undrain(_ context.Context, host, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.hosts {
		if f.hosts[i].Name == host {
			f.hosts[i].Draining = false
		}
	}
	return nil
}

func (f *fakeHosts) DrainOf(host string) *manager.DrainStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drain == nil || f.drain.Host != host {
		return nil
	}
	return f.drain
}

func TestDrainAHost(t *testing.T) {
	e := newEnv(t)
	code, body := e.do(t, e.admin, "POST", "/api/v1/hosts/gpu-1/drain", "")
	drain, _ := body["drain"].(map[string]any)
	if code != 202 || body["draining"] != true || drain == nil || drain["moved"] != float64(1) || drain["moving"] != "d-2" ||
		drain["left"].(map[string]any)["d-3"] == nil || drain["done"] != false {
		t.Fatalf("drain: %d %v", code, body)
	}
	code, body = e.do(t, e.admin, "GET", "/api/v1/hosts", "")
	list := body["hosts"].([]any)
	if code != 200 || list[1].(map[string]any)["draining"] != true || list[1].(map[string]any)["drain"] == nil || list[0].(map[string]any)["drain"] != nil {
		t.Fatalf("hosts: %d %v", code, body)
	}
	code, body = e.do(t, e.admin, "DELETE", "/api/v1/hosts/gpu-1/drain", "")
	if code != 200 || body["draining"] != false {
		t.Fatalf("undrain: %d %v", code, body)
	}
	if code, body := e.do(t, e.admin, "POST", "/api/v1/hosts/nope/drain", ""); code != 404 || errCode(body) != "not_found" {
		t.Errorf("drain of an unknown host: %d %v", code, body)
	}
}
