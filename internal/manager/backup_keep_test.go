package manager

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestKeepers: retention keeps the newest always, the KeepLast newest, and
// the newest backup of each of the newest hours, days and weeks asked for.
func TestKeepers(t *testing.T) {
	// Backups every 20 minutes for three days, newest first.
	end := time.Date(2026, 11, 27, 12, 10, 0, 0, time.UTC)
	var list []*desktop.Backup
	for i := range 3 * 24 * 3 {
		list = append(list, &desktop.Backup{ID: fmt.Sprint(i), StartedAt: end.Add(-time.Duration(i) * 20 * time.Minute)})
	}
	kept := func(s desktop.BackupSchedule) []int {
		var out []int
		k := keepers(list, &s)
		for i := range list {
			if k[list[i].ID] {
				out = append(out, i)
			}
		}
		return out
	}
	if got := kept(desktop.BackupSchedule{}); !slices.Equal(got, []int{0}) {
		t.Errorf("no retention keeps only the newest: %v", got)
	}
	if got := kept(desktop.BackupSchedule{KeepLast: 4}); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("keep last 4: %v", got)
	}
	// 12:10 is hour 12's only backup; 11:50 (i=1) is hour 11's newest, 10:50 (i=4) hour 10's.
	if got := kept(desktop.BackupSchedule{KeepHourly: 3}); !slices.Equal(got, []int{0, 1, 4}) {
		t.Errorf("keep 3 hourly: %v", got)
	}
	// Day 27 (i=0); day 26's newest is 23:50 (i=37); day 25's 23:50 (i=109).
	if got := kept(desktop.BackupSchedule{KeepDaily: 3}); !slices.Equal(got, []int{0, 37, 109}) {
		t.Errorf("keep 3 daily: %v", got)
	}
	// 2026-11-27 is a Friday: the week started on Monday 23rd holds every backup.
	if got := kept(desktop.BackupSchedule{KeepWeekly: 4}); !slices.Equal(got, []int{0}) {
		t.Errorf("keep 4 weekly: %v", got)
	}
	if got := keepers(nil, &desktop.BackupSchedule{KeepLast: 3}); len(got) != 0 {
		t.Errorf("nothing to keep of nothing: %v", got)
	}
}
