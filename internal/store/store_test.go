package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// openStores yields a migrated SQLite store and, when BUREAU_TEST_POSTGRES_URL
// is set, a PostgreSQL one, so every test runs against both databases. With
// BUREAU_REQUIRE_POSTGRES=1 (make unit) a missing URL fails the test.
func openStores(t *testing.T) map[string]*Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]*Store{}
	urls := map[string]string{"sqlite": filepath.Join(t.TempDir(), "b.db")}
	if pg := os.Getenv("BUREAU_TEST_POSTGRES_URL"); pg != "" {
		urls["postgres"] = pg
	} else if os.Getenv("BUREAU_REQUIRE_POSTGRES") == "1" {
		t.Fatal("BUREAU_REQUIRE_POSTGRES=1 but BUREAU_TEST_POSTGRES_URL is empty: PostgreSQL did not start")
	}
	for name, url := range urls {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.postgres {
			// Start from an empty schema each time, whatever tables exist.
			if _, err := s.db.ExecContext(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("%s migrate: %v", name, err)
		}
		// Migrating twice is a no-op.
		if err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("%s second migrate: %v", name, err)
		}
		t.Cleanup(func() { s.Close() })
		out[name] = s
	}
	return out
}

func newDesktop(id, owner, name string) *desktop.Desktop {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &desktop.Desktop{ID: id, Owner: owner, Name: name,
		Spec:  desktop.Spec{Image: "img", VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20},
		State: desktop.StateCreating, DesiredState: desktop.StateRunning, Accelerator: "tcg",
		Dir: "/d/" + id, CreatedAt: now, UpdatedAt: now}
}

func TestDesktopsRoundTripAndNameUniqueness(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			a := newDesktop("a1", "alice", "work")
			if err := s.CreateDesktop(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateDesktop(ctx, newDesktop("a2", "alice", "work")); !errors.Is(err, desktop.ErrNameTaken) {
				t.Fatalf("duplicate name: got %v, want ErrNameTaken", err)
			}
			if err := s.CreateDesktop(ctx, newDesktop("b1", "bob", "work")); err != nil {
				t.Fatalf("same name, other owner: %v", err)
			}
			got, err := s.GetDesktop(ctx, "a1")
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "work" || got.VCPUs != 2 || got.State != desktop.StateCreating || !got.CreatedAt.Equal(a.CreatedAt) ||
				got.OperationStartedAt != nil {
				t.Fatalf("round trip: %+v", got)
			}
			// An operation's step and start time are kept (to the ms).
			began := time.Date(2026, 11, 24, 17, 30, 0, 123e6, time.UTC)
			got.Operation, got.Step, got.OperationStartedAt = "start", "define", &began
			if err := s.UpdateDesktop(ctx, got); err != nil {
				t.Fatal(err)
			}
			if got, _ = s.GetDesktop(ctx, "a1"); got.Step != "define" || got.OperationStartedAt == nil || !got.OperationStartedAt.Equal(began) {
				t.Fatalf("operation round trip: %q %v", got.Step, got.OperationStartedAt)
			}
			got.Operation, got.Step, got.OperationStartedAt = "", "", nil
			// Deleting frees the name.
			now := time.Now()
			got.State, got.DeletedAt, got.DataDiskPath = desktop.StateDeleted, &now, "/kept/data.qcow2"
			if err := s.UpdateDesktop(ctx, got); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateDesktop(ctx, newDesktop("a3", "alice", "work")); err != nil {
				t.Fatalf("reuse name after delete: %v", err)
			}
			live, _ := s.ListDesktops(ctx, desktop.Filter{Owner: "alice"})
			if len(live) != 1 || live[0].ID != "a3" {
				t.Fatalf("alice live desktops = %v", live)
			}
			all, _ := s.ListDesktops(ctx, desktop.Filter{IncludeDeleted: true})
			if len(all) != 3 {
				t.Fatalf("all desktops = %d, want 3", len(all))
			}
			if _, err := s.GetDesktop(ctx, "nope"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("missing desktop: %v", err)
			}
		})
	}
}

