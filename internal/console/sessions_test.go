package console

import (
	"context"
	"testing"
)

// Viewers lists who watches a desktop, by the name their link was made
// for (or its maker's owner), a link open twice once, and no one after
// they left.
func TestViewersNameWhoWatches(t *testing.T) {
	s, _, now := newService(t)
	ctx := context.Background()
	_, dana, err := s.Create(ctx, CreateRequest{DesktopID: "d1", Owner: "alice", CreatedBy: "alice/tok_1", Name: "Dana"})
	if err != nil {
		t.Fatal(err)
	}
	_, plain, _ := s.Create(ctx, CreateRequest{DesktopID: "d1", Owner: "alice", CreatedBy: "alice/tok_2", ViewOnly: true})
	_, other, _ := s.Create(ctx, CreateRequest{DesktopID: "d2", Owner: "alice", CreatedBy: "alice/tok_1"})
	_, done1 := s.Attach(ctx, dana)
	_, done2 := s.Attach(ctx, dana) // a second tab
	*now = now.Add(1)
	_, done3 := s.Attach(ctx, plain)
	_, done4 := s.Attach(ctx, other)
	defer done4()
	v := s.Viewers("d1")
	if len(v) != 2 || v[0].Name != "Dana" || v[0].Session != dana.ID || v[0].ViewOnly || v[0].CreatedBy != "alice/tok_1" ||
		v[1].Name != "alice" || !v[1].ViewOnly {
		t.Fatalf("viewers of d1: %+v", v)
	}
	done1()
	done2()
	done3()
	if v := s.Viewers("d1"); len(v) != 0 {
		t.Errorf("viewers after they left: %+v", v)
	}
}
