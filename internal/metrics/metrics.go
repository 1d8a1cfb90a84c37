// Package metrics exposes bureau to Prometheus: per-desktop resource use
// read from the hypervisor at scrape time, desktop states, API latency and
// operation durations.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Desktops lists desktops.
type Desktops interface {
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// VMs reports the resource figures of running VMs by domain name.
type VMs interface {
	Stats(ctx context.Context) (map[string]*desktop.VMStats, error)
}

// Viewers counts console viewers per desktop.
type Viewers interface {
	Viewers() map[string]int
}

// Metrics owns bureau's Prometheus registry.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	ops      *prometheus.HistogramVec
	console  *prometheus.CounterVec
	urls     *prometheus.HistogramVec
	urlCodes *prometheus.CounterVec
	urlBytes *prometheus.CounterVec
	steps    *prometheus.CounterVec
	backups  *backupMetrics
	coll     *collector
}

// SetViewers tells the metrics where console viewers are counted.
func (m *Metrics) SetViewers(v Viewers) { m.coll.viewers = v }

// New registers bureau's metrics.
func New(desktops Desktops, vms VMs, log *slog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bureau_http_request_duration_seconds", Help: "API request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "code"}),
		ops: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bureau_operation_duration_seconds", Help: "Desktop operation durations (create, start, stop, hibernate, resume, snapshot, revert…).",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}, []string{"operation", "result"}),
		console: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bureau_console_bytes_total", Help: "Bytes through the console proxy, to_browser (display) and to_desktop (input).",
		}, []string{"direction"}),
	}
	m.urls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bureau_live_url_request_duration_seconds", Help: "Latency of requests to live URLs, by desktop and port (until the answer's headers; a WebSocket until it closes).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
	}, []string{"desktop", "port"})
	m.urlCodes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bureau_live_url_requests_total", Help: "Requests to live URLs by desktop, port and status code (401: refused sign-in, 503: the desktop was waking).",
	}, []string{"desktop", "port", "code"})
	m.urlBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bureau_live_url_bytes_total", Help: "Bytes through live URLs: to_app (request bodies) and to_client (answers).",
	}, []string{"desktop", "port", "direction"})
	m.steps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bureau_steps_total", Help: "Steps recorded in desktops' step logs, by kind (computer, exec, file_write, file_delete, clipboard) and result (ok, error); its rate is the step rate.",
	}, []string{"kind", "result"})
	m.backups = newBackupMetrics(m.reg)
	m.coll = &collector{desktops: desktops, vms: vms, log: log}
	m.reg.MustRegister(m.requests, m.ops, m.console, m.urls, m.urlCodes, m.urlBytes, m.steps, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), m.coll)
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Timeout: 20 * time.Second})
}

// ObserveRequest records one API request.
func (m *Metrics) ObserveRequest(method, route string, status int, took time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(took.Seconds())
}

// ConsoleBytes counts bytes through the console proxy.
func (m *Metrics) ConsoleBytes(direction string, n int) {
	m.console.WithLabelValues(direction).Add(float64(n))
}

// ObserveLiveURL records one request to a desktop's live URL.
func (m *Metrics) ObserveLiveURL(desktopID string, port, status int, toApp, toClient int64, took time.Duration) {
	p := strconv.Itoa(port)
	m.urls.WithLabelValues(desktopID, p).Observe(took.Seconds())
	m.urlCodes.WithLabelValues(desktopID, p, strconv.Itoa(status)).Inc()
	m.urlBytes.WithLabelValues(desktopID, p, "to_app").Add(float64(toApp))
	m.urlBytes.WithLabelValues(desktopID, p, "to_client").Add(float64(toClient))
}

// CountRecordings reports the recordings under way (n is asked at
// scrape time).
func (m *Metrics) CountRecordings(n func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bureau_recordings_active", Help: "Recordings of desktops' screens under way.",
	}, func() float64 { return float64(n()) }))
}

// CountFramebuffers reports the live framebuffers bureau keeps (n is asked
// at scrape time).
func (m *Metrics) CountFramebuffers(n func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bureau_framebuffers_live", Help: "Desktops whose screen bureau keeps a live copy of (RFB clients on their displays).",
	}, func() float64 { return float64(n()) }))
}

// StepRecorded counts a step of a desktop's step log.
func (m *Metrics) StepRecorded(kind string, ok bool) {
	result := "ok"
	if !ok {
		result = "error"
	}
	m.steps.WithLabelValues(kind, result).Inc()
}

// ForgetDesktop drops a deleted desktop's live-URL series.
func (m *Metrics) ForgetDesktop(desktopID string) {
	l := prometheus.Labels{"desktop": desktopID}
	m.urls.DeletePartialMatch(l)
	m.urlCodes.DeletePartialMatch(l)
	m.urlBytes.DeletePartialMatch(l)
	m.backups.lastGood.DeletePartialMatch(l)
}

// ObserveOperation records one finished desktop operation.
func (m *Metrics) ObserveOperation(op string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.ops.WithLabelValues(op, result).Observe(took.Seconds())
}
