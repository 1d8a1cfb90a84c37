package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
)

func TestRecordingsRoundTrip(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			a := &recording.Recording{ID: "rec_a", DesktopID: "d1", State: recording.StateRecording, Actor: "alice/tok_1", FPS: 2, MaxSeconds: 60, Width: 1280, Height: 800, StartedAt: now}
			b := &recording.Recording{ID: "rec_b", DesktopID: "d1", State: recording.StateRecording, FPS: 5, MaxSeconds: 10, StartedAt: now.Add(time.Minute)}
			for _, r := range []*recording.Recording{b, a} {
				if err := s.InsertRecording(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if l, err := s.UnfinishedRecordings(ctx); err != nil || len(l) != 2 {
				t.Fatalf("unfinished: %v %v", l, err)
			}
			end := now.Add(30 * time.Second)
			a.State, a.Frames, a.SizeBytes, a.EndedWhy, a.EndedAt = recording.StateDone, 42, 12345, "stopped by alice", &end
			if err := s.UpdateRecording(ctx, a); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetRecording(ctx, "d1", "rec_a")
			if err != nil || got.State != recording.StateDone || got.Frames != 42 || got.SizeBytes != 12345 || got.Width != 1280 ||
				got.Actor != "alice/tok_1" || !got.StartedAt.Equal(now) || got.EndedAt == nil || !got.EndedAt.Equal(end) {
				t.Fatalf("read back %+v %v", got, err)
			}
			if _, err := s.GetRecording(ctx, "d2", "rec_a"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("another desktop's recording: %v", err)
			}
			if l, _ := s.ListRecordings(ctx, "d1"); len(l) != 2 || l[0].ID != "rec_a" {
				t.Errorf("list (oldest first): %+v", l)
			}
			if l, _ := s.UnfinishedRecordings(ctx); len(l) != 1 || l[0].ID != "rec_b" {
				t.Errorf("unfinished after one ended: %+v", l)
			}
			s.DeleteRecording(ctx, "rec_b")
			if l, _ := s.ListRecordings(ctx, "d1"); len(l) != 1 {
				t.Errorf("after delete: %+v", l)
			}
		})
	}
}
