package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

func newService(t *testing.T) *Service {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed (scripts/host-setup.sh installs it)")
	}
	return newServiceNoQemu(t)
}

// newServiceNoQemu is newService for tests that must not reach qemu-img.
func newServiceNoQemu(t *testing.T) *Service {
	t.Helper()
	dir := t.TempDir()
	st := storetest.Open(t, filepath.Join(dir, "b.db"))
	return &Service{Dir: filepath.Join(dir, "images"), CacheDir: filepath.Join(dir, "cache"), Store: st, Log: slog.New(slog.DiscardHandler)}
}

// makeDisk writes a sparse raw disk of 128 MiB, with an MBR boot signature
// when bootable, and returns its path.
func makeDisk(t *testing.T, bootable bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "disk.raw")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(128 << 20)
	if bootable {
		f.WriteAt([]byte("bureau test boot code"), 0)
		f.WriteAt([]byte{0x55, 0xAA}, 510)
	}
	f.Close()
	return path
}

func toQcow2(t *testing.T, raw string) string {
	t.Helper()
	out := strings.TrimSuffix(raw, ".raw") + ".qcow2"
	if b, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, out).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out
}

func sum(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestImportFromPath(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	src := toQcow2(t, makeDisk(t, true))
	var phases []string
	im, err := s.Import(ctx, ImportRequest{Name: "local", Path: src, SHA256: sum(t, src), OS: "test"}, func(p Progress) { phases = append(phases, p.Phase) })
	if err != nil {
		t.Fatal(err)
	}
	if im.Path != filepath.Join(s.Dir, "local.qcow2") || im.SizeBytes == 0 || len(im.SHA256) != 64 {
		t.Fatalf("imported %+v", im)
	}
	if got, err := s.Store.GetImage(ctx, "local"); err != nil || got.SHA256 != im.SHA256 {
		t.Fatalf("registered: %+v %v", got, err)
	}
	if !strings.Contains(strings.Join(phases, ","), "registered") {
		t.Errorf("progress phases %v", phases)
	}
	if !exists(src) {
		t.Error("import by path removed the user's source file")
	}
	if _, err := s.Import(ctx, ImportRequest{Name: "local", Path: src}, nil); !errors.Is(err, ErrExists) {
		t.Errorf("second import of the same name: %v", err)
	}
}

func TestImportRefusesBadFiles(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	garbage := filepath.Join(t.TempDir(), "garbage.img")
	os.WriteFile(garbage, []byte("this is not a disk image at all"), 0o644)
	cases := map[string]ImportRequest{
		"too small":    {Name: "g", Path: garbage},
		"no boot":      {Name: "nb", Path: makeDisk(t, false)},
		"wrong sha":    {Name: "ws", Path: makeDisk(t, true), SHA256: strings.Repeat("0", 64)},
		"bad name":     {Name: "Bad/Name", Path: garbage},
		"both sources": {Name: "b", Path: garbage, URL: "http://x/y"},
		"no source":    {Name: "b"},
		"ftp url":      {Name: "b", URL: "ftp://x/y"},
		"bad sha":      {Name: "b", Path: garbage, SHA256: "xyz"},
		"missing file": {Name: "b", Path: "/nonexistent/disk.img"},
	}
	for what, req := range cases {
		var ve *desktop.ValidationError
		if _, err := s.Import(ctx, req, nil); !errors.As(err, &ve) {
			t.Errorf("%s: got %v, want a ValidationError", what, err)
		}
	}
	ims, _ := s.List(ctx)
	if len(ims) != 0 {
		t.Fatalf("refused imports registered %d images", len(ims))
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	if len(leftovers) != 0 {
		t.Fatalf("refused imports left files: %v", leftovers)
	}
}

func TestImportFromURLResumes(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	src := toQcow2(t, makeDisk(t, true))
	var ranged atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			ranged.Store(true)
		}
		f, _ := os.Open(src)
		defer f.Close()
		http.ServeContent(w, r, "disk.qcow2", time.Now(), f) // honours Range
	}))
	defer srv.Close()
	// Half a download from an earlier, interrupted attempt.
	data, _ := os.ReadFile(src)
	os.MkdirAll(s.Dir, 0o755)
	os.WriteFile(filepath.Join(s.Dir, "web.qcow2.download"), data[:len(data)/2], 0o644)

	im, err := s.Import(ctx, ImportRequest{Name: "web", URL: srv.URL + "/disk.qcow2", SHA256: sum(t, src)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ranged.Load() {
		t.Error("the partial download was not resumed with a Range request")
	}
	if exists(filepath.Join(s.Dir, "web.qcow2.download")) || !exists(im.Path) {
		t.Error("download file left behind or image missing")
	}
}

func TestImportWrongChecksumRemovesDownload(t *testing.T) {
	s := newService(t)
	src := toQcow2(t, makeDisk(t, true))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(src))))
	defer srv.Close()
	_, err := s.Import(context.Background(), ImportRequest{Name: "bad", URL: srv.URL + "/" + filepath.Base(src), SHA256: strings.Repeat("a", 64)}, nil)
	var ve *desktop.ValidationError
	if !errors.As(err, &ve) || ve.Field != "sha256" {
		t.Fatalf("got %v", err)
	}
	if exists(filepath.Join(s.Dir, "bad.qcow2.download")) || exists(filepath.Join(s.Dir, "bad.qcow2")) {
		t.Error("files left after a checksum mismatch")
	}
	if _, err := s.Import(context.Background(), ImportRequest{Name: "gone", URL: srv.URL + "/missing"}, nil); !errors.As(err, &ve) {
		t.Errorf("404 download: %v", err)
	}
}

