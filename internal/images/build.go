package images

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// BuildRequest names the image to build and its recipe folder (holding
// build.sh, which prints "@@progress <phase> <percent> [detail]" lines).
type BuildRequest struct {
	Name      string
	RecipeDir string
	OS        string
	Version   string
}

// RecipeHash hashes every file of a recipe folder, names and contents.
func RecipeHash(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("recipe %s: %w", dir, err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Build makes the image from its recipe unless an image built from the same
// recipe is registered or cached, and registers it. It reports whether it
// reused an earlier build.
func (s *Service) Build(ctx context.Context, req BuildRequest, progress ProgressFunc) (*desktop.Image, bool, error) {
	if err := validName(req.Name); err != nil {
		return nil, false, err
	}
	hash, err := RecipeHash(req.RecipeDir)
	if err != nil {
		return nil, false, err
	}
	im := &desktop.Image{Name: req.Name, OS: req.OS, Version: req.Version, Path: s.path(req.Name), RecipeHash: hash, Source: "recipe " + req.RecipeDir}
	cached := filepath.Join(s.CacheDir, req.Name+"-"+hash+".qcow2")
	if old, err := s.Store.GetImage(ctx, req.Name); err == nil && old.RecipeHash == hash {
		if _, err := os.Stat(old.Path); err == nil {
			s.pruneCache(req.Name, cached)
			progress.report(Progress{Phase: "reused", Percent: 100})
			return old, true, nil
		}
	}
	reused := true
	if _, err := os.Stat(cached); errors.Is(err, os.ErrNotExist) {
		reused = false
		if err := ensureSpace(s.CacheDir, 8<<30); err != nil {
			return nil, false, err
		}
		if err := s.runRecipe(ctx, req.RecipeDir, cached, progress); err != nil {
			return nil, false, err
		}
	}
	s.pruneCache(req.Name, cached)
	if err := s.replaceable(ctx, req.Name, im.Path, cached); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, false, err
	}
	if err := linkOrCopy(cached, im.Path); err != nil {
		return nil, false, err
	}
	if err := s.register(ctx, im); err != nil {
		return nil, false, err
	}
	progress.report(Progress{Phase: "registered", Percent: 100})
	return im, reused, nil
}

// RebuildInUseError is a build that was not put in place of the image
// it rebuilds: desktops have their OS disks over that image, and an
// overlay run over another base reads garbage. The image stays as it was;
// the new build stays in the cache.
type RebuildInUseError struct {
	Image    string
	Desktops []string
	Cached   string // the new build
}

func (e *RebuildInUseError) Error() string {
	return fmt.Sprintf("image %q was not replaced by its new build: desktops %s have their OS disks over it, and would read another base under them. "+
		"It stays as it was; the new build is %s: import it under another name (bureau image import --name %s-new --path %s) and reimage desktops onto it (bureau desktop reimage NAME --image %s-new), or delete those desktops",
		e.Image, strings.Join(e.Desktops, ", "), e.Cached, e.Image, e.Cached, e.Image)
}

// replaceable refuses to put the build cached in place of the image name
// at path while desktops are over it, unless the file there is that
// build already.
func (s *Service) replaceable(ctx context.Context, name, path, cached string) error {
	old, err := os.Stat(path)
	if err != nil {
		return nil // nothing there to replace
	}
	if st, err := os.Stat(cached); err == nil && os.SameFile(old, st) {
		return nil
	}
	users, err := s.users(ctx, name)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		return nil
	}
	if same, err := sameContent(path, cached); err != nil || same {
		return err
	}
	return &RebuildInUseError{Image: name, Desktops: users, Cached: cached}
}

// sameContent says whether files a and b hold the same bytes.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	if fa.Size() != fb.Size() {
		return false, nil
	}
	sa, err := fileSHA256(a)
	if err != nil {
		return false, err
	}
	sb, err := fileSHA256(b)
	return sa == sb, err
}

// cacheKeep is how many builds of one image the cache keeps: the newest
// and the one before it (going back to the previous recipe, another
// branch, reuses it). A registered image is a link of its own to its
// build, so pruning the cache never removes an image in use.
const cacheKeep = 2

// pruneCache removes the oldest cached builds of the image name beyond
// cacheKeep, never keep itself: each is the size of the image (600+ MiB),
// and a recipe changed often fills the disk.
func (s *Service) pruneCache(name, keep string) {
	entries, err := os.ReadDir(s.CacheDir)
	if err != nil {
		return
	}
	type build struct {
		path string
		mod  time.Time
	}
	var others []build
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), name+"-")
		hash, qcow2 := strings.CutSuffix(rest, ".qcow2")
		if !ok || !qcow2 || !isRecipeHash(hash) {
			continue
		}
		p := filepath.Join(s.CacheDir, e.Name())
		if p == keep {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			others = append(others, build{p, info.ModTime()})
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].mod.After(others[j].mod) })
	for _, b := range others[min(len(others), cacheKeep-1):] {
		if err := os.Remove(b.path); err != nil {
			s.Log.Warn("remove an old cached build", "path", b.path, "err", err)
			continue
		}
		s.Log.Info("removed an old cached build", "image", name, "path", b.path)
	}
}

// isRecipeHash says whether h is a RecipeHash: 16 lowercase hex digits.
func isRecipeHash(h string) bool {
	if len(h) != 16 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// runRecipe runs build.sh, turning its progress lines into reports with an
// estimate of the time left.
func (s *Service) runRecipe(ctx context.Context, dir, out string, progress ProgressFunc) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "build.sh"), out)
	cmd.Stderr = &tail{max: 4096}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("image recipe: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		p, ok := parseProgress(sc.Text())
		if !ok {
			continue
		}
		// Early phases are too short to extrapolate from.
		if elapsed := time.Since(start); p.Percent >= 5 && p.Percent < 100 && elapsed > 15*time.Second {
			p.ETA = time.Duration(float64(elapsed) * (100 - p.Percent) / p.Percent).Round(time.Second)
		}
		progress.report(p)
	}
	if err := cmd.Wait(); err != nil {
		os.Remove(out)
		return fmt.Errorf("image recipe failed: %w: %s", err, cmd.Stderr.(*tail).String())
	}
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("image recipe wrote no image: %w", err)
	}
	return nil
}

// parseProgress reads a recipe's "@@progress <phase> <percent> [detail…]"
// line; the detail (free text, e.g. "downloading 312/540 packages") is
// optional.
func parseProgress(line string) (Progress, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "@@progress" {
		return Progress{}, false
	}
	pct, err := strconv.ParseFloat(f[2], 64)
	if err != nil || pct < 0 || pct > 100 {
		return Progress{}, false
	}
	return Progress{Phase: f[1], Percent: pct, Detail: strings.Join(f[3:], " ")}, true
}

func linkOrCopy(src, dst string) error {
	tmp := dst + ".partial"
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tail keeps the last max bytes written to it, for error messages.
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(t.b)) }
