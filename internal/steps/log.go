package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps steps.
type Store interface {
	AddStep(ctx context.Context, st *Step) error
	LastStep(ctx context.Context, desktopID string) (int64, error)
	ListSteps(ctx context.Context, desktopID string, p Page) ([]*Step, error)
	GetStep(ctx context.Context, desktopID string, seq int64) (*Step, error)
	DeleteSteps(ctx context.Context, desktopID string, through int64) error
	// CheckpointPolicy is a desktop's (DefaultCheckpointPolicy when none
	// was set).
	CheckpointPolicy(ctx context.Context, desktopID string) (CheckpointPolicy, error)
	SetCheckpointPolicy(ctx context.Context, desktopID string, p CheckpointPolicy) error
	DeleteCheckpointPolicy(ctx context.Context, desktopID string) error
}

// ErrTaken: the store already has a step of that number.
var ErrTaken = errors.New("step number taken")

// pruneEvery: old steps are pruned once every this many.
const pruneEvery = 100

// Log records and serves desktops' steps.
type Log struct {
	store Store
	// dir holds each desktop's thumbnails in a folder of its own. It is
	// bureau's, not the desktop's folder (which QEMU can write to).
	dir  string
	keep int64
	log  *slog.Logger
	// Recorded, if set, is told of each step recorded (metrics).
	Recorded func(kind string, ok bool)

	mu   sync.Mutex
	last map[string]int64
	subs map[string]map[*Follower]struct{}
	// cadence says which steps are due an automatic checkpoint.
	cadence Cadence
}

// New builds a log keeping the newest keep steps of each desktop, with
// thumbnails under dir.
func New(store Store, dir string, keep int, log *slog.Logger) *Log {
	return &Log{store: store, dir: dir, keep: int64(keep), log: log,
		last: map[string]int64{}, subs: map[string]map[*Follower]struct{}{}}
}

// Record numbers a step, stores it and its thumbnails (JPEG; nil for
// none) and hands it to the desktop's followers.
func (l *Log) Record(ctx context.Context, st *Step, before, after []byte) error {
	for attempt := 0; ; attempt++ {
		seq, err := l.nextSeq(ctx, st.DesktopID)
		if err != nil {
			return err
		}
		st.Seq = seq
		st.Before = before != nil && l.writeThumb(st.DesktopID, seq, Before, before)
		st.After = after != nil && l.writeThumb(st.DesktopID, seq, After, after)
		err = l.store.AddStep(ctx, st)
		if errors.Is(err, ErrTaken) && attempt < 3 {
			// Another writer took the number: start again from the store.
			l.mu.Lock()
			delete(l.last, st.DesktopID)
			l.mu.Unlock()
			continue
		}
		if err != nil {
			l.removeThumbs(st.DesktopID, seq, seq)
			return err
		}
		break
	}
	if l.Recorded != nil {
		l.Recorded(st.Kind, st.OK())
	}
	if l.keep > 0 && st.Seq%pruneEvery == 0 && st.Seq > l.keep {
		l.prune(ctx, st.DesktopID, st.Seq-l.keep)
	}
	l.publish(st)
	return nil
}

func (l *Log) nextSeq(ctx context.Context, desktopID string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.last[desktopID]
	if !ok {
		var err error
		if n, err = l.store.LastStep(ctx, desktopID); err != nil {
			return 0, err
		}
	}
	l.last[desktopID] = n + 1
	return n + 1, nil
}

// prune forgets steps numbered up to through, and their thumbnails.
func (l *Log) prune(ctx context.Context, desktopID string, through int64) {
	if err := l.store.DeleteSteps(ctx, desktopID, through); err != nil {
		l.log.Warn("pruning old steps", "desktop", desktopID, "err", err)
		return
	}
	l.removeThumbs(desktopID, max(1, through-2*pruneEvery), through)
}

func (l *Log) thumbPath(desktopID string, seq int64, w Which) string {
	return filepath.Join(l.dir, desktopID, strconv.FormatInt(seq, 10)+"-"+string(w)+".jpg")
}

func (l *Log) writeThumb(desktopID string, seq int64, w Which, b []byte) bool {
	p := l.thumbPath(desktopID, seq, w)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		l.log.Warn("step thumbnail", "desktop", desktopID, "err", err)
		return false
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		l.log.Warn("step thumbnail", "desktop", desktopID, "err", err)
		return false
	}
	return true
}

func (l *Log) removeThumbs(desktopID string, from, through int64) {
	for seq := from; seq <= through; seq++ {
		os.Remove(l.thumbPath(desktopID, seq, Before))
		os.Remove(l.thumbPath(desktopID, seq, After))
	}
}

// List returns a page of a desktop's steps, oldest first.
func (l *Log) List(ctx context.Context, desktopID string, p Page) ([]*Step, error) {
	return l.store.ListSteps(ctx, desktopID, p)
}

// Get returns one step.
func (l *Log) Get(ctx context.Context, desktopID string, seq int64) (*Step, error) {
	return l.store.GetStep(ctx, desktopID, seq)
}

// Thumbnail returns a step's picture of the screen (JPEG).
func (l *Log) Thumbnail(ctx context.Context, desktopID string, seq int64, w Which) ([]byte, error) {
	st, err := l.store.GetStep(ctx, desktopID, seq)
	if err != nil {
		return nil, err
	}
	if (w == Before && !st.Before) || (w == After && !st.After) {
		return nil, fmt.Errorf("step %d has no thumbnail %s it: %w", seq, w, desktop.ErrNotFound)
	}
	b, err := os.ReadFile(l.thumbPath(desktopID, seq, w))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("step %d's thumbnail %s it is gone: %w", seq, w, desktop.ErrNotFound)
	}
	return b, err
}

// Forget drops a deleted desktop's steps and thumbnails.
func (l *Log) Forget(ctx context.Context, desktopID string) error {
	l.mu.Lock()
	delete(l.last, desktopID)
	l.mu.Unlock()
	l.cadence.Reset(desktopID)
	if err := l.store.DeleteSteps(ctx, desktopID, -1); err != nil {
		return err
	}
	if err := l.store.DeleteCheckpointPolicy(ctx, desktopID); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(l.dir, desktopID)); err != nil {
		return fmt.Errorf("step thumbnails: %w", err)
	}
	return nil
}
