package recording

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Screens gives a running desktop's screen as PNG.
type Screens interface {
	Screenshot(ctx context.Context, domain string) ([]byte, string, error)
}

// Store keeps recordings.
type Store interface {
	InsertRecording(ctx context.Context, r *Recording) error
	UpdateRecording(ctx context.Context, r *Recording) error
	GetRecording(ctx context.Context, desktopID, id string) (*Recording, error)
	// FindRecording finds one by its id alone (its desktop may be gone).
	FindRecording(ctx context.Context, id string) (*Recording, error)
	ListRecordings(ctx context.Context, desktopID string) ([]*Recording, error)
	// OwnerRecordings lists an owner's ("": everyone's), deleted
	// desktops' included.
	OwnerRecordings(ctx context.Context, owner string) ([]*Recording, error)
	SetRecordingKept(ctx context.Context, id string, kept bool) error
	DeleteRecording(ctx context.Context, id string) error
	// UnfinishedRecordings are those still marked recording (bureau died).
	UnfinishedRecordings(ctx context.Context) ([]*Recording, error)
}

// Viewers keeps a desktop awake while something watches it.
type Viewers interface {
	AddViewer(id string) (done func())
}

// Config of the service.
type Config struct {
	// Dir holds the files (bureau's, not the desktops' folders).
	Dir string
	// FFmpeg is the ffmpeg binary ("" finds it on PATH).
	FFmpeg string
	// MaxSeconds bounds one recording; KeepBytes what a desktop's
	// recordings may take (the oldest finished ones go first).
	MaxSeconds int
	KeepBytes  int64
	// Changed, if set, is told when a recording starts or ends (metrics).
	Changed func()
}

// Service records desktops.
type Service struct {
	cfg     Config
	store   Store
	screens Screens
	viewers Viewers
	log     *slog.Logger

	mu     sync.Mutex
	active map[string]*session // by desktop id
}

// New builds the service.
func New(cfg Config, store Store, screens Screens, viewers Viewers, log *slog.Logger) *Service {
	if cfg.FFmpeg == "" {
		cfg.FFmpeg, _ = exec.LookPath("ffmpeg")
	}
	return &Service{cfg: cfg, store: store, screens: screens, viewers: viewers, log: log, active: map[string]*session{}}
}

// Available says whether recordings can be made (ffmpeg is there).
func (s *Service) Available() bool { return s.cfg.FFmpeg != "" }

