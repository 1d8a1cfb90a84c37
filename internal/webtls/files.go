package webtls

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// recheckEvery bounds how often the files are looked at for a change: at
// most once a second, on a handshake.
const recheckEvery = time.Second

// fileCert is a certificate and key from PEM files, loaded again when
// either file changes (a renewal by certbot or an operator's copy),
// without a restart. A pair that does not load keeps the last good one
// in service, and says so in the log.
type fileCert struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // the files' sizes and modification times
	checked time.Time
}

func newFileCert(certFile, keyFile string, log *slog.Logger) (*fileCert, error) {
	f := &fileCert{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := f.stampNow()
	if err != nil {
		return nil, err
	}
	if err := f.load(stamp); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fileCert) get() (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) < recheckEvery {
		return f.cert, nil
	}
	f.checked = time.Now()
	stamp, err := f.stampNow()
	if err != nil {
		f.log.Warn("TLS certificate files unreadable; serving the last one loaded", "err", err)
		return f.cert, nil
	}
	if stamp == f.stamp {
		return f.cert, nil
	}
	if err := f.load(stamp); err != nil {
		// Half-written (the key copied before the certificate): the next
		// handshake after the next change tries again.
		f.log.Warn("TLS certificate files changed but do not load; serving the last one loaded", "err", err)
		return f.cert, nil
	}
	f.log.Info("TLS certificate loaded again", "cert", f.certFile, "not_after", f.cert.Leaf.NotAfter)
	return f.cert, nil
}

// load reads the pair; f.mu is held (or f is new).
func (f *fileCert) load(stamp string) error {
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", f.certFile, f.keyFile, err)
	}
	f.cert, f.stamp = &cert, stamp
	return nil
}

func (f *fileCert) stampNow() (string, error) {
	var stamp string
	for _, name := range []string{f.certFile, f.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return "", fmt.Errorf("TLS certificate file: %w", err)
		}
		stamp += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}
