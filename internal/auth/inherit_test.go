package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestMintedTokensStayWithinTheirMaker checks each rule of withinParent
// through Create, and that a minted token records its maker.
func TestMintedTokensStayWithinTheirMaker(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	mk := func(req CreateRequest) *desktop.Token {
		_, tok, err := s.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin := mk(CreateRequest{Owner: "root", Scope: desktop.ScopeAdmin})
	owner := mk(CreateRequest{Owner: "alice", Scope: desktop.ScopeOwner})
	expiring := mk(CreateRequest{Owner: "alice", Scope: desktop.ScopeOwner, TTL: time.Hour})
	agent := mk(CreateRequest{Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1"})
	viewer := mk(CreateRequest{Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1", ComputerOnly: true})

	forbidden, invalid := desktop.ErrForbidden, &desktop.ValidationError{}
	cases := []struct {
		name string
		req  CreateRequest
		want any // nil, forbidden or invalid (the switch below tests invalid first: it is an error too)
	}{
		{"admin mints admin for anyone", CreateRequest{Parent: admin, Owner: "bob", Scope: desktop.ScopeAdmin}, nil},
		{"owner mints owner", CreateRequest{Parent: owner, Owner: "alice", Scope: desktop.ScopeOwner}, nil},
		{"owner mints desktop", CreateRequest{Parent: owner, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1"}, nil},
		{"owner mints admin", CreateRequest{Parent: owner, Owner: "alice", Scope: desktop.ScopeAdmin}, forbidden},
		{"owner mints for another owner", CreateRequest{Parent: owner, Owner: "bob", Scope: desktop.ScopeOwner}, forbidden},
		{"desktop mints same desktop", CreateRequest{Parent: agent, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1", ComputerOnly: true}, nil},
		{"desktop mints owner-wide", CreateRequest{Parent: agent, Owner: "alice", Scope: desktop.ScopeOwner}, forbidden},
		{"desktop mints another desktop", CreateRequest{Parent: agent, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d2"}, forbidden},
		{"computer-only mints full desktop", CreateRequest{Parent: viewer, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1"}, forbidden},
		{"computer-only mints computer-only", CreateRequest{Parent: viewer, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1", ComputerOnly: true}, forbidden},
		{"expiring mints forever", CreateRequest{Parent: expiring, Owner: "alice", Scope: desktop.ScopeOwner}, invalid},
		{"expiring mints longer", CreateRequest{Parent: expiring, Owner: "alice", Scope: desktop.ScopeOwner, TTL: 2 * time.Hour}, invalid},
		{"expiring mints shorter", CreateRequest{Parent: expiring, Owner: "alice", Scope: desktop.ScopeOwner, TTL: 30 * time.Minute}, nil},
	}
	for _, c := range cases {
		_, tok, err := s.Create(ctx, c.req)
		switch want := c.want.(type) {
		case nil:
			if err != nil || tok.ParentID != c.req.Parent.ID {
				t.Errorf("%s: %+v, %v", c.name, tok, err)
			}
		case *desktop.ValidationError:
			if !errors.As(err, &want) || want.Field != "ttl_seconds" {
				t.Errorf("%s: %v, want a ttl_seconds validation error", c.name, err)
			}
		case error:
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", c.name, err, want)
			}
		}
	}
}
