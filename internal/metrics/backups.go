package metrics

import (
	"github.com/bureau/bureau/internal/desktop"
	"github.com/prometheus/client_golang/prometheus"
)

// backupMetrics count backups as they end.
type backupMetrics struct {
	done     *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	lastGood *prometheus.GaugeVec
}

func newBackupMetrics(reg *prometheus.Registry) *backupMetrics {
	b := &backupMetrics{
		done: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bureau_backups_total", Help: "Backups that ended, by kind (full, incremental) and result (complete, failed).",
		}, []string{"kind", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bureau_backup_bytes_total", Help: "Bytes of disks backups read (read), and bytes they uploaded because the target lacked them (uploaded, compressed and encrypted).",
		}, []string{"direction"}),
		lastGood: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bureau_desktop_last_backup_timestamp_seconds", Help: "When each desktop's newest complete backup (taken by this server since it started) was started, in Unix seconds: alert on its age.",
		}, []string{"desktop", "name", "owner"}),
	}
	reg.MustRegister(b.done, b.bytes, b.lastGood)
	return b
}

// BackupEnded counts a backup that completed or failed.
func (m *Metrics) BackupEnded(b *desktop.Backup) {
	m.backups.done.WithLabelValues(b.Kind, b.State).Inc()
	m.backups.bytes.WithLabelValues("read").Add(float64(b.BytesRead))
	m.backups.bytes.WithLabelValues("uploaded").Add(float64(b.BytesNew))
	if b.State == desktop.BackupComplete {
		m.backups.lastGood.WithLabelValues(b.DesktopID, b.DesktopName, b.Owner).Set(float64(b.StartedAt.Unix()))
	}
}
