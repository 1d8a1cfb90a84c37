package metrics

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestBackupMetrics(t *testing.T) {
	m := New(fakeDesktops{}, fakeVMs{}, slog.New(slog.DiscardHandler))
	at := time.Unix(1_800_000_000, 0)
	m.BackupEnded(&desktop.Backup{DesktopID: "a1", DesktopName: "agent-1", Owner: "alice", Kind: "full", State: "complete", BytesRead: 100, BytesNew: 40, StartedAt: at})
	m.BackupEnded(&desktop.Backup{DesktopID: "a1", DesktopName: "agent-1", Owner: "alice", Kind: "incremental", State: "failed", BytesRead: 5, StartedAt: at.Add(time.Hour)})
	out := scrape(t, m)
	for _, want := range []string{
		`bureau_backups_total{kind="full",result="complete"} 1`,
		`bureau_backups_total{kind="incremental",result="failed"} 1`,
		`bureau_backup_bytes_total{direction="read"} 105`,
		`bureau_backup_bytes_total{direction="uploaded"} 40`,
		`bureau_desktop_last_backup_timestamp_seconds{desktop="a1",name="agent-1",owner="alice"} 1.8e+09`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	m.ForgetDesktop("a1")
	if strings.Contains(scrape(t, m), `bureau_desktop_last_backup_timestamp_seconds{desktop="a1"`) {
		t.Error("a deleted desktop's last backup is still reported")
	}
}
