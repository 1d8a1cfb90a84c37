package metrics

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/webtls"
)

func TestCertificateMetrics(t *testing.T) {
	m := New(fakeDesktops{}, fakeVMs{}, slog.New(slog.DiscardHandler))
	at := time.Unix(1800000000, 0)
	m.CountCertificates(func() webtls.Status {
		return webtls.Status{Mode: webtls.ModeAuto, Names: []webtls.NameStatus{
			{Name: "bureau.example.com", NotAfter: at},
			{Name: "3000-abc.bureau.example.com", LastError: "rate limited"},
		}}
	})
	out := scrape(t, m)
	for _, want := range []string{
		`bureau_tls_certificate_expiry_timestamp_seconds{name="bureau.example.com"} 1.8e+09`,
		`bureau_tls_certificate_failing{name="bureau.example.com"} 0`,
		`bureau_tls_certificate_failing{name="3000-abc.bureau.example.com"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, `expiry_timestamp_seconds{name="3000-abc`) {
		t.Error("an expiry for a certificate never got")
	}
}
