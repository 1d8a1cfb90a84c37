package recording

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestLengthenRewritesTheDuration(t *testing.T) {
	needFFmpeg(t)
	path := filepath.Join(t.TempDir(), "v.webm")
	// 1 s of video at 5 fps.
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "color=c=red:s=64x48:r=5:d=1",
		"-c:v", "libvpx", "-f", "webm", "-y", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	if got := probe(t, path); got < 0.9 || got > 1.3 {
		t.Fatalf("made a video of %.2fs, want ~1s", got)
	}
	if err := lengthen(path, 2600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, path); got < 2.55 || got > 2.65 {
		t.Fatalf("after lengthen: %.2fs, want 2.6s", got)
	}
	// Never shortened.
	if err := lengthen(path, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, path); got < 2.55 {
		t.Fatalf("lengthen to less shortened the video to %.2fs", got)
	}
	// Still a file players read to its end.
	if out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-f", "null", "-").CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("decoding the lengthened file: %v %s", err, out)
	}
	// Not a WebM file: an error, nothing written.
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("not a video at all"), 0o600)
	if err := lengthen(junk, time.Second); err == nil {
		t.Fatal("lengthen accepted a file that is not WebM")
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a video at all" {
		t.Fatal("lengthen wrote into a file that is not WebM")
	}
}
