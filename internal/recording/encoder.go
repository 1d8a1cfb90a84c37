package recording

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// encoder is one ffmpeg process turning a constant-rate stream of PNG
// frames into a WebM file: frames equal to the one before are dropped
// (mpdecimate), so an unchanged screen costs a decode, not an encode, and
// the file holds only changes, each at the time its frame was taken.
type encoder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	done   chan error
}

// keyframeEvery: a player can jump to any point within this of it.
const keyframeEvery = 2

func ffmpegArgs(fps, width, height int, path string) []string {
	return []string{"-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "image2pipe", "-framerate", strconv.Itoa(fps), "-c:v", "png", "-i", "-",
		// A screen that changes size mid-recording is scaled to the first
		// size. Of unchanged frames one a second is kept, so the video
		// lasts as long as the recording even if the screen never changes.
		"-vf", fmt.Sprintf("scale=%d:%d,mpdecimate=max=%d", width, height, fps), "-fps_mode", "vfr",
		"-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M", "-pix_fmt", "yuv420p",
		"-force_key_frames", fmt.Sprintf("expr:gte(t,n_forced*%d)", keyframeEvery),
		"-f", "webm", "-y", path}
}

func startEncoder(ctx context.Context, ffmpeg string, fps, width, height int, path string) (*encoder, error) {
	cmd := exec.CommandContext(ctx, ffmpeg, ffmpegArgs(fps, width, height, path)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	e := &encoder{cmd: cmd, stdin: stdin, stderr: &tail{max: 4096}, done: make(chan error, 1)}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting ffmpeg: %w", err)
	}
	go func() { e.done <- cmd.Wait() }()
	return e, nil
}

// frame hands ffmpeg one frame.
func (e *encoder) frame(png []byte) error {
	if _, err := e.stdin.Write(png); err != nil {
		return fmt.Errorf("ffmpeg stopped taking frames: %w%s", err, e.stderr.says())
	}
	return nil
}

// finish ends the stream and waits for ffmpeg to write the file's index.
func (e *encoder) finish(within time.Duration) error {
	e.stdin.Close()
	select {
	case err := <-e.done:
		if err != nil {
			return fmt.Errorf("ffmpeg: %w%s", err, e.stderr.says())
		}
		return nil
	case <-time.After(within):
		e.cmd.Process.Kill()
		<-e.done
		return fmt.Errorf("ffmpeg did not finish the file within %s", within)
	}
}

// tail keeps the last bytes written to it (ffmpeg's messages).
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) says() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(bytes.ToValidUTF8(t.b, nil)))
	if s == "" {
		return ""
	}
	return ": " + s
}
