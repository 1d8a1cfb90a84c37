package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestSecretsOnBothDatabases(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			at := time.Now().UTC().Truncate(time.Millisecond)
			sec, err := s.PutSecret(ctx, "alice", "", "K", []byte{1, 2}, []byte{3, 4, 0, 5}, at)
			if err != nil || sec.Scope != desktop.SecretOwner || !sec.CreatedAt.Equal(at) {
				t.Fatalf("put: %+v %v", sec, err)
			}
			later := at.Add(time.Second)
			if sec, err = s.PutSecret(ctx, "alice", "", "K", []byte{9}, []byte{8}, later); err != nil || !sec.CreatedAt.Equal(at) || !sec.UpdatedAt.Equal(later) {
				t.Fatalf("replace: %+v %v", sec, err)
			}
			n, c, err := s.SealedSecret(ctx, "alice", "", "K")
			if err != nil || string(n) != "\x09" || string(c) != "\x08" {
				t.Fatalf("sealed: %v %v %v", n, c, err)
			}
			s.PutSecret(ctx, "alice", "d1", "K", []byte{1}, []byte{1}, at)
			s.PutSecret(ctx, "alice", "d1", "D", []byte{1}, []byte{1}, at)
			if list, _ := s.ListSecrets(ctx, "alice", "d1", true); len(list) != 3 {
				t.Fatalf("d1 with owner: %d", len(list))
			}
			if list, _ := s.ListSecrets(ctx, "alice", "d1", false); len(list) != 2 || list[0].Scope != desktop.SecretDesktop {
				t.Fatalf("d1 alone: %+v", list)
			}
			if list, _ := s.ListSecrets(ctx, "bob", "", true); len(list) != 0 {
				t.Fatalf("bob sees %d", len(list))
			}
			if err := s.DeleteSecret(ctx, "alice", "", "NOPE"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("delete missing: %v", err)
			}
			if err := s.DeleteDesktopSecrets(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if list, _ := s.ListSecrets(ctx, "alice", "d1", true); len(list) != 1 {
				t.Fatalf("after deleting d1's: %+v", list)
			}
		})
	}
}
