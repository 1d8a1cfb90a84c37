package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/migrations"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx", as the store opens PostgreSQL
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	_ "modernc.org/sqlite" // "sqlite", as the store opens SQLite
)

// diskUse is what statDisk says of a directory's file system.
type diskUse struct {
	at   string // the nearest existing folder, the one measured
	dev  uint64 // its device: one line per file system
	free uint64 // bytes free to root
}

// statDisk measures the file system dir is (or will be) on.
func statDisk(dir string) (diskUse, error) {
	at := nearestExisting(dir)
	var fi syscall.Stat_t
	if err := syscall.Stat(at, &fi); err != nil {
		return diskUse{}, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(at, &st); err != nil {
		return diskUse{}, err
	}
	return diskUse{at: at, dev: fi.Dev, free: st.Bfree * uint64(st.Bsize)}, nil
}

// nearestExisting is dir or its nearest existing parent: serve makes the
// data and cache directories on first start.
func nearestExisting(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// checkDisk measures the free space for dirs, once per file system.
func checkDisk(stat func(string) (diskUse, error), dirs ...string) finding {
	type fsys struct {
		dirs []string
		free uint64
	}
	var order []uint64
	byDev := map[uint64]*fsys{}
	for _, d := range dirs {
		u, err := stat(d)
		if err != nil {
			return fail(fmt.Sprintf("%s: %v", d, err), "check the path (BUREAU_DATA_DIR, BUREAU_IMAGE_CACHE)")
		}
		name := d
		if u.at != filepath.Clean(d) {
			name += " (not made yet; " + u.at + ")"
		}
		if s, seen := byDev[u.dev]; seen {
			s.dirs = append(s.dirs, name)
			continue
		}
		byDev[u.dev] = &fsys{dirs: []string{name}, free: u.free}
		order = append(order, u.dev)
	}
	worst := statusOK
	var parts []string
	for _, dev := range order {
		s := byDev[dev]
		parts = append(parts, fmt.Sprintf("%s free for %s", bytesGiB(s.free), strings.Join(s.dirs, " and ")))
		switch {
		case s.free < diskFailBytes:
			worst = statusFail
		case s.free < diskWarnBytes && worst == statusOK:
			worst = statusWarn
		}
	}
	f := finding{Status: worst, Detail: strings.Join(parts, "; ")}
	if worst != statusOK {
		f.Fix = fmt.Sprintf("free space (a desktop's disks and hibernation image grow there; an image build needs 8 GiB), or move BUREAU_DATA_DIR / BUREAU_IMAGE_CACHE to a file system with %s or more", bytesGiB(diskWarnBytes))
	}
	return f
}

// bytesGiB writes bytes as GiB with one decimal (host.go's gib).
func bytesGiB(b uint64) string { return gib(int64(b>>20)) + " GiB" }

// checkDatabase compares the database's schema version with the newest
// embedded migration, without changing either. goose's Provider would
// make its version table on first use, so the version is read with its
// Store's queries alone; SQLite is opened read-only (a file that does not
// exist is not made) and PostgreSQL in read-only transactions.
func checkDatabase(ctx context.Context, dbURL string) finding {
	migrate := "bureau migrate, or start bureau serve (it migrates first)"
	driver, dsn, dialect, shown := "sqlite", "", goose.DialectSQLite3, dbURL
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		driver, dsn, dialect = "pgx", dbURL, goose.DialectPostgres
		if u, err := url.Parse(dbURL); err == nil {
			shown = u.Redacted()
			q := u.Query()
			q.Set("default_transaction_read_only", "on")
			u.RawQuery = q.Encode()
			dsn = u.String()
		}
	} else {
		path := strings.TrimPrefix(dbURL, "sqlite://")
		shown = path
		if _, err := os.Stat(path); err != nil {
			all, _ := fs.Glob(migrations.FS, "*.sql")
			if errors.Is(err, os.ErrNotExist) {
				return warn(fmt.Sprintf("no database at %s yet: %d migrations pending (bureau serve applies them)", path, len(all)), migrate)
			}
			return fail(err.Error(), "check BUREAU_DATABASE_URL / BUREAU_DATA_DIR")
		}
		dsn = "file:" + path + "?mode=ro&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return fail(fmt.Sprintf("%s: %v", shown, err), "check BUREAU_DATABASE_URL")
	}
	defer db.Close()
	p, err := goose.NewProvider(dialect, db, migrations.FS) // for its list of migrations only
	if err != nil {
		return fail(fmt.Sprintf("migrations: %v", err), "report this as a bureau bug")
	}
	src := p.ListSources()
	newest := int64(0)
	if len(src) > 0 {
		newest = src[len(src)-1].Version
	}
	versions, err := database.NewStore(database.Dialect(dialect), goose.DefaultTablename)
	if err != nil {
		return fail(fmt.Sprintf("migrations: %v", err), "report this as a bureau bug")
	}
	current, err := versions.GetLatestVersion(ctx, db)
	switch {
	case errors.Is(err, database.ErrVersionNotFound) || err != nil && isNoVersionTable(err):
		return warn(fmt.Sprintf("%s has no schema yet: %d migrations pending (bureau serve applies them)", shown, len(src)), migrate)
	case err != nil:
		return fail(fmt.Sprintf("%s: %v", shown, err), "check BUREAU_DATABASE_URL, and that the database is up")
	}
	return schemaFinding(shown, current, newest, pendingCount(src, current))
}

// schemaFinding says how a database at version current stands to this
// bureau's newest migration.
func schemaFinding(shown string, current, newest int64, pending int) finding {
	switch {
	case current > newest:
		return fail(fmt.Sprintf("%s is at schema version %d, newer than this bureau's (%d): written by a newer bureau", shown, current, newest),
			"install the bureau that last served this database (or newer)")
	case pending > 0:
		return warn(fmt.Sprintf("%s at schema version %d: %d migrations pending (bureau serve applies them)", shown, current, pending),
			"bureau migrate, or restart bureau serve (it migrates first)")
	}
	return ok(fmt.Sprintf("%s at schema version %d, the newest", shown, current))
}

func pendingCount(src []*goose.Source, current int64) int {
	n := 0
	for _, s := range src {
		if s.Version > current {
			n++
		}
	}
	return n
}

// isNoVersionTable says the database has no goose version table: nothing
// was ever migrated (SQLite: "no such table", PostgreSQL: undefined_table).
func isNoVersionTable(err error) bool {
	var pe *pgconn.PgError
	return strings.Contains(err.Error(), "no such table: "+goose.DefaultTablename) || errors.As(err, &pe) && pe.Code == "42P01"
}

// checkListen checks that serve can listen on addr: it is free (a
// listener made and closed at once), or held by a bureau whose /healthz
// answers.
func checkListen(ctx context.Context, addr string) finding {
	fix := "BUREAU_LISTEN=127.0.0.1:8080, or another host:port of this machine"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(fmt.Sprintf("BUREAU_LISTEN %q: %v", addr, err), fix)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fail(fmt.Sprintf("BUREAU_LISTEN %q: port %q: %v", addr, port, err), fix)
	}
	l, err := net.Listen("tcp", addr)
	if err == nil {
		l.Close()
		return ok(addr + " is free")
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fail(fmt.Sprintf("cannot listen on %s: %v", addr, err), fix)
	}
	if healthy(ctx, dialable(host), port) {
		return ok(addr + " is held by a running bureau (its /healthz answers)")
	}
	return fail(addr+" is in use by another program", "stop that program (ss -ltnp 'sport = :"+port+"' names it), or "+fix)
}

// dialable is where to reach a listener on host: the loopback for a
// wildcard address.
func dialable(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// healthy says whether bureau's /healthz answers at host:port, over
// HTTP or, once bureau serves TLS there, HTTPS (its certificate is not
// checked: this only recognises bureau).
func healthy(ctx context.Context, host, port string) bool {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // recognising bureau, not trusting it
	}}
	defer client.CloseIdleConnections()
	for _, scheme := range []string{"http", "https"} {
		req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+net.JoinHostPort(host, port)+"/healthz", nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"ok"`) {
			return true
		}
	}
	return false
}
