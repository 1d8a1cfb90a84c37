// Package store keeps bureau's records in SQL: SQLite by default, PostgreSQL
// when given a postgres:// URL. Migrations run through a goose Provider over
// the embedded migrations package.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/migrations"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Store keeps bureau's records: one type per kind of record (Desktops,
// Quotas, …), each embedded so that its methods are Store's, all sharing
// one conn. Newer kinds hang off accessors instead (Teams, Webhooks,
// Backups).
type Store struct {
	*conn
	Desktops
	Events
	Hosts
	Images
	Placement
	Quotas
	Snapshots
	Steps
	Recordings
	Secrets
	Shares
	Tokens
	ConsoleTokens
	Loop
	CheckpointPolicies
	AuditLog
}

// conn is the database every kind of record shares: the handle, its
// dialect, and the helpers that run statements written with '?'
// placeholders on either.
type conn struct {
	db       *sql.DB
	postgres bool
}

// newStore builds a Store whose every part uses db.
func newStore(db *sql.DB, postgres bool) *Store {
	c := &conn{db: db, postgres: postgres}
	return &Store{
		conn:               c,
		Desktops:           Desktops{c},
		Events:             Events{c},
		Hosts:              Hosts{c},
		Images:             Images{c},
		Placement:          Placement{c},
		Quotas:             Quotas{c},
		Snapshots:          Snapshots{c},
		Steps:              Steps{c},
		Recordings:         Recordings{c},
		Secrets:            Secrets{c},
		Shares:             Shares{c},
		Tokens:             Tokens{c},
		ConsoleTokens:      ConsoleTokens{c},
		Loop:               Loop{c},
		CheckpointPolicies: CheckpointPolicies{c},
		AuditLog:           AuditLog{c},
	}
}

// Open connects to url: a postgres:// or postgresql:// URL, or a SQLite file
// path (optionally prefixed with sqlite://). It does not migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("connect postgres: %w", err)
		}
		return newStore(db, true), nil
	}
	path := strings.TrimPrefix(url, "sqlite://")
	// The data directory as serve keeps it (desktops' QEMU users pass
	// through it to their own files), and a database that is root's alone
	// from the first command (migrate, image build) on: SQLite gives its
	// -wal and -shm files the database's mode.
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// One writer at a time avoids SQLITE_BUSY storms; reads are fast enough.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return newStore(db, false), nil
}

// Migrate brings the schema up to date and logs each applied migration.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) error {
	dialect := goose.DialectSQLite3
	if s.postgres {
		dialect = goose.DialectPostgres
	}
	p, err := goose.NewProvider(dialect, s.db, migrations.FS, goose.WithSlog(log))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dialect names the database in use.
func (s *Store) Dialect() string {
	if s.postgres {
		return "postgres"
	}
	return "sqlite"
}

// q rewrites '?' placeholders to $n for PostgreSQL; queries here never hold a
// literal '?'.
func (c *conn) q(query string) string {
	if !c.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (c *conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := c.db.ExecContext(ctx, c.q(query), args...)
	return res, classify(err)
}

func (c *conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.db.QueryContext(ctx, c.q(query), args...)
}

func (c *conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.db.QueryRowContext(ctx, c.q(query), args...)
}

// execFunc runs a statement written with '?' placeholders: conn.exec, or
// the same inside a transaction (txExec).
type execFunc func(ctx context.Context, query string, args ...any) (sql.Result, error)

// queryRowFunc reads one row the same way: conn.queryRow, or inside a
// transaction (txQueryRow).
type queryRowFunc func(ctx context.Context, query string, args ...any) *sql.Row

// beginLocking begins a transaction whose statements each see what
// another transaction committed before releasing a lock this one then took
// (READ COMMITTED on PostgreSQL; SQLite's transactions hold the database).
func (c *conn) beginLocking(ctx context.Context) (*sql.Tx, error) {
	var opts *sql.TxOptions
	if c.postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return c.db.BeginTx(ctx, opts)
}

func (c *conn) txExec(tx *sql.Tx) execFunc {
	return func(ctx context.Context, query string, args ...any) (sql.Result, error) {
		res, err := tx.ExecContext(ctx, c.q(query), args...)
		return res, classify(err)
	}
}

func (c *conn) txQueryRow(tx *sql.Tx) queryRowFunc {
	return func(ctx context.Context, query string, args ...any) *sql.Row {
		return tx.QueryRowContext(ctx, c.q(query), args...)
	}
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromNullMillis(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMillis(n.Int64)
	return &t
}

// PostgreSQL's SQLSTATE codes bureau acts on.
const (
	pgUniqueViolation = "23505"
	pgDiskFull        = "53100"
)

// isUniqueViolation recognises a unique-constraint failure in either database.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	var pe *pgconn.PgError
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE ||
		errors.As(err, &pe) && pe.Code == pgUniqueViolation
}

// isPrimaryKeyViolation recognises SQLite's primary-key failure
// (PostgreSQL reports it as a unique violation).
func isPrimaryKeyViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// classify marks a write that failed because the database's disk is full
// as ENOSPC (SQLite's SQLITE_FULL, PostgreSQL's disk_full), so callers test
// it with errors.Is whichever database runs.
func classify(err error) error {
	var se *sqlite.Error
	var pe *pgconn.PgError
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL ||
		errors.As(err, &pe) && pe.Code == pgDiskFull {
		return fmt.Errorf("%w (%w)", err, syscall.ENOSPC)
	}
	return err
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	return err
}
