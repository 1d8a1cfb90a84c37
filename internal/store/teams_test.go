package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
)

// TestTeams runs a team's life through the team service over each
// database: created, listed by member, members added, changed, removed,
// owners' names refused, deleted.
func TestTeams(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			svc := teams.New(s.Teams())
			now := time.Now().UTC()
			if err := s.CreateToken(ctx, &desktop.Token{ID: "t1", Owner: "alice", Hash: "h1", Scope: desktop.ScopeOwner, CreatedAt: now,
				Role: "member", Member: "bob", MemberScope: "admin"}); err != nil {
				t.Fatal(err)
			}
			if tok, err := s.TokenByID(ctx, "t1"); err != nil || tok.Role != "member" || tok.Member != "bob" || tok.MemberScope != "admin" {
				t.Fatalf("token's role and member: %+v, %v", tok, err)
			}
			if _, err := svc.Create(ctx, "alice", "bob"); !errors.Is(err, desktop.ErrNameTaken) {
				t.Errorf("a team named as an owner of tokens: %v, want name taken", err)
			}
			if err := s.CreateDesktop(ctx, newDesktop("d1", "carol", "x")); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Create(ctx, "carol", "bob"); !errors.Is(err, desktop.ErrNameTaken) {
				t.Errorf("a team named as an owner of desktops: %v, want name taken", err)
			}
			team, err := svc.Create(ctx, "ops", "alice")
			if err != nil || team.RoleOf("alice") != teams.RoleAdmin {
				t.Fatalf("create: %+v, %v", team, err)
			}
			if _, err := svc.Create(ctx, "ops", "bob"); !errors.Is(err, desktop.ErrNameTaken) {
				t.Errorf("a second team ops: %v", err)
			}
			if _, err := svc.Create(ctx, "other", "bob"); err != nil {
				t.Fatal(err)
			}
			if was, err := svc.SetMember(ctx, "ops", "bob", teams.RoleViewer, "alice"); err != nil || was != "" {
				t.Fatalf("add bob: %v %v", was, err)
			}
			if was, err := svc.SetMember(ctx, "ops", "bob", teams.RoleMember, "alice"); err != nil || was != teams.RoleViewer {
				t.Fatalf("raise bob: %v %v", was, err)
			}
			if r, err := svc.RoleOf(ctx, "ops", "bob"); err != nil || r != teams.RoleMember {
				t.Errorf("bob's role: %v %v", r, err)
			}
			if _, err := svc.RoleOf(ctx, "ops", "carol"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("carol's role: %v, want not found", err)
			}
			mine, err := svc.List(ctx, "bob")
			if err != nil || len(mine) != 2 || mine[0].Name != "ops" || len(mine[0].Members) != 2 || mine[1].Name != "other" {
				t.Errorf("bob's teams: %+v, %v", mine, err)
			}
			if all, err := svc.List(ctx, ""); err != nil || len(all) != 2 {
				t.Errorf("all teams: %v, %v", all, err)
			}
			var la *teams.LastAdminError
			if _, err := svc.SetMember(ctx, "ops", "alice", teams.RoleMember, "alice"); !errors.As(err, &la) {
				t.Errorf("lowering the last admin: %v", err)
			}
			if _, err := svc.RemoveMember(ctx, "ops", "alice"); !errors.As(err, &la) {
				t.Errorf("removing the last admin: %v", err)
			}
			if was, err := svc.RemoveMember(ctx, "ops", "bob"); err != nil || was != teams.RoleMember {
				t.Errorf("remove bob: %v %v", was, err)
			}
			if _, err := svc.RemoveMember(ctx, "ops", "bob"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("remove bob again: %v", err)
			}
			if err := s.CreateDesktop(ctx, newDesktop("d2", "ops", "y")); err != nil {
				t.Fatal(err)
			}
			var busy *teams.BusyError
			if err := svc.Delete(ctx, "ops"); !errors.As(err, &busy) || !errors.Is(err, desktop.ErrBusy) || len(busy.Desktops) != 1 || busy.Desktops[0] != "d2" {
				t.Errorf("delete a team with a desktop: %v", err)
			}
			if err := svc.Delete(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Get(ctx, "other"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("a deleted team: %v", err)
			}
			if err := svc.Delete(ctx, "other"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("deleting it again: %v", err)
			}
		})
	}
}
