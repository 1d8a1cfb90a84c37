//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// testObservability reads the running desktop's statistics and Prometheus
// series, and checks that the live event stream reports a state change as
// it happens.
func testObservability(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	var st apiv1.Stats
	if code := s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/stats", nil, &st); code != 200 || st.CPUTimeNs == 0 || st.MemoryRSSKiB == 0 || len(st.Disks) < 2 {
		t.Errorf("stats: %d %+v", code, st)
	}
	s.expectError(token, "GET", "/metrics", nil, 403, "forbidden")
	var metrics []byte
	if code := s.call(adminToken, "GET", "/metrics", nil, &metrics); code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, series := range []string{
		`bureau_desktop_state{desktop="` + d.ID + `",name="agent-1",owner="alice",state="running"} 1`,
		`bureau_desktop_cpu_seconds_total{desktop="` + d.ID + `"`,
		`bureau_desktop_memory_rss_bytes{desktop="` + d.ID + `"`,
		`bureau_desktop_disk_written_bytes_total{desktop="` + d.ID + `",disk="vdb"`,
		`bureau_desktop_network_receive_bytes_total{desktop="` + d.ID + `"`,
		`bureau_http_request_duration_seconds_bucket{code="200",method="GET",route="/api/v1/desktops/:id"`,
		`bureau_operation_duration_seconds_count{operation="create",result="ok"} 1`,
	} {
		if !strings.Contains(string(metrics), series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}

	// The live stream: a pause shows up as it happens, flushed on its own.
	// The stream also writes a keepalive comment every 15 s
	// (api.streamCheckEvery), which would flush an event left in a
	// buffer: the pause must come before the first, whatever the
	// machine's speed.
	const keepaliveEvery = 15 * time.Second
	req, _ := http.NewRequest("GET", s.url+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	firstKeepalive := time.Now().Add(keepaliveEvery) // or later: the stream starts after this
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan time.Time, 1)
	go func() {
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ch apiv1.Desktop
				if json.Unmarshal([]byte(data), &ch) == nil && ch.ID == d.ID && ch.State == string(desktop.StatePaused) {
					got <- time.Now()
					io.Copy(io.Discard, rd)
					return
				}
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	pausedAt := time.Now()
	if code := s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	select {
	case at := <-got:
		t.Logf("event stream: pause seen after %s", at.Sub(pausedAt).Round(time.Millisecond))
	case <-time.After(time.Until(firstKeepalive)):
		t.Errorf("the stream did not report the pause before its first keepalive (%s after it opened): not flushed as it happened", keepaliveEvery)
	}
	s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/resume", nil, nil)
	s.waitState(token, d.ID, desktop.StateRunning, time.Minute)
}
