package store

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/migrations"
	"github.com/pressly/goose/v3"
)

func TestLoopRequests(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.UnixMilli(time.Now().UnixMilli()).UTC()
			help := &loop.Request{ID: "req_1", DesktopID: "d1", Owner: "alice", Kind: loop.KindHelp, Status: loop.StatusPending,
				Question: "Which account?", Choices: []string{"work", "personal"}, Screenshot: true, AskedBy: "alice/tok_a",
				AskedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			appr := &loop.Request{ID: "req_2", DesktopID: "d1", Owner: "alice", Kind: loop.KindApproval, Status: loop.StatusPending,
				Question: "exec: rm -rf /", AskedBy: "alice/tok_a", AskedAt: t0.Add(time.Second), ExpiresAt: t0.Add(time.Minute), Gated: true,
				Action: &loop.Action{Kind: loop.ActionExec, Summary: "exec: rm -rf /", Rule: "exec[0]: rm", Detail: json.RawMessage(`{"cmd":"rm -rf /"}`)}}
			other := &loop.Request{ID: "req_3", DesktopID: "d2", Owner: "bob", Kind: loop.KindHelp, Status: loop.StatusPending,
				Question: "?", AskedBy: "bob/tok_b", AskedAt: t0.Add(2 * time.Second), ExpiresAt: t0.Add(time.Hour)}
			for _, r := range []*loop.Request{help, appr, other} {
				if err := s.AddRequest(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.GetRequest(ctx, "req_1")
			if err != nil {
				t.Fatal(err)
			}
			if got.Question != help.Question || len(got.Choices) != 2 || got.Choices[1] != "personal" || !got.Screenshot ||
				!got.AskedAt.Equal(t0) || !got.ExpiresAt.Equal(help.ExpiresAt) || got.Action != nil || got.Gated || got.DecidedAt != nil {
				t.Fatalf("help round trip: %+v", got)
			}
			got, _ = s.GetRequest(ctx, "req_2")
			if got.Action == nil || got.Action.Rule != "exec[0]: rm" || string(got.Action.Detail) != `{"cmd":"rm -rf /"}` || !got.Gated || got.Choices != nil {
				t.Fatalf("approval round trip: %+v %+v", got, got.Action)
			}
			if _, err := s.GetRequest(ctx, "req_none"); !errors.Is(err, loop.ErrNotFound) {
				t.Fatalf("unknown request: %v", err)
			}

			list, err := s.ListRequests(ctx, loop.Filter{})
			if err != nil || len(list) != 3 || list[0].ID != "req_3" || list[2].ID != "req_1" {
				t.Fatalf("list all, newest first: %v %v", ids(list), err)
			}
			if list, _ = s.ListRequests(ctx, loop.Filter{Owner: "alice", Kind: loop.KindApproval}); len(list) != 1 || list[0].ID != "req_2" {
				t.Fatalf("alice's approvals: %v", ids(list))
			}
			if list, _ = s.ListRequests(ctx, loop.Filter{DesktopID: "d1", Limit: 1}); len(list) != 1 || list[0].ID != "req_2" {
				t.Fatalf("limit: %v", ids(list))
			}
			if list, _ = s.ListRequests(ctx, loop.Filter{Status: loop.StatusAnswered}); len(list) != 0 || list == nil {
				t.Fatalf("none answered: %v", list)
			}

			// Two deciders: one wins, the other is told how it ended.
			at := t0.Add(3 * time.Second)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			outs := make([]*loop.Request, 2)
			for i, status := range []string{loop.StatusApproved, loop.StatusDenied} {
				wg.Go(func() {
					d := *appr
					d.Status, d.DecidedBy, d.DecidedAt, d.Reason = status, "console/ct_"+status, &at, "because "+status
					outs[i], errs[i] = s.DecideRequest(ctx, &d)
				})
			}
			wg.Wait()
			won := 0
			for i := range errs {
				if errs[i] == nil {
					won++
				} else if !errors.Is(errs[i], loop.ErrAlreadyDecided) || outs[i] == nil || outs[i].Status == loop.StatusPending {
					t.Fatalf("loser: %+v %v", outs[i], errs[i])
				}
			}
			if won != 1 {
				t.Fatalf("%d deciders won: %v", won, errs)
			}
			got, _ = s.GetRequest(ctx, "req_2")
			if got.Status == loop.StatusPending || got.DecidedAt == nil || !got.DecidedAt.Equal(at) || got.Reason != "because "+got.Status {
				t.Fatalf("decided: %+v", got)
			}
			d := *help
			d.Status, d.DecidedBy, d.DecidedAt, d.Answer, d.Choice = loop.StatusAnswered, "alice/tok_c", &at, "work", true
			if _, err := s.DecideRequest(ctx, &d); err != nil {
				t.Fatal(err)
			}
			if got, _ = s.GetRequest(ctx, "req_1"); got.Answer != "work" || !got.Choice || got.DecidedBy != "alice/tok_c" {
				t.Fatalf("answered: %+v", got)
			}
			if list, _ = s.ListRequests(ctx, loop.Filter{Status: loop.StatusPending}); len(list) != 1 || list[0].ID != "req_3" {
				t.Fatalf("pending: %v", ids(list))
			}
			d.ID = "req_none"
			if _, err := s.DecideRequest(ctx, &d); !errors.Is(err, loop.ErrNotFound) {
				t.Fatalf("decide unknown: %v", err)
			}
		})
	}
}

func ids(list []*loop.Request) []string {
	var out []string
	for _, r := range list {
		out = append(out, r.ID)
	}
	return out
}

func TestApprovalPolicies(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			if p, err := s.ApprovalPolicy(ctx, "d1"); p != nil || err != nil {
				t.Fatalf("none yet: %q %v", p, err)
			}
			if err := s.SetApprovalPolicy(ctx, "d1", []byte(`{"file_delete":true}`)); err != nil {
				t.Fatal(err)
			}
			if err := s.SetApprovalPolicy(ctx, "d1", []byte(`{"exec":["rm"]}`)); err != nil {
				t.Fatal(err)
			}
			if p, err := s.ApprovalPolicy(ctx, "d1"); string(p) != `{"exec":["rm"]}` || err != nil {
				t.Fatalf("replaced: %q %v", p, err)
			}
			if p, _ := s.ApprovalPolicy(ctx, "d2"); p != nil {
				t.Fatalf("another desktop's: %q", p)
			}
			if err := s.DeleteApprovalPolicy(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteApprovalPolicy(ctx, "d1"); err != nil {
				t.Fatalf("deleting none: %v", err)
			}
			if p, _ := s.ApprovalPolicy(ctx, "d1"); p != nil {
				t.Fatalf("deleted: %q", p)
			}
		})
	}
}

func TestPeopleMigratesDownAndUp(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			dialect := goose.DialectSQLite3
			if s.postgres {
				dialect = goose.DialectPostgres
			}
			p, err := goose.NewProvider(dialect, s.db, migrations.FS)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.DownTo(ctx, 29); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{`SELECT name FROM console_tokens`, `SELECT id FROM loop_requests`, `SELECT policy FROM approval_policies`} {
				if _, err := s.exec(ctx, q); err == nil {
					t.Errorf("%s: still there after the down migration", q)
				}
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.SetApprovalPolicy(ctx, "d1", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
