package audit

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Store keeps entries (internal/store).
type Store interface {
	// AddAudit inserts entries, all or none.
	AddAudit(ctx context.Context, entries []*Entry) error
	// ListAudit returns up to f.Limit entries f chooses, newest first,
	// older than f.After when it is set.
	ListAudit(ctx context.Context, f Filter) ([]*Entry, error)
	// PruneAudit deletes entries older than before and says how many.
	PruneAudit(ctx context.Context, before time.Time) (int64, error)
}

// Config tunes a Log. Zero values take the defaults.
type Config struct {
	// Buffer is how many entries may wait to be written (default 4096):
	// past it, entries are dropped and counted, never waited for.
	Buffer int
	// Batch is how many entries one insert takes at most (default 512);
	// Linger how long the writer waits for more before it writes a batch
	// that is not full (default 100 ms): fewer, larger transactions leave
	// the database to the requests.
	Batch  int
	Linger time.Duration
	// Retention is how long entries are kept (0: forever); PruneEvery how
	// often older ones are deleted (default an hour).
	Retention  time.Duration
	PruneEvery time.Duration
}

// Log is the audit log: Record queues entries for its writer (Run), and
// Query and Export read them back.
type Log struct {
	store   Store
	cfg     Config
	log     *slog.Logger
	entries chan *Entry
	flushes chan chan struct{}
	dropped atomic.Int64
}

// New makes a Log over st; Run writes what it is given.
func New(st Store, cfg Config, log *slog.Logger) *Log {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 4096
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 100 * time.Millisecond
	}
	if cfg.PruneEvery <= 0 {
		cfg.PruneEvery = time.Hour
	}
	return &Log{store: st, cfg: cfg, log: log, entries: make(chan *Entry, cfg.Buffer), flushes: make(chan chan struct{})}
}

// Record queues e for writing without blocking: when the buffer is full
// the entry is dropped, counted (Dropped) and the drop logged.
func (l *Log) Record(e *Entry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC().Truncate(time.Millisecond)
	if e.ID == "" {
		e.ID = NewID(e.At)
	}
	select {
	case l.entries <- e:
	default:
		if n := l.dropped.Add(1); n == 1 || n%1000 == 0 {
			l.log.Warn("audit log buffer full: entries dropped", "dropped", n, "action", e.Action)
		}
	}
}

// Dropped is how many entries were dropped because the buffer was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Run writes queued entries in batches and prunes old ones until ctx
// ends, then writes what is still queued. Writes are not cut short by
// ctx ending (each has its own timeout): a batch gathered as it ends is
// written, not lost.
func (l *Log) Run(ctx context.Context) {
	prune := time.NewTicker(l.cfg.PruneEvery)
	defer prune.Stop()
	l.prune(ctx)
	wctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			l.drain(wctx, nil)
			return
		case e := <-l.entries:
			batch, flush := l.gather(ctx, e)
			l.write(wctx, batch)
			if flush != nil {
				l.drain(wctx, nil)
				close(flush)
			}
		case done := <-l.flushes:
			l.drain(wctx, nil)
			close(done)
		case <-prune.C:
			l.prune(ctx)
		}
	}
}

// Flush waits until what was recorded before it is written (tests, and
// shutdown). Run must be running.
func (l *Log) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case l.flushes <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gather collects entries after first until the batch is full or Linger
// has passed; a flush asked for meanwhile is returned, to be answered
// once what came before it is written.
func (l *Log) gather(ctx context.Context, first *Entry) ([]*Entry, chan struct{}) {
	batch := append(make([]*Entry, 0, l.cfg.Batch), first)
	t := time.NewTimer(l.cfg.Linger)
	defer t.Stop()
	for len(batch) < l.cfg.Batch {
		select {
		case e := <-l.entries:
			batch = append(batch, e)
		case flush := <-l.flushes:
			return batch, flush
		case <-t.C:
			return batch, nil
		case <-ctx.Done():
			return batch, nil
		}
	}
	return batch, nil
}

// drain writes first (if any) and everything queued, a batch at a time.
func (l *Log) drain(ctx context.Context, first *Entry) {
	batch := make([]*Entry, 0, l.cfg.Batch)
	if first != nil {
		batch = append(batch, first)
	}
	for {
		full := false
		for !full && len(batch) < l.cfg.Batch {
			select {
			case e := <-l.entries:
				batch = append(batch, e)
			default:
				full = true
			}
		}
		if len(batch) == 0 {
			return
		}
		l.write(ctx, batch)
		if len(batch) < l.cfg.Batch {
			return
		}
		batch = batch[:0]
	}
}

func (l *Log) write(ctx context.Context, batch []*Entry) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := l.store.AddAudit(wctx, batch); err != nil {
		l.log.Error("audit log: entries not written", "entries", len(batch), "err", err)
	}
}

func (l *Log) prune(ctx context.Context) {
	if l.cfg.Retention <= 0 {
		return
	}
	n, err := l.store.PruneAudit(ctx, time.Now().Add(-l.cfg.Retention))
	if err != nil {
		l.log.Error("audit log: pruning failed", "err", err)
		return
	}
	if n > 0 {
		l.log.Info("audit log pruned", "entries", n, "older_than", l.cfg.Retention.String())
	}
}

// Query returns a page of the entries f chooses, newest first.
func (l *Log) Query(ctx context.Context, f Filter) (*Page, error) {
	limit := f.Limit
	f.Limit = limit + 1 // one more says whether a next page exists
	list, err := l.store.ListAudit(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	p := &Page{Entries: list}
	if len(list) > limit {
		p.Entries = list[:limit]
		p.NextCursor = CursorOf(p.Entries[limit-1]).String()
	}
	return p, nil
}

// exportPage is how many rows Export reads at a time.
const exportPage = 1000

// Export calls fn with every entry f chooses (its Limit aside), newest
// first, a page at a time; an error from fn stops it.
func (l *Log) Export(ctx context.Context, f Filter, fn func(*Entry) error) error {
	f.Limit = exportPage
	for {
		list, err := l.store.ListAudit(ctx, f)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		for _, e := range list {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(list) < exportPage {
			return nil
		}
		f.After = CursorOf(list[len(list)-1])
	}
}
