package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestBackupRecordsOnBothDatabases(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			r := s.Backups()
			at := time.Now().UTC().Truncate(time.Millisecond)
			tg := &desktop.BackupTarget{ID: "t1", Name: "offsite", Kind: desktop.TargetS3, CreatedAt: at, CreatedBy: "admin",
				S3: desktop.S3Location{Endpoint: "127.0.0.1:9000", Bucket: "b", Prefix: "p/", AccessKey: "ak", SecretKey: "never kept here", Insecure: true}}
			if err := r.CreateTarget(ctx, tg, "sealed-secret"); err != nil {
				t.Fatal(err)
			}
			if err := r.CreateTarget(ctx, &desktop.BackupTarget{ID: "t2", Name: "offsite", Kind: desktop.TargetDir, Dir: "/x", CreatedAt: at}, ""); !errors.Is(err, desktop.ErrNameTaken) {
				t.Fatalf("a second target of the same name: %v", err)
			}
			for _, key := range []string{"t1", "offsite"} {
				got, sealed, err := r.Target(ctx, key)
				if err != nil || got.S3.Bucket != "b" || got.S3.SecretKey != "" || sealed != "sealed-secret" || !got.S3.Insecure || !got.CreatedAt.Equal(at) {
					t.Fatalf("target by %s: %+v %q %v", key, got, sealed, err)
				}
			}
			if _, _, err := r.Target(ctx, "nope"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("unknown target: %v", err)
			}
			b := &desktop.Backup{ID: "b1", DesktopID: "d1", DesktopName: "dev", Owner: "alice", TargetID: "t1", State: desktop.BackupRunning,
				Kind: desktop.BackupFull, WhyFull: "the first backup", Mark: "bureau-backup-b1", DiskBytes: 1 << 30, Image: "img", VCPUs: 2, MemoryMiB: 2048, StartedAt: at}
			if err := r.CreateBackup(ctx, b); err != nil {
				t.Fatal(err)
			}
			b2 := *b
			b2.ID, b2.Owner, b2.StartedAt = "b2", "bob", at.Add(time.Second)
			if err := r.CreateBackup(ctx, &b2); err != nil {
				t.Fatal(err)
			}
			done := at.Add(2 * time.Second)
			b.State, b.BytesRead, b.ReadTotal, b.Chunks, b.ChunksNew, b.BytesNew, b.FinishedAt, b.Consistency = desktop.BackupComplete, 5, 5, 3, 2, 4, &done, desktop.ConsistencyFilesystem
			if err := r.UpdateBackup(ctx, b); err != nil {
				t.Fatal(err)
			}
			got, err := r.GetBackup(ctx, "b1")
			if err != nil || got.State != desktop.BackupComplete || got.ChunksNew != 2 || got.FinishedAt == nil || !got.FinishedAt.Equal(done) || got.Mark != b.Mark || got.Consistency != desktop.ConsistencyFilesystem {
				t.Fatalf("after update: %+v %v", got, err)
			}
			if l, err := r.ListBackups(ctx, desktop.BackupFilter{Owner: "alice"}); err != nil || len(l) != 1 || l[0].ID != "b1" {
				t.Fatalf("alice's: %v %v", l, err)
			}
			if l, err := r.ListBackups(ctx, desktop.BackupFilter{DesktopID: "d1"}); err != nil || len(l) != 2 || l[0].ID != "b2" {
				t.Fatalf("newest first: %v %v", l, err)
			}
			if n, err := r.FailRunning(ctx, "bureau stopped during the backup"); err != nil || n != 1 {
				t.Fatalf("fail running: %d %v", n, err)
			}
			if got, _ := r.GetBackup(ctx, "b2"); got.State != desktop.BackupFailed || got.Error == "" || got.FinishedAt == nil {
				t.Fatalf("interrupted backup: %+v", got)
			}
			if err := r.DeleteTarget(ctx, "t1"); err != nil {
				t.Fatal(err)
			}
			if l, _ := r.ListBackups(ctx, desktop.BackupFilter{}); len(l) != 0 {
				t.Fatalf("backups of a deleted target are still listed: %v", l)
			}
		})
	}
}

func TestBackupSchedulesOnBothDatabases(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			r := s.Backups()
			at := time.Now().UTC().Truncate(time.Millisecond)
			sc := &desktop.BackupSchedule{DesktopID: "d1", TargetID: "t1", EveryMinutes: 60, KeepHourly: 24, KeepDaily: 7, KeepWeekly: 4,
				NextAt: at.Add(time.Hour), UpdatedAt: at, UpdatedBy: "alice"}
			if err := r.PutSchedule(ctx, sc); err != nil {
				t.Fatal(err)
			}
			sc.EveryMinutes, sc.KeepLast, sc.NextAt = 5, 3, at.Add(-time.Minute)
			if err := r.PutSchedule(ctx, sc); err != nil {
				t.Fatalf("replace: %v", err)
			}
			got, err := r.Schedule(ctx, "d1")
			if err != nil || got.EveryMinutes != 5 || got.KeepLast != 3 || got.KeepHourly != 24 || !got.NextAt.Equal(at.Add(-time.Minute)) {
				t.Fatalf("schedule: %+v %v", got, err)
			}
			if due, err := r.DueSchedules(ctx, at); err != nil || len(due) != 1 || due[0].DesktopID != "d1" {
				t.Fatalf("due: %v %v", due, err)
			}
			if err := r.ScheduleNext(ctx, "d1", at.Add(5*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if due, _ := r.DueSchedules(ctx, at); len(due) != 0 {
				t.Fatalf("due after moving it on: %v", due)
			}
			if err := r.DeleteSchedule(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Schedule(ctx, "d1"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("a deleted schedule: %v", err)
			}
		})
	}
}
