package images

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// spyQemuImg makes s run qemu-img through a script that logs each call
// (and runs the real qemu-img when there is one). It returns the log.
func spyQemuImg(t *testing.T, s *Service) string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
	if real, err := exec.LookPath("qemu-img"); err == nil {
		script += "exec " + real + " \"$@\"\n"
	} else {
		script += "exit 1\n"
	}
	s.QemuImg = filepath.Join(dir, "qemu-img")
	if err := os.WriteFile(s.QemuImg, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

// wantRefused checks that err is a 422 about the image that contains
// want, and that the refusal left nothing behind.
func wantRefused(t *testing.T, s *Service, what string, err error, field, want string) {
	t.Helper()
	var ve *desktop.ValidationError
	if !errors.As(err, &ve) || ve.Field != field || !strings.Contains(ve.Message, want) {
		t.Errorf("%s: got %v, want a %s ValidationError containing %q", what, err, field, want)
	}
	if ims, _ := s.List(context.Background()); len(ims) != 0 {
		t.Errorf("%s: refused import registered %d images", what, len(ims))
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir, "*")); len(left) != 0 {
		t.Errorf("%s: refused import left %v", what, left)
	}
}

func TestImportRefusesHostileHeadersBeforeQemuImg(t *testing.T) {
	s := newServiceNoQemu(t)
	calls := spyQemuImg(t, s)
	dir := t.TempDir()
	for what, c := range hostileHeaders {
		path := filepath.Join(dir, strings.ReplaceAll(what, " ", "-")+".qcow2")
		if err := os.WriteFile(path, c.q.bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.Import(context.Background(), ImportRequest{Name: "hostile", Path: path}, nil)
		wantRefused(t, s, what, err, "image", c.want)
	}
	if b, _ := os.ReadFile(calls); len(b) != 0 {
		t.Errorf("qemu-img ran on hostile images:\n%s", b)
	}
}

// TestImportRefusesHostileImagesMadeByQemuImg builds the hostile images
// with qemu-img itself, so the check matches what QEMU really writes.
func TestImportRefusesHostileImagesMadeByQemuImg(t *testing.T) {
	s := newService(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data.raw")
	os.WriteFile(data, nil, 0o644)
	cases := []struct {
		what, want string
		args       []string
	}{
		{"backing file", `backing file ("/etc/hostname")`, []string{"-f", "qcow2", "-b", "/etc/hostname", "-F", "raw"}},
		{"json backing file", `backing file ("json:`, []string{"-f", "qcow2", "-u", "-b", `json:{"driver":"file","filename":"/etc/hostname"}`, "-F", "raw"}},
		{"data file", `external data file ("` + data + `")`, []string{"-f", "qcow2", "-o", "data_file=" + data}},
		// A short iter-time: the default benchmark fails in some containers.
		{"luks encryption", "encrypted", []string{"-f", "qcow2", "--object", "secret,id=k,data=hunter2", "-o", "encrypt.format=luks,encrypt.key-secret=k,encrypt.iter-time=10"}},
		{"aes encryption", "encrypted", []string{"-f", "qcow2", "--object", "secret,id=k,data=hunter2", "-o", "encrypt.format=aes,encrypt.key-secret=k"}},
		{"vmdk", "unsupported image format vmdk", []string{"-f", "vmdk"}},
		{"vpc", "unsupported image format vpc", []string{"-f", "vpc"}},
		{"vdi", "unsupported image format vdi", []string{"-f", "vdi"}},
		{"qed", "unsupported image format qed", []string{"-f", "qed"}},
	}
	calls := spyQemuImg(t, s)
	for i, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.what, " ", "-")+".img")
		args := append(append([]string{"create", "-q"}, c.args...), path, "128M")
		if out, err := exec.Command("qemu-img", args...).CombinedOutput(); err != nil {
			t.Logf("%s: this qemu-img cannot make one: %v: %s", c.what, err, out)
			continue
		}
		_, err := s.Import(context.Background(), ImportRequest{Name: "hostile" + string(rune('a'+i)), Path: path}, nil)
		wantRefused(t, s, c.what, err, "image", c.want)
	}
	if b, _ := os.ReadFile(calls); len(b) != 0 {
		t.Errorf("qemu-img ran on hostile images:\n%s", b)
	}
}

// TestProbeIsASecondOpinion runs qemu-img info on images the header check
// would refuse: the probe refuses them on its own.
func TestProbeIsASecondOpinion(t *testing.T) {
	s := newService(t)
	dir := t.TempDir()
	for what, c := range map[string]struct {
		q    qcow2File
		want string
	}{
		"backing file": {qcow2File{backing: "/etc/hostname"}, `backing file ("/etc/hostname")`},
		"data file":    {qcow2File{incompat: qcow2ExternalData, exts: []qcow2Ext{{typ: qcow2ExtDataFile, data: []byte("/etc/hostname")}}}, `external data file ("/etc/hostname")`},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(what, " ", "-")+".qcow2")
		os.WriteFile(path, c.q.bytes(), 0o644)
		_, err := s.probe(context.Background(), path, "qcow2")
		wantRefused(t, s, what, err, "image", c.want)
	}
}

