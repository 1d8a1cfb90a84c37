package guest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// hostAgent runs the guest commands on this machine: the real runuser,
// shell scripts, realpath and find that the desktop image has, against a
// temporary directory. Files go through os like qemu-ga's guest-file-*.
type hostAgent struct {
	mu      sync.Mutex
	files   map[int64]*os.File
	next    int64
	scripts int
}

func newHostAgent(t testing.TB) *hostAgent {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs the file scripts through runuser, which needs root")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("runuser missing")
	}
	return &hostAgent{files: map[int64]*os.File{}}
}

func (h *hostAgent) GuestExec(ctx context.Context, _ string, e desktop.Exec) (*desktop.ExecResult, error) {
	h.mu.Lock()
	h.scripts++
	h.mu.Unlock()
	cmd := exec.CommandContext(ctx, e.Argv[0], e.Argv[1:]...)
	cmd.Env = e.Env
	cmd.Stdin = bytes.NewReader(e.Stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, err
	}
	return &desktop.ExecResult{ExitCode: cmd.ProcessState.ExitCode(), Stdout: out.Bytes(), Stderr: errb.Bytes()}, nil
}

func (h *hostAgent) GuestExecStart(context.Context, string, desktop.Exec) (int, error) {
	return 0, errors.New("not used")
}

func (h *hostAgent) GuestExecStatus(context.Context, string, int) (bool, int, error) {
	return false, 0, errors.New("not used")
}

func (h *hostAgent) GuestFileOpen(_ context.Context, _, p, mode string) (int64, error) {
	flag := os.O_RDONLY
	if mode == "w" {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(p, flag, 0o600)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	h.files[h.next] = f
	return h.next, nil
}

func (h *hostAgent) file(handle int64) (*os.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[handle]
	if !ok {
		return nil, errors.New("bad handle")
	}
	return f, nil
}

func (h *hostAgent) GuestFileRead(_ context.Context, _ string, handle int64, n int) ([]byte, bool, error) {
	f, err := h.file(handle)
	if err != nil {
		return nil, false, err
	}
	b := make([]byte, n)
	m, err := f.Read(b)
	if err != nil && !errors.Is(err, os.ErrClosed) && m == 0 {
		return nil, true, nil
	}
	return b[:m], false, nil
}

func (h *hostAgent) GuestFileWrite(_ context.Context, _ string, handle int64, b []byte) error {
	f, err := h.file(handle)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return err
}

func (h *hostAgent) GuestFileSeek(_ context.Context, _ string, handle, off int64) error {
	f, err := h.file(handle)
	if err != nil {
		return err
	}
	_, err = f.Seek(off, 0)
	return err
}

func (h *hostAgent) GuestFileClose(_ context.Context, _ string, handle int64) error {
	f, err := h.file(handle)
	if err != nil {
		return err
	}
	h.mu.Lock()
	delete(h.files, handle)
	h.mu.Unlock()
	return f.Close()
}

// roundTrip writes data under dir/name through the real scripts, then
// checks what a user sees: the resolved path, the listing, the content,
// and that delete removes exactly that file.
func roundTrip(t *testing.T, s *Service, dir, name string, data []byte) {
	t.Helper()
	ctx := context.Background()
	want := filepath.Join(dir, name)
	final, n, err := s.Write(ctx, "d", WriteRequest{Path: want, User: "root"}, bytes.NewReader(data))
	if err != nil || final != want || n != int64(len(data)) {
		t.Fatalf("write %q: %q, %d, %v", name, final, n, err)
	}
	st, err := s.Stat(ctx, "d", want, "root")
	if err != nil || st.Dir || st.Path != want || st.Size != int64(len(data)) {
		t.Fatalf("stat %q: %+v, %v", name, st, err)
	}
	var got bytes.Buffer
	if err := s.Read(ctx, "d", st, &got); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read %q: %d bytes back of %d, %v", name, got.Len(), len(data), err)
	}
	ls, err := s.Stat(ctx, "d", dir, "root")
	if err != nil || !ls.Dir || len(ls.Entries) != 1 || ls.Entries[0].Name != name || ls.Entries[0].Type != "file" {
		t.Fatalf("listing of %q: %+v, %v", dir, ls, err)
	}
	if err := s.Delete(ctx, "d", want, "root", false); err != nil {
		t.Fatalf("delete %q: %v", name, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("after deleting %q the directory holds %v", name, left)
	}
}

func TestFileScriptsTakeAnyName(t *testing.T) {
	s := New(newHostAgent(t))
	dir := t.TempDir()
	for _, name := range []string{"plain.txt", "with space", "tab\tname", "new\nline", "trailing newline\n",
		"\nleading", "ünïcødé 文件", "-rf", "--", "*", "$(touch pwned)", "`touch pwned`", "back\\slash", "'quote\"",
		".hidden", "...", strings.Repeat("n", 255)} {
		roundTrip(t, s, dir, name, []byte("content of "+name))
	}
	if _, err := os.Stat("pwned"); err == nil {
		t.Fatal("a file name ran as a command")
	}
}

func TestFilePathTricks(t *testing.T) {
	s := New(newHostAgent(t))
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "target"), []byte("t"), 0o644)
	os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "a/link"))

	// ".." and links resolve in the guest; the answer names the real file.
	for _, p := range []string{dir + "/a/b/../../target", dir + "/a/link", dir + "//a/./b/../link"} {
		st, err := s.Stat(ctx, "d", p, "root")
		if err != nil || st.Path != filepath.Join(dir, "target") || st.Size != 1 {
			t.Errorf("stat %q = %+v, %v; want %s/target", p, st, err, dir)
		}
	}
	// An upload through a link replaces the link's target, not the link.
	if final, _, err := s.Write(ctx, "d", WriteRequest{Path: dir + "/a/link", User: "root"}, strings.NewReader("new")); err != nil || final != filepath.Join(dir, "target") {
		t.Errorf("write through link: %q, %v", final, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "a/link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link itself changed: %v, %v", fi, err)
	}
	// Deleting a link removes the link, never what it points to.
	if err := s.Delete(ctx, "d", dir+"/a/link", "root", false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "target")); err != nil || string(b) != "new" {
		t.Errorf("target after deleting the link: %q, %v", b, err)
	}
	// A directory needs recursive; "/" and the home never go.
	var conflict *desktop.ConflictError
	if err := s.Delete(ctx, "d", dir+"/a", "root", false); !errors.As(err, &conflict) {
		t.Errorf("delete of a directory without recursive: %v", err)
	}
	for _, p := range []string{"/", "/root", "/root/", "/./", dir + "/../../../../../../.."} {
		if err := s.Delete(ctx, "d", p, "root", true); !errors.Is(err, desktop.ErrForbidden) {
			t.Errorf("delete %q: %v, want forbidden", p, err)
		}
	}
	if _, err := s.Stat(ctx, "d", dir+"/missing/x", "root"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("stat of a missing path: %v", err)
	}
	if _, _, err := s.Write(ctx, "d", WriteRequest{Path: dir + "/a", User: "root"}, strings.NewReader("x")); !errors.As(err, &conflict) {
		t.Errorf("write onto a directory: %v", err)
	}
}

