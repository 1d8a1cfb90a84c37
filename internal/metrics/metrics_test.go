package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

type fakeDesktops []*desktop.Desktop

func (f fakeDesktops) ListDesktops(context.Context, desktop.Filter) ([]*desktop.Desktop, error) {
	return f, nil
}

type fakeVMs struct {
	stats map[string]*desktop.VMStats
	err   error
}

func (f fakeVMs) Stats(context.Context) (map[string]*desktop.VMStats, error) { return f.stats, f.err }

type fakeViewers map[string]int

func (f fakeViewers) Viewers() map[string]int { return f }

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestMetricsExposeDesktopsAndLatency(t *testing.T) {
	ds := fakeDesktops{
		{ID: "a1", Name: "agent-1", Owner: "alice", State: desktop.StateRunning},
		{ID: "b1", Name: "idle", Owner: "bob", State: desktop.StateHibernated},
	}
	vms := fakeVMs{stats: map[string]*desktop.VMStats{"bureau-a1": {
		CPUTimeNs: 2_500_000_000, VCPUs: 2, MemoryMaxKiB: 2048 * 1024, MemoryCurrentKiB: 2048 * 1024, MemoryRSSKiB: 1024,
		MemoryUnusedKiB: 512, MemoryAvailableKiB: 2000,
		Disks:    []desktop.DiskStats{{Name: "vdb", ReadBytes: 10, WriteBytes: 20, AllocationBytes: 30, CapacityBytes: 40}},
		Networks: []desktop.NetStats{{Name: "vnet0", RxBytes: 5, TxBytes: 6}},
	}}}
	m := New(ds, vms, slog.New(slog.DiscardHandler))
	m.SetViewers(fakeViewers{"a1": 2})
	m.ObserveRequest("GET", "/api/v1/desktops", 200, 3*time.Millisecond)
	m.ObserveOperation("hibernate", 2*time.Second, nil)
	m.ObserveOperation("create", time.Second, errors.New("x"))
	out := scrape(t, m)
	for _, want := range []string{
		`bureau_desktop_state{desktop="a1",name="agent-1",owner="alice",state="running"} 1`,
		`bureau_desktop_state{desktop="b1",name="idle",owner="bob",state="hibernated"} 1`,
		`bureau_desktop_cpu_seconds_total{desktop="a1",name="agent-1",owner="alice"} 2.5`,
		`bureau_desktop_memory_rss_bytes{desktop="a1",name="agent-1",owner="alice"} 1.048576e+06`,
		`bureau_desktop_memory_unused_bytes{desktop="a1",name="agent-1",owner="alice"} 524288`,
		`bureau_desktop_disk_written_bytes_total{desktop="a1",disk="vdb",name="agent-1",owner="alice"} 20`,
		`bureau_desktop_network_receive_bytes_total{desktop="a1",interface="vnet0",name="agent-1",owner="alice"} 5`,
		`bureau_desktop_console_viewers{desktop="a1",name="agent-1",owner="alice"} 2`,
		`bureau_http_request_duration_seconds_count{code="200",method="GET",route="/api/v1/desktops"} 1`,
		`bureau_operation_duration_seconds_count{operation="hibernate",result="ok"} 1`,
		`bureau_operation_duration_seconds_count{operation="create",result="error"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, `bureau_desktop_cpu_seconds_total{desktop="b1"`) {
		t.Error("a hibernated desktop reports CPU")
	}
}

func TestScrapeSurvivesHypervisorErrors(t *testing.T) {
	m := New(fakeDesktops{{ID: "a1", Name: "n", Owner: "o", State: desktop.StateRunning}}, fakeVMs{err: errors.New("libvirt down")}, slog.New(slog.DiscardHandler))
	out := scrape(t, m)
	if !strings.Contains(out, `bureau_scrape_errors_total{source="hypervisor"} 1`) || !strings.Contains(out, `state="running"} 1`) {
		t.Errorf("scrape with a failing hypervisor:\n%s", out)
	}
}

func TestLiveURLMetricsPerDesktopAndPort(t *testing.T) {
	m := New(fakeDesktops{}, fakeVMs{}, slog.New(slog.DiscardHandler))
	m.ObserveLiveURL("a1", 3000, 200, 10, 1000, 20*time.Millisecond)
	m.ObserveLiveURL("a1", 3000, 200, 0, 500, 2*time.Millisecond)
	m.ObserveLiveURL("a1", 3000, 401, 0, 80, time.Millisecond)
	m.ObserveLiveURL("b1", 8080, 200, 0, 1, time.Millisecond)
	out := scrape(t, m)
	for _, want := range []string{
		`bureau_live_url_requests_total{code="200",desktop="a1",port="3000"} 2`,
		`bureau_live_url_requests_total{code="401",desktop="a1",port="3000"} 1`,
		`bureau_live_url_bytes_total{desktop="a1",direction="to_client",port="3000"} 1580`,
		`bureau_live_url_bytes_total{desktop="a1",direction="to_app",port="3000"} 10`,
		`bureau_live_url_request_duration_seconds_count{desktop="a1",port="3000"} 3`,
		`bureau_live_url_request_duration_seconds_bucket{desktop="a1",port="3000",le="0.005"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	m.ForgetDesktop("a1")
	if out := scrape(t, m); strings.Contains(out, `desktop="a1"`) || !strings.Contains(out, `desktop="b1"`) {
		t.Errorf("after forgetting a1:\n%s", out)
	}
}
