package extfs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Disk is what a Cache's fill writes a backup's disk into: a sparse raw
// file the cache made (an *os.File), sized with Truncate.
type Disk interface {
	io.WriterAt
	Truncate(size int64) error
}

// Cache holds the backups whose disks are written out as sparse raw files
// (<dir>/<id>.raw) so their files can be read: one per backup however
// many ask at once, kept a while after the last use.
type Cache struct {
	dir  string
	keep time.Duration
	max  int
	log  *slog.Logger

	mu   sync.Mutex
	open map[string]*cached
}

type cached struct {
	id    string
	path  string
	ready chan struct{} // closed once fs or err is set
	fs    *FS
	err   error
	users int
	last  time.Time
	timer *time.Timer
	// gone: closed (deleted or expired) while in use: the file goes when
	// the last user is done.
	gone bool
}

// NewCache makes a cache writing its files in dir ("" = a folder in the
// system's temp dir, never cleared), keeping each for keep after its last
// use and at most max at once.
func NewCache(dir string, keep time.Duration, max int, log *slog.Logger) *Cache {
	return &Cache{dir: dir, keep: keep, max: max, log: log, open: map[string]*cached{}}
}

// Clear removes what a previous run of bureau left in the folder.
func (c *Cache) Clear(ctx context.Context) error {
	if c.dir == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("clear %s: %w", c.dir, err)
	}
	return nil
}

// Acquire returns the file system of backup id, opening it unless it is
// open: the cache makes the sparse file and fill writes the backup's disk
// into it. release says the caller is done with it. When as many as
// allowed are open and all in use, the error wraps desktop.ErrUnavailable.
func (c *Cache) Acquire(ctx context.Context, id string, fill func(ctx context.Context, disk Disk) error) (*FS, func(), error) {
	c.mu.Lock()
	cb := c.open[id]
	if cb == nil {
		if err := c.makeRoom(); err != nil {
			c.mu.Unlock()
			return nil, nil, err
		}
		dir := c.dir
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "bureau-backup-files")
		}
		cb = &cached{id: id, path: filepath.Join(dir, id+".raw"), ready: make(chan struct{})}
		c.open[id] = cb
		go c.materialize(context.WithoutCancel(ctx), cb, dir, fill)
	}
	cb.users++
	if cb.timer != nil {
		cb.timer.Stop()
	}
	c.mu.Unlock()
	release := sync.OnceFunc(func() { c.release(cb) })
	select {
	case <-cb.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if cb.err != nil {
		release()
		return nil, nil, cb.err
	}
	return cb.fs, release, nil
}

// makeRoom closes the oldest unused backup when as many as allowed are
// open (c.mu held).
func (c *Cache) makeRoom() error {
	if len(c.open) < c.max {
		return nil
	}
	var oldest *cached
	for _, cb := range c.open {
		if cb.users == 0 && (oldest == nil || cb.last.Before(oldest.last)) {
			oldest = cb
		}
	}
	if oldest == nil {
		return fmt.Errorf("the files of %d backups are being read already; try again in a moment: %w", c.max, desktop.ErrUnavailable)
	}
	c.closeLocked(oldest)
	return nil
}

func (c *Cache) materialize(ctx context.Context, cb *cached, dir string, fill func(ctx context.Context, disk Disk) error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Hour)
	defer cancel()
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = writeDisk(ctx, cb, fill)
	}
	var fsys *FS
	if err == nil {
		fsys, err = Open(ctx, cb.path, dir)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cb.fs, cb.err = fsys, err
	if err != nil {
		// The next call tries again.
		if c.open[cb.id] == cb {
			delete(c.open, cb.id)
		}
		os.Remove(cb.path)
	}
	close(cb.ready)
}

// writeDisk makes cb's sparse file and has fill write the disk into it.
func writeDisk(ctx context.Context, cb *cached, fill func(ctx context.Context, disk Disk) error) error {
	f, err := os.OpenFile(cb.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("open backup %s: %w", cb.id, err)
	}
	err = fill(ctx, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("open backup %s: %w", cb.id, cerr)
	}
	return err
}

func (c *Cache) release(cb *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cb.users--
	cb.last = time.Now()
	if cb.users > 0 {
		return
	}
	if cb.gone {
		os.Remove(cb.path)
		return
	}
	if cb.err != nil {
		return
	}
	cb.timer = time.AfterFunc(c.keep, func() { c.expire(cb) })
}

// expire closes a backup unused for c.keep.
func (c *Cache) expire(cb *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cb.users == 0 && c.open[cb.id] == cb && time.Since(cb.last) >= c.keep {
		c.closeLocked(cb)
		c.log.Info("opened backup closed after a while unused", "backup", cb.id)
	}
}

// closeLocked forgets an opened backup and removes its file, or marks it
// to be removed by its last user (c.mu held).
func (c *Cache) closeLocked(cb *cached) {
	if c.open[cb.id] == cb {
		delete(c.open, cb.id)
	}
	if cb.timer != nil {
		cb.timer.Stop()
	}
	cb.gone = true
	if cb.users == 0 {
		os.Remove(cb.path)
	}
}

// Forget closes backup id if it is open (it is being deleted).
func (c *Cache) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cb := c.open[id]; cb != nil {
		c.closeLocked(cb)
	}
}

// Opened says which backups are open now (tests).
func (c *Cache) Opened() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.open {
		ids = append(ids, id)
	}
	return ids
}