func TestInspectAcceptsCleanImages(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed")
	}
	raw := makeDisk(t, true)
	images := map[string]string{raw: "raw", toQcow2(t, raw): "qcow2"}
	// The variants qemu-img writes, each still self-contained.
	for i, opts := range [][]string{
		{"-c"}, // compressed, like most cloud images
		{"-o", "compat=0.10"},
		{"-o", "preallocation=metadata"},
		{"-o", "lazy_refcounts=on"},
		{"-o", "extended_l2=on"},
		{"-o", "cluster_size=512"},
		{"-o", "cluster_size=2M"},
		{"-o", "refcount_bits=64"},
		{"-o", "compression_type=zstd"},
	} {
		out := filepath.Join(t.TempDir(), "v"+string(rune('a'+i))+".qcow2")
		args := append(append([]string{"convert", "-f", "raw", "-O", "qcow2"}, opts...), raw, out)
		if b, err := exec.Command("qemu-img", args...).CombinedOutput(); err != nil {
			t.Logf("%v: this qemu-img cannot: %v: %s", opts, err, b)
			continue
		}
		images[out] = "qcow2"
	}
	withBitmap := toQcow2(t, makeDisk(t, true))
	if b, err := exec.Command("qemu-img", "bitmap", "--add", withBitmap, "b0").CombinedOutput(); err != nil {
		t.Logf("bitmap: %v: %s", err, b)
	} else {
		images[withBitmap] = "qcow2"
	}
	for path, want := range images {
		format, virtual, err := inspectPath(path)
		if err != nil || format != want || virtual != 128<<20 {
			t.Errorf("%s: %s %d %v, want %s of 128 MiB", path, format, virtual, err, want)
		}
	}
}

func TestImportByPathRefusesWhatIsNotAnImageFile(t *testing.T) {
	s := newServiceNoQemu(t)
	calls := spyQemuImg(t, s)
	dir := t.TempDir()
	s.DataDir = filepath.Join(dir, "data")
	os.MkdirAll(s.DataDir, 0o755)
	secret := filepath.Join(s.DataDir, "bureau.db")
	os.WriteFile(secret, []byte("the database"), 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, filepath.Join(dir, "to-fifo"))
	os.Symlink(secret, filepath.Join(dir, "to-db"))
	os.Symlink(s.DataDir, filepath.Join(dir, "data-link"))
	for path, want := range map[string]string{
		fifo:                          "named pipe, not a regular file",
		filepath.Join(dir, "to-fifo"): "named pipe, not a regular file",
		"/dev/null":                   "device, not a regular file",
		dir:                           "directory, not a regular file",
		secret:                        "inside bureau's data directory",
		filepath.Join(dir, "to-db"):   "inside bureau's data directory",
		filepath.Join(dir, "data-link", "bureau.db"): "inside bureau's data directory",
		filepath.Join(dir, "missing"):                "no such file",
	} {
		_, err := s.Import(context.Background(), ImportRequest{Name: "p", Path: path}, nil)
		wantRefused(t, s, path, err, "path", want)
	}
	if b, _ := os.ReadFile(calls); len(b) != 0 {
		t.Errorf("qemu-img ran:\n%s", b)
	}
}

func TestImportByPathFollowsSymlinksToImages(t *testing.T) {
	s := newService(t)
	src := toQcow2(t, makeDisk(t, true))
	link := filepath.Join(t.TempDir(), "link.qcow2")
	os.Symlink(src, link)
	if _, err := s.Import(context.Background(), ImportRequest{Name: "linked", Path: link}, nil); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir, "*.copy")); len(left) != 0 {
		t.Errorf("copy left behind: %v", left)
	}
}

func TestImportByURLRefusesHostileImagesEarly(t *testing.T) {
	s := newServiceNoQemu(t)
	calls := spyQemuImg(t, s)
	hostile := qcow2File{backing: "/etc/shadow"}.bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hostile.qcow2":
			w.Write(hostile)
		case "/huge.img":
			// Claims more than the maximum; the client gives up on the
			// header alone.
			w.Header().Set("Content-Length", "999999999999999")
		}
	}))
	defer srv.Close()
	for file, want := range map[string]string{"hostile.qcow2": `backing file ("/etc/shadow")`, "huge.img": "over the 128 GiB maximum"} {
		reports := 0
		_, err := s.Import(context.Background(), ImportRequest{Name: "web", URL: srv.URL + "/" + file}, func(Progress) { reports++ })
		wantRefused(t, s, file, err, "image", want)
		if reports != 0 {
			t.Errorf("%s: %d progress reports before the refusal", file, reports)
		}
	}
	if b, _ := os.ReadFile(calls); len(b) != 0 {
		t.Errorf("qemu-img ran:\n%s", b)
	}
}
