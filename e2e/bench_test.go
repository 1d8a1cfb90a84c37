//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestBench measures what a user waits for, on one real desktop, and prints
// a table (make bench). It is skipped unless BUREAU_BENCH=1.
func TestBench(t *testing.T) {
	if os.Getenv("BUREAU_BENCH") != "1" {
		t.Skip("set BUREAU_BENCH=1 (make bench)")
	}
	s := newServer(t)
	var info map[string]string
	benchCall(t, s, adminToken, "GET", "/api/v1/info", nil, &info)
	var rows []row
	add := func(name string, d time.Duration) {
		rows = append(rows, row{name, rounded(d)})
		t.Logf("%s: %s", name, rounded(d))
	}

	t0 := time.Now()
	var d apiv1.Desktop
	benchCall(t, s, adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "bench", "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 4}, &d)
	t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil) })
	add("create → API returns", time.Since(t0))
	run := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	add("create → running (VM started)", time.Since(t0))
	s.waitAgent(run, 10*time.Minute)
	add("create → guest agent answers", time.Since(t0))
	s.waitGuest(run, "xfce", "pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop", 10*time.Minute)
	add("create → Xfce panel and desktop running", time.Since(t0))
	s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
	coldVisible := time.Since(t0)
	add("create → desktop visible (screen settled)", coldVisible)
	add("create → ready (ready_at: session up, as bureau saw it)", benchReadyAt(t, s, d.ID, t0))

	benchScreen(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })
	benchComputer(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })
	benchUI(t, s, run, true, func(name, v string) { rows = append(rows, row{name, v}) })
	benchAgent(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })
	benchURL(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })
	benchRecording(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })
	benchPersistence(t, s, d.ID, run, add, func(name, v string) { rows = append(rows, row{name, v}) })
	benchTiers(t, s, run, func(name, v string) { rows = append(rows, row{name, v}) })

	t1 := time.Now()
	benchCall(t, s, adminToken, "POST", "/api/v1/desktops/"+d.ID+"/stop", nil, nil)
	s.waitState(adminToken, d.ID, desktop.StateStopped, 3*time.Minute)
	add("stop (ACPI) → stopped", time.Since(t1))
	t2 := time.Now()
	benchCall(t, s, adminToken, "POST", "/api/v1/desktops/"+d.ID+"/start", nil, nil)
	run = s.waitState(adminToken, d.ID, desktop.StateRunning, 3*time.Minute)
	s.waitAgent(run, 10*time.Minute)
	add("start → guest agent answers", time.Since(t2))
	s.waitGuest(run, "xfce", "pgrep -u agent -x xfce4-panel && pgrep -u agent -x xfdesktop", 10*time.Minute)
	s.settledScreenshot(adminToken, d.ID, 3*time.Minute)
	add("start → desktop visible (screen settled)", time.Since(t2))
	add("start → ready (ready_at)", benchReadyAt(t, s, d.ID, t2))
	t3 := time.Now()
	benchCall(t, s, adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
	add("delete (running, with data)", time.Since(t3))

	// Cold against warm create, side by side: the same image and size.
	add("template build (cold boot, session up, RAM saved)", s.buildTemplate(2, 2048))
	t4 := time.Now()
	var w apiv1.Desktop
	benchCall(t, s, adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "bench-warm", "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 4}, &w)
	t.Cleanup(func() { s.call(adminToken, "DELETE", "/api/v1/desktops/"+w.ID+"?delete_data=true", nil, nil) })
	warm := s.waitState(adminToken, w.ID, desktop.StateRunning, 5*time.Minute)
	add("warm create → running", time.Since(t4))
	add("warm create → ready (ready_at)", benchReadyAt(t, s, w.ID, t4))
	s.waitAgent(warm, 2*time.Minute)
	add("warm create → guest agent answers", time.Since(t4))
	s.settledScreenshot(adminToken, w.ID, 3*time.Minute)
	warmVisible := time.Since(t4)
	add("warm create → desktop visible (screen settled)", warmVisible)
	rows = append(rows, row{"cold / warm create → desktop visible", fmt.Sprintf("%.1f×", float64(coldVisible)/float64(warmVisible))})

	printBench(info, rows)
}

// testBenchmarks is make test's short run of the benchmarks (the running
// check "benchmarks"), on the lifecycle's desktop instead of a boot of its
// own: the screen, computer use, structure, bureau-agent and live URL
// measurements with few repetitions, printed as make bench prints them.
// What the checks before it already time in the same run is left to them
// (about 45 s less here): boot and stop/start (the lifecycle's log lines),
// hibernate and resume (pause_and_hibernate), snapshot and revert
// (snapshots), a recording (recordings); the idle tiers and warm create are
// checked by pause_and_hibernate and TestWarmCreate. make bench measures
// all of them on a desktop of its own. It leaves the desktop running.
func testBenchmarks(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	var info map[string]string
	benchCall(t, s, adminToken, "GET", "/api/v1/info", nil, &info)
	var rows []row
	addRow := func(name, v string) { rows = append(rows, row{name, v}) }
	benchScreen(t, s, d, addRow)
	benchComputer(t, s, d, addRow)
	benchUI(t, s, d, false, addRow)
	benchAgent(t, s, d, addRow)
	benchURL(t, s, d, addRow)
	printBench(info, rows)
}

type row struct{ name, value string }

// rounded is a duration as the benchmark tables print it: to the
// millisecond below a second, else to a tenth of a second.
func rounded(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// printBench prints the benchmark table in Markdown.
func printBench(info map[string]string, rows []row) {
	host, _ := os.Hostname()
	fmt.Printf("\nbureau bench — %s, %d cores, accelerator %s, database %s, %s\n\n", host, runtime.NumCPU(), info["accelerator"], info["database"], time.Now().UTC().Format("2006-01-02"))
	fmt.Println("| measure | value |\n|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r.name, r.value)
	}
	fmt.Println()
}

func timeN(n int, f func()) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		f()
		out[i] = time.Since(start)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// pct is the p-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(time.Millisecond)
}

// tail names pct(sorted, 99) for a table by its sample count n: below 100
// samples the 99th percentile is the largest sample, so it is the max.
func tail(n int) string {
	if n < 100 {
		return "max"
	}
	return "p99"
}

// benchCall makes an API call a benchmark times or reads a figure from: a
// reply that is not a success fails the benchmark with its status and
// body, so an error is never timed or printed as a result. out, if not
// nil, gets the JSON reply (or the raw body, for a *[]byte).
func benchCall(t *testing.T, s *server, token, method, path string, body, out any) {
	t.Helper()
	var raw []byte
	code := s.call(token, method, path, body, &raw)
	if code < 200 || code > 299 {
		t.Fatalf("%s %s: %d %.2000s", method, path, code, bytes.TrimSpace(raw))
	}
	if out == nil {
		return
	}
	if b, ok := out.(*[]byte); ok {
		*b = raw
	} else if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s %s: %d %.2000s: %v", method, path, code, raw, err)
	}
}

// benchPut PUTs a body with a content type, as s.putRaw does, failing the
// benchmark with the status and body unless the reply is a success.
func benchPut(t *testing.T, s *server, token, path, ctype string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest("PUT", s.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		t.Fatalf("PUT %s: %d %.2000s", path, resp.StatusCode, bytes.TrimSpace(b))
	}
}

// benchReadyAt waits until the desktop is ready and answers when it
// became so (its ready_at), counted from t0.
func benchReadyAt(t *testing.T, s *server, id string, t0 time.Time) time.Duration {
	t.Helper()
	var d apiv1.Desktop
	benchCall(t, s, adminToken, "GET", "/api/v1/desktops/"+id+"?wait=ready&timeout_s=600", nil, &d)
	if !d.Ready || d.ReadyAt == nil {
		t.Fatalf("desktop %s not ready after 10 minutes: up %q, waiting for %q", id, d.Up, d.WaitingFor)
	}
	return d.ReadyAt.Sub(t0)
}
