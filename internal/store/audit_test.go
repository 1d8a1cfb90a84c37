package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/audit"
)

func auditEntry(at time.Time, owner, subject, desktopID, action string, status int) *audit.Entry {
	return &audit.Entry{ID: audit.NewID(at), At: at, Owner: owner, SubjectOwner: subject, TokenID: "tok_" + owner,
		TokenName: owner + "'s ci", ClientIP: "203.0.113.7", Method: "POST", Route: "POST /api/v1/desktops/:id/stop",
		Action: action, ObjectType: "desktop", ObjectID: desktopID, DesktopID: desktopID, Status: status, DurationMS: 12}
}

func TestAuditAddListPrune(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			base := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
			var all []*audit.Entry
			for i := range 10 {
				e := auditEntry(base.Add(time.Duration(i)*time.Minute), "alice", "alice", "d1", "desktop.stop", 200)
				switch {
				case i == 3:
					e.Owner, e.TokenID = "root", "tok_root" // an admin on alice's desktop
				case i == 4:
					e.Owner, e.SubjectOwner, e.DesktopID, e.ObjectID = "bob", "bob", "d2", "d2"
				case i == 5:
					e.Status, e.ErrorCode, e.Action = 409, "invalid_state", "desktop.start"
				case i == 6:
					e.Action, e.ObjectType, e.ObjectID, e.DesktopID = "token.create", "", "", ""
				}
				all = append(all, e)
			}
			if err := s.AddAudit(ctx, all); err != nil {
				t.Fatal(err)
			}
			got, err := s.ListAudit(ctx, audit.Filter{Limit: 100})
			if err != nil || len(got) != 10 || got[0].ID != all[9].ID || got[9].ID != all[0].ID {
				t.Fatalf("all, newest first: %d %v", len(got), err)
			}
			if g := got[9]; !g.At.Equal(all[0].At) || g.TokenName != "alice's ci" || g.ClientIP != "203.0.113.7" ||
				g.Route != "POST /api/v1/desktops/:id/stop" || g.Status != 200 || g.DurationMS != 12 {
				t.Errorf("read back %+v", g)
			}
			count := func(f audit.Filter) int {
				t.Helper()
				f.Limit = 100
				l, err := s.ListAudit(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				return len(l)
			}
			for name, c := range map[string]struct {
				f    audit.Filter
				want int
			}{
				"alice sees her own and the admin's on her desktop": {audit.Filter{Visible: "alice"}, 9},
				"bob his own":              {audit.Filter{Visible: "bob"}, 1},
				"root, as owner, its call": {audit.Filter{Visible: "root"}, 1},
				"actor":                    {audit.Filter{Actor: "tok_root"}, 1},
				"desktop":                  {audit.Filter{Desktop: "d2"}, 1},
				"action prefix":            {audit.Filter{Action: "desktop."}, 9},
				"action exact":             {audit.Filter{Action: "desktop.start"}, 1},
				"a _ is no wildcard":       {audit.Filter{Action: "desktop_"}, 0},
				"errors":                   {audit.Filter{Outcome: audit.OutcomeError}, 1},
				"ok":                       {audit.Filter{Outcome: audit.OutcomeOK}, 9},
				"since":                    {audit.Filter{Since: base.Add(5 * time.Minute)}, 5},
				"until":                    {audit.Filter{Until: base.Add(5 * time.Minute)}, 5},
				"owner asked, within view": {audit.Filter{Visible: "alice", Owner: "root"}, 1},
			} {
				if n := count(c.f); n != c.want {
					t.Errorf("%s: %d entries, want %d", name, n, c.want)
				}
			}
			// Keyset paging: pages of 3 cover all 10, in order, once.
			var seen []string
			f := audit.Filter{Limit: 3}
			for range 10 {
				l, err := s.ListAudit(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range l {
					seen = append(seen, e.ID)
				}
				if len(l) < 3 {
					break
				}
				f.After = audit.CursorOf(l[len(l)-1])
			}
			if len(seen) != 10 || seen[0] != all[9].ID || seen[9] != all[0].ID {
				t.Errorf("paged: %v", seen)
			}
			n, err := s.PruneAudit(ctx, base.Add(2*time.Minute))
			if err != nil || n != 2 || count(audit.Filter{}) != 8 {
				t.Errorf("prune: %d %v", n, err)
			}
			// Entries with the same id are refused, all of the batch.
			if err := s.AddAudit(ctx, []*audit.Entry{auditEntry(base, "x", "", "", "a", 200), all[9]}); err == nil {
				t.Error("a duplicate id was taken")
			}
			if count(audit.Filter{Owner: "x"}) != 0 {
				t.Error("half a batch was kept")
			}
		})
	}
}

// TestAuditQueryAt100k times a filtered page query over 100,000 entries
// (logged, not asserted).
func TestAuditQueryAt100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 rows: not in -short")
	}
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			base := time.Now().UTC().Add(-30 * 24 * time.Hour)
			const total, batch = 100_000, 1000
			start := time.Now()
			for i := 0; i < total; i += batch {
				es := make([]*audit.Entry, 0, batch)
				for j := i; j < i+batch; j++ {
					owner := fmt.Sprintf("owner%d", j%50)
					status := 200
					if j%20 == 0 {
						status = 409
					}
					es = append(es, auditEntry(base.Add(time.Duration(j)*20*time.Second), owner, owner, fmt.Sprintf("d%d", j%500),
						[]string{"desktop.stop", "desktop.exec", "token.create", "desktop.computer"}[j%4], status))
				}
				if err := s.AddAudit(ctx, es); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: inserted %d entries in %v", db, total, time.Since(start).Round(time.Millisecond))
			for name, f := range map[string]audit.Filter{
				"newest page, all":         {Limit: 100},
				"owner's, desktop actions": {Visible: "owner7", Action: "desktop.", Limit: 100},
				"one desktop's errors":     {Desktop: "d40", Outcome: audit.OutcomeError, Limit: 100},
				"owner's, last week":       {Visible: "owner3", Since: time.Now().Add(-7 * 24 * time.Hour), Limit: 100},
			} {
				t0 := time.Now()
				l, err := s.ListAudit(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(l) > 0 {
					f.After = audit.CursorOf(l[len(l)-1])
					if _, err := s.ListAudit(ctx, f); err != nil {
						t.Fatal(err)
					}
				}
				t.Logf("%s: %s: 2 pages (%d rows on the first) in %v", db, name, len(l), time.Since(t0).Round(time.Microsecond))
			}
		})
	}
}
