package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

func TestCheckpointPolicyRoundTrip(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			p, err := s.CheckpointPolicy(ctx, "d1")
			if err != nil || p.On() || p.Keep != steps.DefaultKeep || p.Before == nil {
				t.Fatalf("none set: %+v %v", p, err)
			}
			want := steps.CheckpointPolicy{EverySteps: 3, Before: []string{steps.KindExec, steps.KindFileDelete}, Memory: true, Keep: 7}
			if err := s.SetCheckpointPolicy(ctx, "d1", want); err != nil {
				t.Fatal(err)
			}
			if got, err := s.CheckpointPolicy(ctx, "d1"); err != nil || got.EverySteps != 3 || !got.Memory || got.Keep != 7 ||
				len(got.Before) != 2 || got.Before[1] != steps.KindFileDelete {
				t.Errorf("read back %+v %v", got, err)
			}
			// Replaced whole.
			if err := s.SetCheckpointPolicy(ctx, "d1", steps.CheckpointPolicy{Before: []string{}, Keep: 1}); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.CheckpointPolicy(ctx, "d1"); got.On() || got.Memory || got.Keep != 1 || len(got.Before) != 0 {
				t.Errorf("replaced %+v", got)
			}
			if got, _ := s.CheckpointPolicy(ctx, "d2"); got.On() {
				t.Errorf("another desktop's %+v", got)
			}
			if err := s.DeleteCheckpointPolicy(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.CheckpointPolicy(ctx, "d1"); got.Keep != steps.DefaultKeep {
				t.Errorf("after delete %+v", got)
			}

			// A step says why its automatic checkpoint was not taken.
			st := &steps.Step{DesktopID: "cp", Seq: 1, At: time.Now(), Kind: steps.KindExec, Input: json.RawMessage(`{}`),
				Result: json.RawMessage(`null`), Status: 200, CheckpointError: "the desktop is busy"}
			if err := s.AddStep(ctx, st); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetStep(ctx, "cp", 1); err != nil || got.CheckpointError != "the desktop is busy" || got.Checkpoint != "" {
				t.Errorf("step %+v %v", got, err)
			}
		})
	}
}
