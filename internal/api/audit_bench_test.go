package api

import (
	"net/http/httptest"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// BenchmarkAuditedRequests is the audit log's cost on the API: a cheap
// state-changing call (POST /desktops/:id/pause, on the fakes) through the
// real router with its token check, with the audit log on (entries
// queued and written in batches to SQLite) and off. It prints requests/s.
func BenchmarkAuditedRequests(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "audit=off"
		if on {
			name = "audit=on"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnvDeps(b, nil, func(d *Deps) {
				if !on {
					d.Audit = nil
				}
			})
			router := e.srv.Config.Handler.(*specChecker).h // the router alone, not the spec check
			e.desktops.desktops["d1"] = &desktop.Desktop{ID: "d1", Owner: "alice", Name: "bench", State: desktop.StateRunning}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/api/v1/desktops/d1/pause", nil)
				req.Header.Set("Authorization", "Bearer "+e.alice)
				w := httptest.NewRecorder()
				router.ServeHTTP(w, req)
				if w.Code >= 400 {
					b.Fatalf("pause: %d %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			if on && e.audit.Dropped() > 0 {
				b.Logf("%d entries dropped (buffer full)", e.audit.Dropped())
			}
		})
	}
}
