package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/images"
)

// backupPoll is how often a backup followed with --wait is read again.
var backupPoll = time.Second

// followBackup reads the backup again every backupPoll until it ends,
// showing its progress on errw, then says how it went on out; a failed
// backup is an error saying why.
func followBackup(ctx context.Context, c *client, b *apiv1.Backup, out, errw io.Writer) error {
	p := progressTo(errw)
	var pace backupPace
	for b.State == "running" {
		p.report(backupProgress(*b, &pace, time.Now()))
		select {
		case <-ctx.Done():
			p.finish()
			return ctx.Err()
		case <-time.After(backupPoll):
		}
		// A fresh value: fields left out now must not keep old values.
		var now apiv1.Backup
		if err := c.do(ctx, "GET", "/api/v1/backups/"+b.ID, nil, &now); err != nil {
			p.finish()
			return err
		}
		*b = now
	}
	p.finish()
	if b.State != "complete" {
		return fmt.Errorf("backup %s of desktop %s %s: %s", b.ID, b.DesktopName, b.State, b.Error)
	}
	fmt.Fprintln(out, backupSummary(*b))
	return nil
}

// progressTo is a progress printer on w (one line kept up to date when w
// is a terminal).
func progressTo(w io.Writer) *progressPrinter {
	if f, ok := w.(*os.File); ok {
		return newProgressPrinter(f)
	}
	return &progressPrinter{w: w, now: time.Now,
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// backupPace estimates the time left from the reading seen since the
// first report of it.
type backupPace struct {
	at   time.Time
	read int64
}

// backupProgress is a running backup as a progress report: marking the
// disk (waiting for the desktop, or for another backup's turn), then
// reading it, with what was new to the target and uploaded.
func backupProgress(b apiv1.Backup, pace *backupPace, now time.Time) images.Progress {
	if b.Consistency == "" {
		return images.Progress{Phase: "backup", Detail: "marking the data disk"}
	}
	pr := images.Progress{Phase: "backup",
		Detail: fmt.Sprintf("%s/%s read, %d new chunks, %s uploaded", byteSize(b.BytesRead), byteSize(b.ReadTotal), b.ChunksNew, byteSize(b.BytesNew))}
	if b.ReadTotal > 0 {
		pr.Percent = 100 * float64(b.BytesRead) / float64(b.ReadTotal)
	}
	if pace.at.IsZero() {
		pace.at, pace.read = now, b.BytesRead
	} else if done, took := b.BytesRead-pace.read, now.Sub(pace.at); done > 0 && took > 0 {
		pr.ETA = time.Duration(float64(took) * float64(b.ReadTotal-b.BytesRead) / float64(done))
	}
	return pr
}

// backupSummary reads e.g. "incremental backup 3f… of desktop agent-1
// complete (on top of 9c…), filesystem-consistent: 212.0 MiB read, 34 of
// 3090 chunks new (10.2 MiB uploaded) in 8s".
func backupSummary(b apiv1.Backup) string {
	var why string
	switch {
	case b.Kind == "incremental" && b.Parent != "":
		why = " (on top of " + b.Parent + ")"
	case b.WhyFull != "":
		why = " (" + b.WhyFull + ")"
	}
	consistency := map[string]string{"filesystem": "filesystem-consistent (the guest's filesystems frozen)",
		"crash":   "crash-consistent (the guest agent did not answer: as after a power cut)",
		"stopped": "of the desktop stopped"}[b.Consistency]
	took := ""
	if b.FinishedAt != nil {
		took = " in " + shortDuration(b.FinishedAt.Sub(b.StartedAt))
	}
	return strings.TrimSpace(fmt.Sprintf("%s backup %s of desktop %s complete%s, %s: %s read, %d of %d chunks new (%s uploaded)%s",
		b.Kind, b.ID, b.DesktopName, why, consistency, byteSize(b.BytesRead), b.ChunksNew, b.Chunks, byteSize(b.BytesNew), took))
}
