// Package recording records desktops' screens from the hypervisor's side
// (boot, login screen, any window manager) into WebM files: frames are
// taken a few times a second, only changed ones are encoded (VP8 by the
// host's ffmpeg), and each is stamped with the time it was taken, so a
// point in a recording is a point in time (a step of the step log).
package recording

import (
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// States of a recording.
const (
	StateRecording = "recording"
	StateDone      = "done"
	StateFailed    = "failed"
)

// Recording is one recording of a desktop's screen.
type Recording struct {
	ID         string `json:"id"`
	DesktopID  string `json:"desktop_id"`
	State      string `json:"state"`
	Actor      string `json:"actor"`
	FPS        int    `json:"fps"`
	MaxSeconds int    `json:"max_seconds"`
	// Width and Height are the video's (the screen's when it began).
	Width  int `json:"width"`
	Height int `json:"height"`
	// Frames counts the changed frames encoded.
	Frames    int64      `json:"frames"`
	SizeBytes int64      `json:"size_bytes"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// EndedWhy says what ended it (stopped by …, the desktop stopped,
	// max_seconds…); Error why it failed.
	EndedWhy string `json:"ended_why,omitempty"`
	Error    string `json:"error,omitempty"`
	// Owner and DesktopName are the desktop's when it began: a kept
	// recording outlives its desktop.
	Owner       string `json:"owner"`
	DesktopName string `json:"desktop_name"`
	// Kept recordings stay when their desktop is deleted, and the size
	// budget never removes them: only their owner does.
	Kept bool `json:"kept"`
	// DesktopDeleted says its desktop is gone (as read from the store).
	DesktopDeleted bool `json:"desktop_deleted"`
}

// DurationMS is how long it covers (so far, while recording).
func (r *Recording) DurationMS() int64 {
	end := time.Now()
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	return end.Sub(r.StartedAt).Milliseconds()
}

// Options of a new recording.
type Options struct {
	// FPS is how often the screen is looked at (1 to 10; default 2).
	FPS int `json:"fps"`
	// MaxSeconds ends it (default and most: the service's limit).
	MaxSeconds int `json:"max_seconds"`
}

// Errors.
var (
	ErrBusy       = errors.New("a recording of this desktop is under way")
	ErrNotDone    = errors.New("the recording is not finished")
	ErrNoFFmpeg   = errors.New("recordings need ffmpeg on the host (apt-get install ffmpeg)")
	errNotRunning = errors.New("the desktop is not running")
)

func (o *Options) fill(maxSeconds int) error {
	if o.FPS == 0 {
		o.FPS = 2
	}
	if o.FPS < 1 || o.FPS > 10 {
		return &desktop.ValidationError{Field: "fps", Message: "must be 1 to 10 frames a second"}
	}
	if o.MaxSeconds == 0 {
		o.MaxSeconds = maxSeconds
	}
	if o.MaxSeconds < 1 || o.MaxSeconds > maxSeconds {
		return &desktop.ValidationError{Field: "max_seconds", Message: fmt.Sprintf("must be 1 to %d (BUREAU_RECORDING_MAX_SECONDS)", maxSeconds)}
	}
	return nil
}