// FuzzFilePaths: any path and user from a request is refused as invalid
// input or reaches the guest as one absolute argument of a fixed script;
// any file name round-trips through the real scripts.
func FuzzFilePaths(f *testing.F) {
	for _, seed := range []string{"a", "../../etc/passwd", "/abs/../x", "tab\tname", "new\nline\n", "$(id)", "-n", "ü", "a\x00b", "./", ""} {
		f.Add(seed, "agent", []byte("data"))
	}
	f.Add("x", "../../etc", []byte{})
	f.Add("x", "root; rm -rf /", []byte{0, 1, 2})
	agent := newHostAgent(f)
	s := New(agent)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, p, user string, data []byte) {
		got, err := s.cleanPath(p, user)
		var verr *desktop.ValidationError
		switch {
		case err != nil && !errors.As(err, &verr):
			t.Fatalf("cleanPath(%q, %q): %v is not a validation error", p, user, err)
		case err == nil && (!strings.HasPrefix(got, "/") || strings.ContainsRune(got, 0) || !userName.MatchString(user)):
			t.Fatalf("cleanPath(%q, %q) = %q", p, user, got)
		}
		// p as a file name: valid names round-trip exactly.
		if p == "" || p == "." || p == ".." || len(p) > 255 || strings.ContainsAny(p, "/\x00") {
			return
		}
		sub, err := os.MkdirTemp(dir, "f")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(sub)
		roundTrip(t, s, sub, p, data)
	})
}
