package recording

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// screen is a fake display whose colour the test sets.
type screen struct {
	shade atomic.Int32
	shots atomic.Int32
}

func (s *screen) Screenshot(context.Context, string) ([]byte, string, error) {
	s.shots.Add(1)
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	c := color.RGBA{uint8(s.shade.Load() * 40), 80, 160, 255}
	for y := 0; y < 200; y++ {
		for x := 0; x < 320; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes(), "image/png", nil
}

type memStore struct {
	mu   sync.Mutex
	recs map[string]*Recording
}

func (m *memStore) InsertRecording(_ context.Context, r *Recording) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := *r
	m.recs[r.ID] = &cp
	return nil
}
func (m *memStore) UpdateRecording(_ context.Context, r *Recording) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := *r
	if old, ok := m.recs[r.ID]; ok { // as the store: kept is SetRecordingKept's
		cp.Kept = old.Kept
	}
	m.recs[r.ID] = &cp
	return nil
}
func (m *memStore) FindRecording(_ context.Context, id string) (*Recording, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recs[id]; ok {
		cp := *r
		return &cp, nil
	}
	return nil, desktop.ErrNotFound
}
func (m *memStore) OwnerRecordings(_ context.Context, owner string) ([]*Recording, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*Recording{}
	for _, r := range m.recs {
		if owner == "" || r.Owner == owner {
			cp := *r
			out = append(out, &cp)
		}
	}
	return out, nil
}
func (m *memStore) SetRecordingKept(_ context.Context, id string, kept bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok {
		return desktop.ErrNotFound
	}
	r.Kept = kept
	return nil
}
func (m *memStore) GetRecording(_ context.Context, desktopID, id string) (*Recording, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recs[id]; ok && r.DesktopID == desktopID {
		cp := *r
		return &cp, nil
	}
	return nil, desktop.ErrNotFound
}
func (m *memStore) ListRecordings(_ context.Context, desktopID string) ([]*Recording, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*Recording{}
	for _, r := range m.recs {
		if r.DesktopID == desktopID {
			cp := *r
			out = append(out, &cp)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].StartedAt.Before(out[j-1].StartedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}
func (m *memStore) DeleteRecording(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}
func (m *memStore) UnfinishedRecordings(_ context.Context) ([]*Recording, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Recording
	for _, r := range m.recs {
		if r.State == StateRecording {
			cp := *r
			out = append(out, &cp)
		}
	}
	return out, nil
}

type viewers struct{ n atomic.Int32 }

func (v *viewers) AddViewer(string) func() {
	v.n.Add(1)
	return func() { v.n.Add(-1) }
}

func needFFmpeg(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host (apt-get install ffmpeg)")
	}
}

func newService(t *testing.T, maxSeconds int, keep int64) (*Service, *screen, *memStore, *viewers) {
	scr, st, v := &screen{}, &memStore{recs: map[string]*Recording{}}, &viewers{}
	return New(Config{Dir: t.TempDir(), MaxSeconds: maxSeconds, KeepBytes: keep}, st, scr, v, slog.Default()), scr, st, v
}

var running = &desktop.Desktop{ID: "d1", Name: "one", State: desktop.StateRunning}

// hangGuard bounds waits for what must happen: long enough for a busy
// machine, it only turns a hang into a failure.
const hangGuard = 30 * time.Second

// seenAfter waits until the recorder has surely taken and handled a
// screenshot begun after this call (its screenshots come one after the
// other: a second one begins once the first is handled) and says when.
func seenAfter(t *testing.T, scr *screen) time.Time {
	t.Helper()
	n := scr.shots.Load()
	for deadline := time.Now().Add(hangGuard); scr.shots.Load() < n+2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the recorder stopped taking screenshots")
		}
	}
	return time.Now()
}

// probe asks ffprobe for a video's duration in seconds.
func probe(t *testing.T, path string) float64 {
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("ffprobe said %q", out)
	}
	return d
}

