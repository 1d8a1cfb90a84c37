package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

func TestStepsRoundTrip(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			if n, err := s.LastStep(ctx, "d1"); err != nil || n != 0 {
				t.Fatalf("no steps yet: %d %v", n, err)
			}
			for i := int64(1); i <= 3; i++ {
				st := &steps.Step{DesktopID: "d1", Seq: i, At: now.Add(time.Duration(i) * time.Second), DurationMS: 40 + i,
					Actor: "alice/tok_1", Kind: steps.KindComputer, Input: json.RawMessage(`{"actions":[{"action":"left_click","coordinate":[1,2]}]}`),
					Result: json.RawMessage(`{"results":[]}`), Status: 200, Before: i != 2, After: true}
				if err := s.AddStep(ctx, st); err != nil {
					t.Fatal(err)
				}
			}
			other := &steps.Step{DesktopID: "d2", Seq: 1, At: now, Kind: steps.KindExec, Input: json.RawMessage(`{}`), Result: json.RawMessage(`null`), Status: 500, Error: "boom"}
			if err := s.AddStep(ctx, other); err != nil {
				t.Fatal(err)
			}
			if err := s.AddStep(ctx, &steps.Step{DesktopID: "d1", Seq: 2, At: now, Input: json.RawMessage(`{}`), Result: json.RawMessage(`null`)}); !errors.Is(err, steps.ErrTaken) {
				t.Errorf("a number taken twice: %v", err)
			}
			if n, _ := s.LastStep(ctx, "d1"); n != 3 {
				t.Errorf("last step %d", n)
			}
			list, err := s.ListSteps(ctx, "d1", steps.Page{After: 1, Limit: 10})
			if err != nil || len(list) != 2 || list[0].Seq != 2 || list[1].Seq != 3 {
				t.Fatalf("after 1: %+v %v", list, err)
			}
			got := list[0]
			if !got.At.Equal(now.Add(2*time.Second)) || got.DurationMS != 42 || got.Actor != "alice/tok_1" || got.Kind != steps.KindComputer ||
				got.Before || !got.After || got.Status != 200 || string(got.Result) != `{"results":[]}` {
				t.Errorf("read back %+v", got)
			}
			var in map[string]any
			if err := json.Unmarshal(got.Input, &in); err != nil || in["actions"] == nil {
				t.Errorf("input %s", got.Input)
			}
			if one, err := s.GetStep(ctx, "d2", 1); err != nil || one.Error != "boom" || one.Status != 500 {
				t.Errorf("d2's step: %+v %v", one, err)
			}
			if _, err := s.GetStep(ctx, "d1", 9); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("a missing step: %v", err)
			}
			if l, _ := s.ListSteps(ctx, "d1", steps.Page{Limit: 1}); len(l) != 1 || l[0].Seq != 1 {
				t.Errorf("limit 1: %+v", l)
			}
			if l, _ := s.ListSteps(ctx, "d1", steps.Page{Limit: 2, Newest: true}); len(l) != 2 || l[0].Seq != 2 || l[1].Seq != 3 {
				t.Errorf("the newest 2, oldest first: %+v", l)
			}
			if l, _ := s.ListSteps(ctx, "d1", steps.Page{Before: 3, Limit: 1, Newest: true}); len(l) != 1 || l[0].Seq != 2 {
				t.Errorf("the newest before 3: %+v", l)
			}
			s.DeleteSteps(ctx, "d1", 2)
			if l, _ := s.ListSteps(ctx, "d1", steps.Page{Limit: 10}); len(l) != 1 || l[0].Seq != 3 {
				t.Errorf("after pruning through 2: %+v", l)
			}
			s.DeleteSteps(ctx, "d1", -1)
			if l, _ := s.ListSteps(ctx, "d1", steps.Page{Limit: 10}); len(l) != 0 {
				t.Errorf("after deleting all: %+v", l)
			}
			if l, _ := s.ListSteps(ctx, "d2", steps.Page{Limit: 10}); len(l) != 1 {
				t.Errorf("another desktop's steps went too: %+v", l)
			}
		})
	}
}
