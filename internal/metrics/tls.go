package metrics

import (
	"github.com/bureau/bureau/internal/webtls"
	"github.com/prometheus/client_golang/prometheus"
)

// CountCertificates reports bureau's HTTPS certificates (status is asked
// at scrape time): when each expires, and whether the last attempt to get
// it failed (auto mode), so an alert can fire well before browsers
// refuse it.
func (m *Metrics) CountCertificates(status func() webtls.Status) {
	m.reg.MustRegister(&certCollector{status: status})
}

var (
	certExpiry = prometheus.NewDesc("bureau_tls_certificate_expiry_timestamp_seconds",
		"When each of bureau's HTTPS certificates expires (Unix time).", []string{"name"}, nil)
	certFailing = prometheus.NewDesc("bureau_tls_certificate_failing",
		"1 while the last attempt to get a certificate failed (auto mode), else 0.", []string{"name"}, nil)
)

type certCollector struct{ status func() webtls.Status }

func (c *certCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- certExpiry
	ch <- certFailing
}

func (c *certCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.status().Names {
		if !n.NotAfter.IsZero() {
			ch <- prometheus.MustNewConstMetric(certExpiry, prometheus.GaugeValue, float64(n.NotAfter.Unix()), n.Name)
		}
		failing := 0.0
		if n.LastError != "" {
			failing = 1
		}
		ch <- prometheus.MustNewConstMetric(certFailing, prometheus.GaugeValue, failing, n.Name)
	}
}