func TestEventsImagesTokens(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			base := time.Now().UTC()
			for i, typ := range []string{"created", "started", "stopped"} {
				e := &desktop.Event{ID: typ, DesktopID: "d", Type: typ, Message: typ, Actor: "test", CreatedAt: base.Add(time.Duration(i) * time.Second)}
				if err := s.AddEvent(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			evs, err := s.ListEvents(ctx, "d", 2)
			if err != nil || len(evs) != 2 || evs[0].Type != "started" || evs[1].Type != "stopped" {
				t.Fatalf("events = %v, %v", evs, err)
			}

			im := &desktop.Image{Name: "deb", OS: "debian", Version: "12", Path: "/i/deb.qcow2", SizeBytes: 5, SHA256: "ab", Source: "build", CreatedAt: base}
			if err := s.PutImage(ctx, im); err != nil {
				t.Fatal(err)
			}
			im.SHA256 = "cd"
			if err := s.PutImage(ctx, im); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetImage(ctx, "deb")
			if err != nil || got.SHA256 != "cd" {
				t.Fatalf("image = %+v, %v", got, err)
			}
			if err := s.DeleteImage(ctx, "deb"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteImage(ctx, "deb"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}

			tok := &desktop.Token{ID: "t1", Owner: "alice", Name: "ci", Hash: "h1", Scope: desktop.ScopeOwner, CreatedAt: base}
			if err := s.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RevokeToken(ctx, "t1", base); err != nil {
				t.Fatal(err)
			}
			got2, err := s.TokenByHash(ctx, "h1")
			if err != nil || got2.Usable(time.Now()) {
				t.Fatalf("revoked token usable: %+v %v", got2, err)
			}
		})
	}
}

func TestAuditLogAndSnapshots(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			s.CreateDesktop(ctx, newDesktop("da", "alice", "a"))
			s.CreateDesktop(ctx, newDesktop("db", "bob", "b"))
			base := time.Now().UTC()
			for i, d := range []string{"da", "db", "da"} {
				s.AddEvent(ctx, &desktop.Event{ID: fmt.Sprint("e", i), DesktopID: d, Type: "t", Actor: "x", CreatedAt: base.Add(time.Duration(i) * time.Second)})
			}
			if evs, err := s.ListAllEvents(ctx, "alice", 10); err != nil || len(evs) != 2 || evs[0].ID != "e0" || evs[1].ID != "e2" {
				t.Fatalf("alice's audit log: %v %v", evs, err)
			}
			if evs, _ := s.ListAllEvents(ctx, "", 2); len(evs) != 2 || evs[0].ID != "e1" {
				t.Fatalf("admin's newest 2: %v", evs)
			}

			sn := &desktop.Snapshot{ID: "s1", DesktopID: "da", Name: "clean", Scope: "all", Memory: true, CreatedAt: base}
			if err := s.CreateSnapshot(ctx, sn); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateSnapshot(ctx, &desktop.Snapshot{ID: "s2", DesktopID: "da", Name: "clean", Scope: "data", CreatedAt: base}); !errors.Is(err, desktop.ErrNameTaken) {
				t.Fatalf("duplicate snapshot name: %v", err)
			}
			now := base.Add(time.Minute)
			sn.RevertedAt = &now
			s.MarkSnapshotReverted(ctx, sn)
			got, err := s.GetSnapshot(ctx, "da", "clean")
			if err != nil || !got.Memory || got.RevertedAt == nil || got.Scope != "all" {
				t.Fatalf("snapshot = %+v %v", got, err)
			}
			s.DeleteSnapshots(ctx, "da")
			if list, _ := s.ListSnapshots(ctx, "da"); len(list) != 0 {
				t.Fatalf("after delete: %v", list)
			}
		})
	}
}

// TestNewDatabaseIsRootsAlone: the first command that opens a new SQLite
// database (migrate, image build) makes it 0600 in a data directory that
// others may only pass through, as serve keeps them.
func TestNewDatabaseIsRootsAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(context.Background(), filepath.Join(dir, "bureau.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o711, filepath.Join(dir, "bureau.db"): 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %o", p, fi.Mode().Perm(), err, want)
		}
	}
}

// TestEveryPartSharesTheConn checks that Open fills every kind of record
// Store embeds with its one conn: a part left out would panic on first use.
func TestEveryPartSharesTheConn(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.Anonymous || f.Type.Kind() != reflect.Struct {
			continue
		}
		c, ok := f.Type.FieldByName("conn")
		if !ok || c.Index[0] != 0 || len(c.Index) != 1 {
			t.Errorf("%s does not embed conn", f.Name)
			continue
		}
		if got := v.Field(i).Field(0).Pointer(); got != reflect.ValueOf(s.conn).Pointer() {
			t.Errorf("%s has conn %#x, want the store's", f.Name, got)
		}
	}
}