// Recover closes the recordings a previous bureau left under way: their
// files lack the index ffmpeg writes last, but what they hold plays.
func (s *Service) Recover(ctx context.Context) error {
	list, err := s.store.UnfinishedRecordings(ctx)
	if err != nil {
		return err
	}
	for _, r := range list {
		now := time.Now().UTC()
		r.EndedAt, r.EndedWhy = &now, "bureau stopped during the recording"
		r.State = StateDone
		if fi, err := os.Stat(s.path(r)); err == nil && fi.Size() > 0 {
			r.SizeBytes = fi.Size()
		} else {
			r.State, r.Error = StateFailed, "bureau stopped before the recording had a file"
		}
		if err := s.store.UpdateRecording(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) path(r *Recording) string {
	return filepath.Join(s.cfg.Dir, r.DesktopID, r.ID+".webm")
}

// Start begins recording a running desktop.
func (s *Service) Start(ctx context.Context, d *desktop.Desktop, o Options, actor string) (*Recording, error) {
	if !s.Available() {
		return nil, ErrNoFFmpeg
	}
	if err := o.fill(s.cfg.MaxSeconds); err != nil {
		return nil, err
	}
	if d.State != desktop.StateRunning {
		return nil, &desktop.TransitionError{Op: "record", State: d.State}
	}
	s.mu.Lock()
	if _, busy := s.active[d.ID]; busy {
		s.mu.Unlock()
		return nil, fmt.Errorf("desktop %s: %w", d.ID, ErrBusy)
	}
	sess := &session{stopc: make(chan string, 1), done: make(chan struct{})}
	s.active[d.ID] = sess // held while starting: a second Start is refused
	s.mu.Unlock()
	r, err := s.begin(ctx, d, o, actor, sess)
	if err != nil {
		s.mu.Lock()
		delete(s.active, d.ID)
		s.mu.Unlock()
		return nil, err
	}
	return r, nil
}

func (s *Service) begin(ctx context.Context, d *desktop.Desktop, o Options, actor string, sess *session) (*Recording, error) {
	first, _, err := s.screens.Screenshot(ctx, d.DomainName())
	if err != nil {
		return nil, fmt.Errorf("the desktop's screen: %w", err)
	}
	w, h, err := pngSize(first)
	if err != nil {
		return nil, err
	}
	r := &Recording{ID: newID(), DesktopID: d.ID, State: StateRecording, Actor: actor, FPS: o.FPS,
		MaxSeconds: o.MaxSeconds, Width: w, Height: h, StartedAt: time.Now().UTC(), Owner: d.Owner, DesktopName: d.Name}
	if err := os.MkdirAll(filepath.Dir(s.path(r)), 0o700); err != nil {
		return nil, fmt.Errorf("recordings folder: %w", err)
	}
	// ffmpeg outlives the request that started it.
	enc, err := startEncoder(context.WithoutCancel(ctx), s.cfg.FFmpeg, o.FPS, w, h, s.path(r))
	if err != nil {
		return nil, err
	}
	if err := s.store.InsertRecording(ctx, r); err != nil {
		enc.stdin.Close()
		enc.cmd.Process.Kill()
		os.Remove(s.path(r))
		return nil, err
	}
	s.mu.Lock()
	sess.rec, sess.enc, sess.domain = r, enc, d.DomainName()
	sess.release = s.viewers.AddViewer(d.ID)
	s.mu.Unlock()
	cp := *r // before run changes r
	go s.run(sess, first)
	if s.cfg.Changed != nil {
		s.cfg.Changed()
	}
	s.log.Info("recording", "desktop", d.ID, "recording", cp.ID, "fps", o.FPS, "size", fmt.Sprintf("%dx%d", w, h))
	return &cp, nil
}

// Stop ends a desktop's recording under way and waits until its file is
// complete; why says what ended it.
func (s *Service) Stop(ctx context.Context, desktopID, why string) (*Recording, error) {
	s.mu.Lock()
	sess := s.active[desktopID]
	s.mu.Unlock()
	if sess == nil || sess.rec == nil {
		return nil, fmt.Errorf("no recording of desktop %s is under way: %w", desktopID, desktop.ErrNotFound)
	}
	id := sess.rec.ID
	sess.stop(why)
	select {
	case <-sess.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.store.GetRecording(ctx, desktopID, id)
}

// Active is the recording under way in a desktop (nil: none).
func (s *Service) Active(desktopID string) *Recording {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.active[desktopID]; sess != nil && sess.rec != nil {
		return sess.snapshot()
	}
	return nil
}

// Recording counts recordings under way (metrics).
func (s *Service) Recording() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active)
}

// List returns a desktop's recordings, oldest first.
func (s *Service) List(ctx context.Context, desktopID string) ([]*Recording, error) {
	list, err := s.store.ListRecordings(ctx, desktopID)
	if err != nil {
		return nil, err
	}
	if a := s.Active(desktopID); a != nil {
		for i, r := range list {
			if r.ID == a.ID {
				list[i] = a
			}
		}
	}
	return list, nil
}

// Get returns one recording.
func (s *Service) Get(ctx context.Context, desktopID, id string) (*Recording, error) {
	if a := s.Active(desktopID); a != nil && a.ID == id {
		return a, nil
	}
	return s.store.GetRecording(ctx, desktopID, id)
}

// Video opens a finished recording's file.
func (s *Service) Video(ctx context.Context, desktopID, id string) (*os.File, *Recording, error) {
	r, err := s.Get(ctx, desktopID, id)
	if err != nil {
		return nil, nil, err
	}
	if r.State == StateRecording {
		return nil, r, fmt.Errorf("recording %s: %w: stop it first", id, ErrNotDone)
	}
	f, err := os.Open(s.path(r))
	if errors.Is(err, os.ErrNotExist) {
		return nil, r, fmt.Errorf("recording %s has no file: %w", id, desktop.ErrNotFound)
	}
	return f, r, err
}

// Delete removes a recording (stopping it first if under way).
func (s *Service) Delete(ctx context.Context, desktopID, id string) error {
	r, err := s.Get(ctx, desktopID, id)
	if err != nil {
		return err
	}
	if r.State == StateRecording {
		if _, err := s.Stop(ctx, desktopID, "deleted"); err != nil && !errors.Is(err, desktop.ErrNotFound) {
			return err
		}
	}
	if err := os.Remove(s.path(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if r.DesktopDeleted {
		os.Remove(filepath.Dir(s.path(r))) // the folder goes with its desktop's last kept recording
	}
	return s.store.DeleteRecording(ctx, id)
}

// DesktopChanged ends the recording of a desktop that stopped running
// (stopped, napping, hibernated, deleted…): its screen is gone.
func (s *Service) DesktopChanged(ctx context.Context, d *desktop.Desktop) {
	if d.State == desktop.StateRunning && d.DeletedAt == nil {
		return
	}
	if s.Active(d.ID) == nil {
		return
	}
	go func() {
		if _, err := s.Stop(context.WithoutCancel(ctx), d.ID, "the desktop is "+string(d.State)); err != nil {
			s.log.Warn("ending a recording", "desktop", d.ID, "err", err)
		}
	}()
}

// Forget removes a deleted desktop's recordings but the kept ones (the one
// under way is ended first, its file completed): those stay, with their
// files, until their owner deletes them.
func (s *Service) Forget(ctx context.Context, desktopID string) error {
	if s.Active(desktopID) != nil {
		if _, err := s.Stop(ctx, desktopID, "the desktop was deleted"); err != nil && !errors.Is(err, desktop.ErrNotFound) {
			return fmt.Errorf("ending the recording of deleted desktop %s: %w", desktopID, err)
		}
	}
	list, err := s.store.ListRecordings(ctx, desktopID)
	if err != nil {
		return err
	}
	kept := 0
	for _, r := range list {
		if r.Kept {
			kept++
			continue
		}
		if err := os.Remove(s.path(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("recording %s: %w", r.ID, err)
		}
		if err := s.store.DeleteRecording(ctx, r.ID); err != nil {
			return err
		}
	}
	if kept > 0 {
		s.log.Info("kept recordings outlive their desktop", "desktop", desktopID, "kept", kept)
		return nil
	}
	return os.RemoveAll(filepath.Join(s.cfg.Dir, desktopID))
}

// Close ends every recording under way (bureau is stopping), completing
// their files.
func (s *Service) Close(ctx context.Context) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.Stop(ctx, id, "bureau stopped")
	}
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "rec_" + hex.EncodeToString(b)
}