func TestRecordOnlyChangesAtTheirTime(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	s, scr, _, v := newService(t, 60, 0)
	r, err := s.Start(ctx, running, Options{FPS: 5}, "alice/tok_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateRecording || r.Width != 320 || r.Height != 200 || v.n.Load() != 1 {
		t.Fatalf("started %+v (viewers %d)", r, v.n.Load())
	}
	if _, err := s.Start(ctx, running, Options{}, "x"); !errors.Is(err, ErrBusy) {
		t.Errorf("a second recording: %v", err)
	}
	if _, _, err := s.Video(ctx, "d1", r.ID); !errors.Is(err, ErrNotDone) {
		t.Errorf("the video of a recording under way: %v", err)
	}
	// Three changes, each made at least 500 ms after the one before and
	// seen by the recorder before the next: when each was made and when
	// it had surely been seen are the bounds of where it belongs in the
	// video, whatever the machine's speed.
	start := r.StartedAt
	type change struct{ made, seen time.Time }
	changes := []change{{start, start}} // the first screen, frame 0
	for i := int32(1); i <= 3; i++ {
		time.Sleep(500 * time.Millisecond)
		made := time.Now()
		scr.shade.Store(i)
		changes = append(changes, change{made, seenAfter(t, scr)})
	}
	time.Sleep(500 * time.Millisecond)
	stopAt := time.Now()
	done, err := s.Stop(ctx, "d1", "stopped by alice")
	if err != nil {
		t.Fatal(err)
	}
	if done.State != StateDone || done.Frames != 4 || done.EndedWhy != "stopped by alice" || done.SizeBytes == 0 || v.n.Load() != 0 {
		t.Fatalf("ended %+v (viewers %d)", done, v.n.Load())
	}
	f, _, err := s.Video(ctx, "d1", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	magic := make([]byte, 4)
	f.Read(magic)
	f.Close()
	if !bytes.Equal(magic, []byte{0x1a, 0x45, 0xdf, 0xa3}) {
		t.Errorf("not a WebM file: % x", magic)
	}
	// The video is as long as the recording: it lasts at least until the
	// stop was asked for, and at most until the recording ended (to a
	// frame).
	const period = time.Second / 5
	secs := func(d time.Duration) float64 { return d.Seconds() }
	got, least, most := probe(t, f.Name()), secs(stopAt.Sub(start)), secs(done.EndedAt.Sub(start)+period)
	if got < least-0.01 || got > most+0.01 {
		t.Errorf("video of %.2fs for a recording asked to stop after %.2fs and ended after %.2fs", got, least, secs(done.EndedAt.Sub(start)))
	}
	// Only the changes are in it, each at the time it was seen.
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", f.Name()).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pts []float64
	for _, ts := range strings.Fields(string(out)) {
		p, _ := strconv.ParseFloat(ts, 64)
		pts = append(pts, p)
	}
	// (and, of an unchanged screen, at most one a second).
	if len(pts) < 4 || len(pts) > 4+int(math.Ceil(got)) {
		t.Fatalf("%d frames in a video of %.2fs (%v), want the 4 changes (and at most one a second kept for time)", len(pts), got, pts)
	}
	for i, c := range changes {
		// A change is in the frame of the period it was seen in: not
		// before the period it was made in, not after it was seen.
		lo := secs(c.made.Sub(start).Truncate(period)) - 0.002
		hi := secs(c.seen.Sub(start)) + 0.002
		if !slices.ContainsFunc(pts, func(p float64) bool { return p >= lo && p <= hi }) {
			t.Errorf("change %d, made at %.2fs and seen by %.2fs, has no frame then: frames at %v", i, lo, hi, pts)
		}
	}
	if err := s.Delete(ctx, "d1", r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
		t.Errorf("file left after delete: %v", err)
	}
}

func TestRecordingEnds(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	s, _, _, _ := newService(t, 1, 0)
	r, err := s.Start(ctx, running, Options{FPS: 2}, "a")
	if err != nil {
		t.Fatal(err)
	}
	waitEnded := func() *Recording {
		for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if s.Active("d1") == nil {
				got, _ := s.Get(ctx, "d1", r.ID)
				return got
			}
		}
		t.Fatal("still recording")
		return nil
	}
	got := waitEnded()
	if got.State != StateDone || !strings.Contains(got.EndedWhy, "max_seconds") {
		t.Errorf("at max_seconds: %+v", got)
	}
	// An unchanged screen still makes a video as long as the recording:
	// at least the second it was limited to, at most until it ended (to
	// a frame).
	most := got.EndedAt.Sub(got.StartedAt) + time.Second/2
	if d := probe(t, s.path(got)); d < 0.99 || d > most.Seconds()+0.01 {
		t.Errorf("an unchanged second (ended after %s) recorded as %.2fs of video", got.EndedAt.Sub(got.StartedAt), d)
	}
	// A desktop that stops running ends its recording.
	r, _ = s.Start(ctx, running, Options{MaxSeconds: 1}, "a")
	stopped := *running
	stopped.State = desktop.StateHibernated
	s.DesktopChanged(ctx, &stopped)
	if got := waitEnded(); !strings.Contains(got.EndedWhy, "hibernated") {
		t.Errorf("after the desktop hibernated: %+v", got)
	}
	if _, err := s.Start(ctx, &stopped, Options{}, "a"); err == nil {
		t.Error("recorded a hibernated desktop")
	}
	for _, o := range []Options{{FPS: 11}, {FPS: -1}, {MaxSeconds: 2}} {
		if _, err := s.Start(ctx, running, o, "a"); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestRecoverAndPrune(t *testing.T) {
	ctx := context.Background()
	s, _, st, _ := newService(t, 60, 100)
	now := time.Now().UTC()
	for i, size := range []int64{60, 60, 30} {
		r := &Recording{ID: "r" + strconv.Itoa(i), DesktopID: "d1", State: StateDone, SizeBytes: size, StartedAt: now.Add(time.Duration(i) * time.Minute)}
		st.InsertRecording(ctx, r)
		os.MkdirAll(filepath.Dir(s.path(r)), 0o700)
		os.WriteFile(s.path(r), make([]byte, size), 0o600)
	}
	s.prune(ctx, "d1")
	list, _ := st.ListRecordings(ctx, "d1")
	if len(list) != 2 || list[0].ID != "r1" || list[1].ID != "r2" {
		t.Errorf("after pruning to 100 bytes: %+v", list)
	}
	half := &Recording{ID: "half", DesktopID: "d1", State: StateRecording, StartedAt: now}
	st.InsertRecording(ctx, half)
	os.WriteFile(s.path(half), []byte("part"), 0o600)
	gone := &Recording{ID: "gone", DesktopID: "d2", State: StateRecording, StartedAt: now}
	st.InsertRecording(ctx, gone)
	if err := s.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.GetRecording(ctx, "d1", "half"); r.State != StateDone || r.SizeBytes != 4 || r.EndedAt == nil {
		t.Errorf("a recording bureau died during: %+v", r)
	}
	if r, _ := st.GetRecording(ctx, "d2", "gone"); r.State != StateFailed {
		t.Errorf("one with no file: %+v", r)
	}
}

// A recording under way can be kept; the desktop's deletion ends it,
// completes its file and leaves it.
func TestKeepTheRecordingUnderWay(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	s, _, _, _ := newService(t, 60, 0)
	d := *running
	d.Owner = "alice"
	r, err := s.Start(ctx, &d, Options{FPS: 5}, "alice/tok_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetKept(ctx, "d1", r.ID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "d1", r.ID); !got.Kept || got.State != StateRecording {
		t.Errorf("under way, kept: %+v", got)
	}
	time.Sleep(500 * time.Millisecond)
	if err := s.Forget(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Find(ctx, r.ID)
	if err != nil || !got.Kept || got.State != StateDone || got.EndedWhy != "the desktop was deleted" || got.SizeBytes == 0 ||
		got.Owner != "alice" || got.DesktopName != "one" {
		t.Fatalf("after the desktop was deleted: %+v %v", got, err)
	}
	if list, _ := s.ListOwned(ctx, "alice"); len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("alice's recordings: %+v", list)
	}
	if list, _ := s.ListOwned(ctx, "bob"); len(list) != 0 {
		t.Errorf("bob's recordings: %+v", list)
	}
	f, _, err := s.Video(ctx, "d1", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