func TestBuildReusesCacheByRecipeHash(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	recipe := t.TempDir()
	disk := toQcow2(t, makeDisk(t, true))
	// A recipe that "builds" by copying a prepared disk and counts its runs.
	count := filepath.Join(t.TempDir(), "runs")
	script := "#!/bin/bash\nset -e\necho run >> " + count + "\n" +
		"echo '@@progress bootstrap 17.5 downloading 312/540 packages (210/380 MiB)'\necho 'not progress'\n" +
		"echo '@@progress bootstrap 50'\ncp " + disk + " \"$1\"\necho '@@progress done 100'\n"
	os.WriteFile(filepath.Join(recipe, "build.sh"), []byte(script), 0o755)
	var got []Progress
	im, reused, err := s.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, func(p Progress) { got = append(got, p) })
	if err != nil || reused {
		t.Fatalf("first build: %+v reused=%v %v", im, reused, err)
	}
	if len(got) != 4 || got[0] != (Progress{Phase: "bootstrap", Percent: 17.5, Detail: "downloading 312/540 packages (210/380 MiB)"}) ||
		got[1] != (Progress{Phase: "bootstrap", Percent: 50}) || got[3].Percent != 100 {
		t.Errorf("progress %+v", got)
	}
	if _, reused, _ := s.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, nil); !reused {
		t.Error("unchanged recipe rebuilt")
	}
	// A fresh data dir with the same cache reuses the cached file too.
	s2 := *s
	s2.Dir = filepath.Join(t.TempDir(), "images")
	s.Store.DeleteImage(ctx, "deb")
	if _, reused, err := s2.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, nil); err != nil || !reused {
		t.Errorf("cached image not reused: %v %v", reused, err)
	}
	runs, _ := os.ReadFile(count)
	if strings.Count(string(runs), "run") != 1 {
		t.Errorf("recipe ran %d times, want 1", strings.Count(string(runs), "run"))
	}
	// Changing the recipe changes the hash and builds again.
	os.WriteFile(filepath.Join(recipe, "packages.txt"), []byte("vim\n"), 0o644)
	if _, reused, _ := s.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, nil); reused {
		t.Error("changed recipe was not rebuilt")
	}
	// A failing recipe registers nothing.
	os.WriteFile(filepath.Join(recipe, "build.sh"), []byte("#!/bin/bash\necho boom >&2\nexit 3\n"), 0o755)
	if _, _, err := s.Build(ctx, BuildRequest{Name: "broken", RecipeDir: recipe}, nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failing recipe: %v", err)
	}
	if _, err := s.Store.GetImage(ctx, "broken"); !errors.Is(err, desktop.ErrNotFound) {
		t.Error("failed build registered an image")
	}
}

func TestParseProgress(t *testing.T) {
	for line, want := range map[string]*Progress{
		"@@progress customize 76":                                  {Phase: "customize", Percent: 76},
		"@@progress bootstrap 3 reading package lists":             {Phase: "bootstrap", Percent: 3, Detail: "reading package lists"},
		"@@progress  bootstrap  17.5  unpacking 120/540 packages ": {Phase: "bootstrap", Percent: 17.5, Detail: "unpacking 120/540 packages"},
		"@@progress bootstrap":                                     nil,
		"@@progress bootstrap lots":                                nil,
		"@@progress bootstrap 140":                                 nil,
		"build: bootstrap took 300 s":                              nil,
		"I: downloading packages with apt...":                      nil,
	} {
		p, ok := parseProgress(line)
		if want == nil && ok || want != nil && (!ok || p != *want) {
			t.Errorf("%q: got %+v %v, want %+v", line, p, ok, want)
		}
	}
}

