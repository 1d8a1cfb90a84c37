package images

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// ImportRequest brings in an existing disk image (e.g. Ubuntu's cloud image).
type ImportRequest struct {
	Name    string `json:"name"`
	URL     string `json:"url,omitempty"`
	Path    string `json:"path,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	OS      string `json:"os,omitempty"`
	Version string `json:"version,omitempty"`
}

func (r ImportRequest) validate() error {
	if err := validName(r.Name); err != nil {
		return err
	}
	if (r.URL == "") == (r.Path == "") {
		return &desktop.ValidationError{Field: "url", Message: "give exactly one of url or path"}
	}
	if r.URL != "" && !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
		return &desktop.ValidationError{Field: "url", Message: "must be an http:// or https:// URL"}
	}
	if r.SHA256 != "" {
		if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != sha256.Size {
			return &desktop.ValidationError{Field: "sha256", Message: "must be 64 hexadecimal characters"}
		}
	}
	return nil
}

// CheckImport validates an import request without doing any work, so a
// caller can answer bad input before it starts streaming progress.
func (s *Service) CheckImport(ctx context.Context, req ImportRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	if _, err := s.Store.GetImage(ctx, req.Name); err == nil {
		return fmt.Errorf("image %q: %w", req.Name, ErrExists)
	}
	return nil
}

// ErrExists means an image of that name is registered.
var ErrExists = errors.New("an image with that name is already registered")

// Import downloads (resuming a partial download) or copies an image,
// verifies the checksum if one is given, checks that it is a
// self-contained qcow2 or raw image, converts it to qcow2, refuses files
// that are not bootable disk images, and registers it. Nothing is
// registered and no file is left when any step fails, except a partial
// download, which a retry resumes.
func (s *Service) Import(ctx context.Context, req ImportRequest, progress ProgressFunc) (*desktop.Image, error) {
	if err := s.CheckImport(ctx, req); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	// From here on the image is a file in s.Dir that only bureau writes,
	// so what is checked below is what qemu-img reads.
	var src string
	if req.URL != "" {
		src = s.path(req.Name) + ".download"
		if err := s.download(ctx, req.URL, src, progress); err != nil {
			return nil, err
		}
	} else {
		src = s.path(req.Name) + ".copy"
		defer os.Remove(src)
		if err := s.copyPath(ctx, req.Path, src, progress); err != nil {
			return nil, err
		}
	}
	if req.SHA256 != "" {
		progress.report(Progress{Phase: "verify", Percent: 0})
		sum, err := fileSHA256(src)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(sum, req.SHA256) {
			if req.URL != "" {
				os.Remove(src)
			}
			return nil, &desktop.ValidationError{Field: "sha256", Message: fmt.Sprintf("checksum mismatch: file has %s, expected %s; the download was removed", sum, strings.ToLower(req.SHA256))}
		}
	}
	// Read the header before anything opens the file as qcow2.
	format, _, err := inspectPath(src)
	if err != nil {
		var ve *desktop.ValidationError
		if req.URL != "" && errors.As(err, &ve) {
			os.Remove(src) // refused for what it is: resuming it cannot help
		}
		return nil, err
	}
	virtual, err := s.probe(ctx, src, format)
	if err != nil {
		return nil, err
	}
	if err := ensureSpace(s.Dir, virtual/4+(256<<20)); err != nil {
		return nil, err
	}
	dst := s.path(req.Name)
	tmp := dst + ".partial"
	progress.report(Progress{Phase: "convert", Percent: 0})
	if out, err := exec.CommandContext(ctx, s.qemuImg(), "convert", "-f", format, "-O", "qcow2", qemuPath(src), qemuPath(tmp)).CombinedOutput(); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("convert to qcow2: %w: %s", err, bytes.TrimSpace(out))
	}
	if err := s.checkBootable(ctx, tmp); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	source := req.URL
	if source == "" {
		source = "path " + req.Path
	}
	im := &desktop.Image{Name: req.Name, OS: req.OS, Version: req.Version, Path: dst, Source: source}
	if err := s.register(ctx, im); err != nil {
		os.Remove(dst)
		return nil, err
	}
	if req.URL != "" {
		os.Remove(src)
	}
	progress.report(Progress{Phase: "registered", Percent: 100})
	return im, nil
}

// copyPath checks the file an import by path names and copies it to dst.
// The header is checked on the source too, so a refused image is refused
// before any progress is reported (the API can then still answer 422).
func (s *Service) copyPath(ctx context.Context, path, dst string, progress ProgressFunc) error {
	f, err := s.openSource(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, err := inspectImage(f); err != nil {
		return err
	}
	return s.copyIn(ctx, f, dst, progress)
}

// qemuPath makes a path absolute, so qemu-img never reads a prefix like
// "json:" or "nbd:" in it as a protocol.
func qemuPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func (s *Service) qemuImg() string {
	if s.QemuImg != "" {
		return s.QemuImg
	}
	return "qemu-img"
}

// probe asks qemu-img about a file whose header bureau already checked.
// The format is given, so qemu-img never guesses it, and it does not walk
// a backing chain; its answer is a second opinion on what the header
// check refuses.
func (s *Service) probe(ctx context.Context, path, format string) (int64, error) {
	out, err := exec.CommandContext(ctx, s.qemuImg(), "info", "-f", format, "--output=json", qemuPath(path)).Output()
	if err != nil {
		msg := fmt.Sprintf("not a readable %s disk image", format)
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			msg += ": " + string(bytes.TrimSpace(ee.Stderr))
		}
		return 0, &desktop.ValidationError{Field: "image", Message: msg}
	}
	var info struct {
		Format         string `json:"format"`
		VirtualSize    int64  `json:"virtual-size"`
		BackingFile    string `json:"backing-filename"`
		FullBacking    string `json:"full-backing-filename"`
		Encrypted      bool   `json:"encrypted"`
		FormatSpecific struct {
			Data struct {
				DataFile string `json:"data-file"`
			} `json:"data"`
		} `json:"format-specific"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return 0, err
	}
	switch {
	case info.Format != format:
		return 0, refuse(fmt.Errorf("qemu-img reads it as %q, not %q", info.Format, format))
	case info.BackingFile != "" || info.FullBacking != "":
		return 0, refuse(errBackingFile(cmp.Or(info.BackingFile, info.FullBacking)))
	case info.FormatSpecific.Data.DataFile != "":
		return 0, refuse(errDataFile(info.FormatSpecific.Data.DataFile))
	case info.Encrypted:
		return 0, refuse(errEncrypted)
	case info.VirtualSize > MaxVirtualSize:
		return 0, refuse(fmt.Errorf("virtual size %d bytes is over the %d GiB maximum", info.VirtualSize, MaxVirtualSize>>30))
	case info.VirtualSize < 64<<20:
		return 0, &desktop.ValidationError{Field: "image", Message: fmt.Sprintf("disk image is only %d bytes: too small to hold an operating system", info.VirtualSize)}
	}
	return info.VirtualSize, nil
}

