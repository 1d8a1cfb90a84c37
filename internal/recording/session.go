package recording

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"image/png"
	"os"
	"sync"
	"time"
)

// session is a recording under way.
type session struct {
	mu      sync.Mutex
	rec     *Recording
	enc     *encoder
	domain  string
	release func()
	stopc   chan string
	done    chan struct{}
}

func (x *session) stop(why string) {
	select {
	case x.stopc <- why:
	default:
	}
}

func (x *session) snapshot() *Recording {
	x.mu.Lock()
	defer x.mu.Unlock()
	cp := *x.rec
	return &cp
}

// finishWithin bounds ffmpeg's last writes.
const finishWithin = 2 * time.Minute

// run takes the screen every 1/FPS s and feeds ffmpeg one frame per
// period, the last screen seen, so frame n is the screen at StartedAt +
// n/FPS: the video's time is the desktop's time. It ends when stopped,
// at MaxSeconds, when the file reaches the size budget, or when the
// screen cannot be read for a while.
func (s *Service) run(x *session, first []byte) {
	defer close(x.done)
	r := x.snapshot()
	period := time.Second / time.Duration(r.FPS)
	last, lastSum := first, sha256.Sum256(first)
	var written int64
	// fill writes the last screen until the stream reaches frame n.
	fill := func(n int64) error {
		for ; written < n; written++ {
			if err := x.enc.frame(last); err != nil {
				return err
			}
		}
		return nil
	}
	index := func(t time.Time) int64 { return int64(t.Sub(r.StartedAt) / period) }
	x.count(1)
	failure := fill(1)
	tick := time.NewTicker(period)
	defer tick.Stop()
	limit := time.NewTimer(time.Duration(r.MaxSeconds) * time.Second)
	defer limit.Stop()
	why, misses := "", 0
	sizeCheck := time.Now()
loop:
	for failure == nil {
		select {
		case why = <-x.stopc:
			break loop
		case <-limit.C:
			why = fmt.Sprintf("max_seconds (%d) reached", r.MaxSeconds)
			break loop
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		shot, _, err := s.screens.Screenshot(ctx, x.domain)
		cancel()
		n := index(time.Now())
		if failure = fill(n); failure != nil {
			break
		}
		if err != nil {
			if misses++; misses == 20 {
				failure = fmt.Errorf("the screen could not be read %d times in a row: %w", misses, err)
			}
			continue
		}
		misses = 0
		if sum := sha256.Sum256(shot); sum != lastSum {
			last, lastSum = shot, sum
			x.count(1)
		}
		failure = fill(n + 1)
		if time.Since(sizeCheck) > 5*time.Second {
			sizeCheck = time.Now()
			if fi, err := os.Stat(s.path(r)); err == nil && s.cfg.KeepBytes > 0 && fi.Size() >= s.cfg.KeepBytes {
				why = fmt.Sprintf("it reached the size limit (%d MiB, BUREAU_RECORDINGS_KEEP_MIB)", s.cfg.KeepBytes>>20)
				break loop
			}
		}
	}
	if failure == nil {
		failure = fill(index(time.Now()) + 1) // the video lasts until now
	}
	err := x.enc.finish(finishWithin)
	if err == nil && failure == nil {
		// The unchanged frames at the end were dropped: the file lasts
		// as long as the stream fed.
		err = lengthen(s.path(r), time.Duration(written)*period)
	}
	if failure == nil {
		failure = err
	}
	s.end(x, why, failure)
}

func (x *session) count(n int64) {
	x.mu.Lock()
	x.rec.Frames += n
	x.mu.Unlock()
}

// end records how the recording ended and lets the desktop have another.
func (s *Service) end(x *session, why string, failure error) {
	x.release()
	x.mu.Lock()
	now := time.Now().UTC()
	x.rec.EndedAt, x.rec.EndedWhy, x.rec.State = &now, why, StateDone
	if fi, err := os.Stat(s.path(x.rec)); err == nil {
		x.rec.SizeBytes = fi.Size()
	}
	if failure != nil {
		x.rec.State, x.rec.Error = StateFailed, failure.Error()
	}
	r := *x.rec
	x.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.store.UpdateRecording(ctx, &r); err != nil {
		s.log.Error("recording the end of a recording", "recording", r.ID, "err", err)
	}
	s.mu.Lock()
	delete(s.active, r.DesktopID)
	s.mu.Unlock()
	if s.cfg.Changed != nil {
		s.cfg.Changed()
	}
	s.log.Info("recording ended", "desktop", r.DesktopID, "recording", r.ID, "why", why, "frames", r.Frames,
		"bytes", r.SizeBytes, "seconds", r.DurationMS()/1000, "err", r.Error)
	s.prune(ctx, r.DesktopID)
}

// prune removes a desktop's oldest finished recordings beyond its budget
// (but the newest). Kept recordings are neither counted nor removed: only
// their owner deletes them.
func (s *Service) prune(ctx context.Context, desktopID string) {
	if s.cfg.KeepBytes <= 0 {
		return
	}
	list, err := s.store.ListRecordings(ctx, desktopID)
	if err != nil {
		return
	}
	var total int64
	newest := true
	for i := len(list) - 1; i >= 0; i-- { // newest first
		r := list[i]
		if r.Kept {
			continue
		}
		total += r.SizeBytes
		older := !newest
		newest = false
		if total > s.cfg.KeepBytes && older && r.State != StateRecording {
			s.log.Info("removing an old recording (size budget)", "desktop", desktopID, "recording", r.ID)
			os.Remove(s.path(r))
			s.store.DeleteRecording(ctx, r.ID)
		}
	}
}

func pngSize(b []byte) (int, int, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0, fmt.Errorf("the screen is not a PNG: %w", err)
	}
	return cfg.Width, cfg.Height, nil
}