func TestDeleteRefusesImageInUse(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	src := toQcow2(t, makeDisk(t, true))
	im, err := s.Import(ctx, ImportRequest{Name: "used", Path: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.Store.(*store.Store).CreateDesktop(ctx, &desktop.Desktop{ID: "d1", Owner: "a", Name: "n", Spec: desktop.Spec{Image: "used"},
		State: desktop.StateRunning, DesiredState: desktop.StateRunning, CreatedAt: now, UpdatedAt: now})
	var iu *InUseError
	if err := s.Delete(ctx, "used"); !errors.As(err, &iu) || len(iu.Desktops) != 1 {
		t.Fatalf("delete in use: %v", err)
	}
	if !exists(im.Path) {
		t.Fatal("refused delete removed the file")
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A rebuild is not put in place of an image desktops run over (their OS
// disks are overlays on it): the image stays, the new build is named.
func TestRebuildKeepsAnImageInUse(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	recipe := t.TempDir()
	first, second := toQcow2(t, makeDisk(t, true)), toQcow2(t, makeDisk(t, false))
	build := func(from string) (*desktop.Image, error) {
		os.WriteFile(filepath.Join(recipe, "build.sh"), []byte("#!/bin/bash\nset -e\ncp "+from+" \"$1\"\n"), 0o755)
		im, _, err := s.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, nil)
		return im, err
	}
	im, err := build(first)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := fileSHA256(im.Path)
	now := time.Now()
	d := &desktop.Desktop{ID: "d1", Owner: "a", Name: "n", Spec: desktop.Spec{Image: "deb"},
		State: desktop.StateStopped, DesiredState: desktop.StateStopped, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.(*store.Store).CreateDesktop(ctx, d); err != nil {
		t.Fatal(err)
	}

	_, err = build(second) // another recipe: another build
	var kept *RebuildInUseError
	if !errors.As(err, &kept) || kept.Image != "deb" || len(kept.Desktops) != 1 || !strings.Contains(err.Error(), "n (d1)") || !exists(kept.Cached) {
		t.Fatalf("rebuild of an image in use: %v", err)
	}
	if after, _ := fileSHA256(im.Path); after != before {
		t.Error("the image in use was replaced")
	}
	if reg, _ := s.Store.GetImage(ctx, "deb"); reg.RecipeHash != im.RecipeHash || reg.SHA256 != before {
		t.Errorf("the registered image changed: %+v", reg)
	}
	if got, _ := fileSHA256(kept.Cached); got == before {
		t.Error("the named new build is the old one")
	}

	// Once nothing runs over it, the rebuild goes in.
	d.State, d.DeletedAt = desktop.StateDeleted, &now
	if err := s.Store.(*store.Store).UpdateDesktop(ctx, d); err != nil {
		t.Fatal(err)
	}
	im2, err := build(second)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := fileSHA256(im2.Path); after == before || im2.SHA256 != after {
		t.Errorf("rebuild without desktops: %s, registered %s, was %s", after, im2.SHA256, before)
	}
}

// The cache keeps the newest two builds of an image; other images' builds
// and files that are not builds stay, and so does a registered image
// whose build was pruned (its own link).
func TestBuildPrunesOldCachedBuilds(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	recipe := t.TempDir()
	disk := toQcow2(t, makeDisk(t, true))
	os.MkdirAll(s.CacheDir, 0o755)
	old := time.Now().Add(-time.Hour)
	for i, name := range []string{"deb-0000000000000001.qcow2", "deb-0000000000000002.qcow2", "deb-0000000000000003.qcow2",
		"other-0000000000000001.qcow2", "deb-notahash.qcow2", "debian-0000000000000004.qcow2"} {
		p := filepath.Join(s.CacheDir, name)
		os.WriteFile(p, []byte("build"), 0o644)
		os.Chtimes(p, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
	}
	build := func(v string) *desktop.Image {
		t.Helper()
		os.WriteFile(filepath.Join(recipe, "build.sh"), []byte("#!/bin/bash\nset -e\n# "+v+"\ncp "+disk+" \"$1\"\n"), 0o755)
		im, _, err := s.Build(ctx, BuildRequest{Name: "deb", RecipeDir: recipe}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	im := build("v1")
	var left []string
	entries, _ := os.ReadDir(s.CacheDir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"deb-0000000000000003.qcow2", "deb-" + im.RecipeHash + ".qcow2", "deb-notahash.qcow2", "debian-0000000000000004.qcow2", "other-0000000000000001.qcow2"}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("cache after a build: %v, want %v", left, want)
	}
	// The next build prunes the oldest of the two it found; v1's, the
	// one before it, stays, and so does the registered image.
	build("v2")
	if exists(filepath.Join(s.CacheDir, "deb-0000000000000003.qcow2")) {
		t.Error("the third newest build stays in the cache")
	}
	if !exists(filepath.Join(s.CacheDir, "deb-"+im.RecipeHash+".qcow2")) {
		t.Error("the previous build was pruned")
	}
	if sum, _ := fileSHA256(filepath.Join(s.Dir, "deb.qcow2")); sum == "" {
		t.Error("the registered image is gone")
	}
}