// checkBootable reads the first sector and wants an MBR boot signature
// (BIOS disks and GPT disks' protective MBR both carry one).
func (s *Service) checkBootable(ctx context.Context, path string) error {
	sector, err := os.CreateTemp("", "bureau-mbr-")
	if err != nil {
		return err
	}
	sector.Close()
	defer os.Remove(sector.Name())
	os.Remove(sector.Name())
	if out, err := exec.CommandContext(ctx, s.qemuImg(), "dd", "-f", "qcow2", "-O", "raw", "bs=512", "count=1",
		"if="+qemuPath(path), "of="+sector.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("read boot sector: %w: %s", err, bytes.TrimSpace(out))
	}
	b, err := os.ReadFile(sector.Name())
	if err != nil {
		return err
	}
	if len(b) < 512 || b[510] != 0x55 || b[511] != 0xAA {
		return &desktop.ValidationError{Field: "image", Message: "the disk image has no boot sector (no MBR/GPT boot signature): not bootable"}
	}
	return nil
}

// download fetches url into dst, resuming from dst's current size when the
// server supports ranges.
func (s *Service) download(ctx context.Context, url, dst string, progress ProgressFunc) error {
	var have int64
	if st, err := os.Stat(dst); err == nil {
		have = st.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &desktop.ValidationError{Field: "url", Message: err.Error()}
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return nil // already complete
	case resp.StatusCode == http.StatusOK:
		have = 0
		flags |= os.O_TRUNC
	default:
		return &desktop.ValidationError{Field: "url", Message: fmt.Sprintf("download %s: HTTP %s", url, resp.Status)}
	}
	total := int64(-1)
	body := bufio.NewReaderSize(resp.Body, headSize)
	if resp.ContentLength >= 0 {
		total = have + resp.ContentLength
		if total > MaxImageFileSize {
			os.Remove(dst)
			return refuse(fmt.Errorf("download %s is %d bytes, over the %d GiB maximum", url, total, MaxImageFileSize>>30))
		}
	}
	if have == 0 {
		if err := checkHead(body, resp.ContentLength); err != nil {
			os.Remove(dst)
			return err
		}
	}
	if resp.ContentLength >= 0 {
		if err := ensureSpace(s.Dir, resp.ContentLength*3+(256<<20)); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(dst, flags, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cw := &countingWriter{w: f, phase: "download", done: have, total: total, start: time.Now(), base: have, progress: progress}
	// One byte over the limit tells an oversized body from one that fits.
	if _, err := io.Copy(cw, io.LimitReader(body, MaxImageFileSize-have+1)); err != nil {
		return fmt.Errorf("download %s (partial file kept for resume): %w", url, err)
	}
	if cw.done > MaxImageFileSize {
		f.Close()
		os.Remove(dst)
		return refuse(fmt.Errorf("download %s is over the %d GiB maximum", url, MaxImageFileSize>>30))
	}
	if total >= 0 && cw.done != total {
		return fmt.Errorf("download %s: got %d of %d bytes (partial file kept for resume)", url, cw.done, total)
	}
	return f.Close()
}

// checkHead checks a fresh download's header as soon as it arrives, so a
// hostile image is refused before it is downloaded (and before any
// progress, so the API can still answer 422). length is the body's length,
// -1 when unknown. The whole file is checked again once it is here.
func checkHead(body *bufio.Reader, length int64) error {
	n := headSize
	if length >= 0 {
		n = int(min(length, headSize))
	}
	head, err := body.Peek(n)
	switch {
	case err == nil && length < 0:
		// Only the size is unknown: assume the largest allowed, which
		// defers the table bounds to the full check.
		length = MaxImageFileSize
	case errors.Is(err, io.EOF) && length < 0:
		length = int64(len(head)) // that was the whole body
	case err != nil:
		return nil // a short read is left to the download to report
	}
	_, _, err = classifyImage(head, nil, length)
	return err
}

type countingWriter struct {
	w                 io.Writer
	phase             string
	done, total, base int64
	start, last       time.Time
	progress          ProgressFunc
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.done += int64(n)
	if time.Since(c.last) > 500*time.Millisecond || c.done == c.total {
		c.last = time.Now()
		p := Progress{Phase: c.phase, Done: c.done, Total: c.total}
		if c.total > 0 {
			p.Percent = float64(c.done) * 100 / float64(c.total)
			if rate := float64(c.done-c.base) / time.Since(c.start).Seconds(); rate > 0 {
				p.ETA = time.Duration(float64(c.total-c.done) / rate * float64(time.Second)).Round(time.Second)
			}
		}
		c.progress.report(p)
	}
	return n, err
}
