package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/images"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/preview"
	"github.com/bureau/bureau/internal/recording"
	"github.com/bureau/bureau/internal/secrets"
	"github.com/bureau/bureau/internal/steps"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
	"github.com/bureau/bureau/internal/teams"
	"github.com/bureau/bureau/web"
)

// fakeDesktops keeps desktops in memory and records what it was asked.
type fakeDesktops struct {
	mu       sync.Mutex
	desktops map[string]*desktop.Desktop
	lastReq  manager.CreateRequest
	lastStop manager.StopOptions
	err      error // returned by every operation when set
	touched  []string
	prewoken []string // "id: why" of each Prewake
	// vnc dials the display of a running desktop (a fake VNC server).
	vnc func() (net.Conn, error)

	// lastResize and lastSnapshot are the last requests of their kind.
	lastResize   manager.ResizeRequest
	lastSnapshot manager.SnapshotRequest
	// snapshots made, per desktop; lastRevert the snapshot last reverted to.
	snapshots  map[string][]*desktop.Snapshot
	lastRevert string
	// snapshotErr, when set, fails CreateSnapshot.
	snapshotErr error
}

func (f *fakeDesktops) DialVNC(_ context.Context, id string) (net.Conn, error) {
	d, err := f.op(id)
	if err != nil {
		return nil, err
	}
	if d.State != desktop.StateRunning {
		return nil, &desktop.TransitionError{Op: "open the display of", State: d.State}
	}
	if f.vnc == nil {
		return nil, errors.New("no display")
	}
	return f.vnc()
}

func (f *fakeDesktops) Create(_ context.Context, req manager.CreateRequest) (*desktop.Desktop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastReq = req
	if f.err != nil {
		return nil, f.err
	}
	if err := req.Spec.Validate(); err != nil && req.From == nil {
		return nil, err
	}
	if !req.Unlimited {
		f.mu.Unlock()
		err := f.CheckQuota(context.Background(), req.Owner, desktop.Usage{Desktops: 1, VCPUs: req.Spec.VCPUs, MemoryMiB: req.Spec.MemoryMiB, DiskMiB: req.Spec.DataDiskGiB * 1024})
		f.mu.Lock()
		if err != nil {
			return nil, err
		}
	}
	d := &desktop.Desktop{ID: fmt.Sprintf("d%d", len(f.desktops)+1), Owner: req.Owner, Name: req.Name, Spec: req.Spec, State: desktop.StateCreating, Host: req.Host}
	if req.IdleTimeout != nil {
		d.IdleTimeoutSeconds = *req.IdleTimeout
	}
	f.desktops[d.ID] = d
	return d, nil
}
func (f *fakeDesktops) Get(_ context.Context, id string) (*desktop.Desktop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.desktops[id]; ok {
		cp := *d
		return &cp, nil
	}
	return nil, fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
}
func (f *fakeDesktops) List(_ context.Context, flt desktop.Filter) ([]*desktop.Desktop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*desktop.Desktop
	for _, d := range f.desktops {
		if flt.Owner == "" || d.Owner == flt.Owner {
			out = append(out, d)
		}
	}
	return out, nil
}
func (f *fakeDesktops) op(id string) (*desktop.Desktop, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.Get(context.Background(), id)
}
func (f *fakeDesktops) Start(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	return f.op(id)
}
func (f *fakeDesktops) Reboot(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	return f.op(id)
}
func (f *fakeDesktops) Stop(_ context.Context, id, _ string, o manager.StopOptions) (*desktop.Desktop, error) {
	f.lastStop = o
	return f.op(id)
}
func (f *fakeDesktops) Delete(_ context.Context, id, _ string, deleteData bool) (*manager.DeleteResult, error) {
	d, err := f.op(id)
	if err != nil {
		return nil, err
	}
	res := &manager.DeleteResult{Desktop: d, DataDeleted: deleteData}
	if !deleteData {
		res.DataDiskKept = d.DataDiskPath
	}
	return res, nil
}
func (f *fakeDesktops) Events(context.Context, string, int) ([]*desktop.Event, error) {
	return nil, nil
}
func (f *fakeDesktops) Pause(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	return f.setState(id, desktop.StatePaused)
}
func (f *fakeDesktops) Resume(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	return f.setState(id, desktop.StateRunning)
}
func (f *fakeDesktops) Hibernate(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	return f.setState(id, desktop.StateHibernating)
}
func (f *fakeDesktops) Wake(_ context.Context, id, _ string) (*desktop.Desktop, error) {
	d, err := f.op(id)
	if err != nil {
		return nil, err
	}
	switch d.State {
	case desktop.StateRunning, desktop.StatePaused, desktop.StateHibernated:
		return f.setState(id, desktop.StateRunning)
	}
	return nil, &desktop.TransitionError{Op: "use", State: d.State}
}
func (f *fakeDesktops) CreateSnapshot(_ context.Context, id string, req manager.SnapshotRequest) (*desktop.Snapshot, error) {
	f.mu.Lock()
	f.lastSnapshot = req
	f.mu.Unlock()
	if _, err := f.op(id); err != nil {
		return nil, err
	}
	if f.snapshotErr != nil {
		return nil, f.snapshotErr
	}
	sn := &desktop.Snapshot{DesktopID: id, Name: req.Name, Description: req.Description, Scope: req.Scope,
		Memory: req.Memory != nil && *req.Memory, CreatedAt: time.Now().UTC()}
	f.mu.Lock()
	if f.snapshots == nil {
		f.snapshots = map[string][]*desktop.Snapshot{}
	}
	f.snapshots[id] = append(f.snapshots[id], sn)
	f.mu.Unlock()
	return sn, nil
}
func (f *fakeDesktops) ListSnapshots(_ context.Context, id string) ([]*desktop.Snapshot, error) {
	if _, err := f.op(id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*desktop.Snapshot{}, f.snapshots[id]...), nil
}
func (f *fakeDesktops) RevertSnapshot(_ context.Context, id, name, _ string) (*desktop.Desktop, error) {
	f.mu.Lock()
	f.lastRevert = name
	f.mu.Unlock()
	return f.setState(id, desktop.StateReverting)
}
func (f *fakeDesktops) DeleteSnapshot(_ context.Context, id, name, _ string) error {
	if _, err := f.op(id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snapshots == nil {
		return nil
	}
	f.snapshots[id] = slices.DeleteFunc(f.snapshots[id], func(sn *desktop.Snapshot) bool { return sn.Name == name })
	return nil
}
func (f *fakeDesktops) Reimage(_ context.Context, id, _, _ string) (*desktop.Desktop, error) {
	return f.setState(id, desktop.StateReimaging)
}
func (f *fakeDesktops) ResizeDataDisk(_ context.Context, id string, req manager.ResizeRequest) (*desktop.Desktop, error) {
	f.mu.Lock()
	f.lastResize = req
	f.mu.Unlock()
	d, err := f.op(id)
	if err == nil {
		d.DataDiskGiB = req.SizeGiB
	}
	return d, err
}
func (f *fakeDesktops) SetIdleTiers(_ context.Context, id string, t manager.IdleTiers, _ string) (*desktop.Desktop, error) {
	d, err := f.op(id)
	if err != nil {
		return nil, err
	}
	if err := t.Check(*d); err != nil {
		return nil, err
	}
	t.Apply(d)
	return d, nil
}
func (f *fakeDesktops) SetRestartOnCrash(_ context.Context, id string, on bool, _ string) (*desktop.Desktop, error) {
	d, err := f.op(id)
	if err == nil {
		d.RestartOnCrash = on
	}
	return d, err
}
func (f *fakeDesktops) SetKeyboardLayout(_ context.Context, id, layout, _ string) (*desktop.Desktop, error) {
	d, err := f.op(id)
	if err == nil {
		d.KeyboardLayout = layout
	}
	return d, err
}
func (f *fakeDesktops) SetNetworkPolicy(_ context.Context, id string, p desktop.NetworkPolicy, _ string) (*desktop.Desktop, error) {
	d, err := f.op(id)
	if err == nil {
		f.mu.Lock()
		f.desktops[id].Network = p // kept, as the manager's store keeps it
		f.mu.Unlock()
		d.Network = p
	}
	return d, err
}
func (f *fakeDesktops) BuildTemplate(_ context.Context, image string, vcpus, mem int) (*manager.Template, error) {
	return &manager.Template{Key: "k", Image: image, VCPUs: vcpus, MemoryMiB: mem, State: "building"}, nil
}
func (f *fakeDesktops) Templates(context.Context) ([]*manager.Template, error) {
	return []*manager.Template{}, nil
}
func (f *fakeDesktops) Touch(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched = append(f.touched, id)
}
func (f *fakeDesktops) AddViewer(string) func() { return func() {} }
func (f *fakeDesktops) Prewake(_ context.Context, id, _, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prewoken = append(f.prewoken, id+": "+why)
}
func (f *fakeDesktops) Quota(_ context.Context, owner string) (desktop.Quota, desktop.Usage, error) {
	q := desktop.Plans["free"]
	q.Owner = owner
	return q, desktop.Usage{Desktops: len(f.desktops)}, nil
}
func (f *fakeDesktops) CheckQuota(ctx context.Context, owner string, add desktop.Usage) error {
	q, u, _ := f.Quota(ctx, owner)
	u.Desktops += add.Desktops
	u.VCPUs, u.MemoryMiB, u.DiskMiB = add.VCPUs, add.MemoryMiB, add.DiskMiB
	return q.Check(u)
}
func (f *fakeDesktops) SetQuota(_ context.Context, q desktop.Quota, _ string) (*desktop.Quota, error) {
	return &q, desktop.ValidateQuota(q)
}
func (f *fakeDesktops) setState(id string, st desktop.State) (*desktop.Desktop, error) {
	if _, err := f.op(id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.desktops[id].State = st
	cp := *f.desktops[id]
	return &cp, nil
}

// fakeComputer counts the screenshots taken.
type fakeComputer struct{ shots atomic.Int32 }

func (*fakeComputer) Run(_ context.Context, _ string, req computer.Request) (*computer.Result, error) {
	return &computer.Result{Results: []computer.StepResult{{Action: req.Action.Action}}}, nil
}
func (f *fakeComputer) Screenshot(context.Context, string, computer.ShotOptions) (*computer.Image, error) {
	f.shots.Add(1)
	return &computer.Image{MediaType: "image/png", Data: []byte("\x89PNG"), Width: 1, Height: 1}, nil
}
func (*fakeComputer) Forget(string) {}

// fakeGuest holds files in memory.
type fakeGuest struct {
	mu    sync.Mutex
	files map[string][]byte
	clip  map[string][]byte
	// viaQEMU counts the calls that asked to skip bureau-agent.
	viaQEMU int
}

func (g *fakeGuest) Exec(_ context.Context, _ string, r guest.ExecRequest) (*guest.ExecResult, error) {
	return &guest.ExecResult{Stdout: r.Cmd}, nil
}
func (g *fakeGuest) Stat(_ context.Context, _, p, _ string) (*guest.Stat, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.files[p]
	if !ok {
		return nil, desktop.ErrNotFound
	}
	return &guest.Stat{Path: p, Size: int64(len(b))}, nil
}
func (g *fakeGuest) Read(_ context.Context, _ string, st *guest.Stat, w io.Writer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := w.Write(g.files[st.Path])
	return err
}
func (g *fakeGuest) Write(_ context.Context, _ string, req guest.WriteRequest, r io.Reader) (string, int64, error) {
	b, err := io.ReadAll(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.files[req.Path] = b
	return req.Path, int64(len(b)), err
}
func (g *fakeGuest) Delete(ctx context.Context, _, p, _ string, _ bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if guest.AsksQEMU(ctx) {
		g.viaQEMU++
	}
	delete(g.files, p)
	return nil
}
func (g *fakeGuest) ReadClipboard(context.Context, string) (*guest.Clipboard, error) {
	return &guest.Clipboard{Text: "clip", Types: []string{"text/plain"}}, nil
}
func (g *fakeGuest) ClipboardData(_ context.Context, _, mime string) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d, ok := g.clip[mime]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("the clipboard holds no %s: %w", mime, desktop.ErrNotFound)
}
func (g *fakeGuest) SetClipboard(context.Context, string, string) error { return nil }
func (g *fakeGuest) SetClipboardData(_ context.Context, _, mime string, data []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.clip == nil {
		g.clip = map[string][]byte{}
	}
	g.clip[mime] = data
	return nil
}
func (g *fakeGuest) SetResolution(context.Context, string, int, int) error { return nil }

type fakeImages struct{}

func (fakeImages) List(context.Context) ([]*desktop.Image, error) {
	return []*desktop.Image{{Name: "debian", Path: hostDir + "/images/debian.qcow2"}}, nil
}
func (fakeImages) Delete(_ context.Context, name string) error {
	return &images.InUseError{Image: name, Desktops: []string{"a"}}
}
func (fakeImages) CheckImport(context.Context, images.ImportRequest) error { return nil }
func (fakeImages) Import(_ context.Context, req images.ImportRequest, p images.ProgressFunc) (*desktop.Image, error) {
	p(images.Progress{Phase: "download", Percent: 50})
	return &desktop.Image{Name: req.Name}, nil
}

// hostDir stands for the host's data directory in the fakes' host paths.
const hostDir = "/var/lib/bureau"

type env struct {
	srv               *httptest.Server
	desktops          *fakeDesktops
	admin, alice, bob string
	live              *fakeLive
	consoles          *console.Service
	store             *store.Store
	consoleBytes      sync.Map    // direction → *atomic.Int64
	changed           chan string // "owner/desktop" per secrets change
	guest             *fakeGuest
	hosts             *fakeHosts
	steps             *steps.Log
	recordings        *recording.Service
	computer          *fakeComputer
	backups           *fakeBackups
	people            *fakePeople
	audit             *audit.Log
}

func (e *env) secretsChanged(owner, desktopID string) {
	select {
	case e.changed <- owner + "/" + desktopID:
	default:
	}
}

func newEnv(t *testing.T) *env { return newEnvF(t) }

// newEnvF builds the environment for a test or a fuzz target.
func newEnvF(t testing.TB) *env { return newEnvImages(t, nil) }

// newEnvImages is newEnvF with an image service made from the env's store
// (nil: a fake that imports anything).
func newEnvImages(t testing.TB, mkImages func(*store.Store) Images) *env {
	t.Helper()
	return newEnvDeps(t, mkImages, nil)
}

// newEnvDeps is newEnvImages with tweak (may be nil) changing the Deps
// the router is made with.
func newEnvDeps(t testing.TB, mkImages func(*store.Store) Images, tweak func(*Deps)) *env {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	tokens := auth.New(st)
	mk := func(owner, scope string) string {
		s, _, err := tokens.Create(context.Background(), auth.CreateRequest{Owner: owner, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e := &env{changed: make(chan string, 16), desktops: &fakeDesktops{desktops: map[string]*desktop.Desktop{}},
		admin: mk("root", desktop.ScopeAdmin), alice: mk("alice", desktop.ScopeOwner), bob: mk("bob", desktop.ScopeOwner)}
	e.live = &fakeLive{Feed: &manager.Feed{}}
	e.backups = &fakeBackups{desktops: e.desktops}
	e.hosts = newFakeHosts()
	e.consoles = console.New(st, slog.New(slog.DiscardHandler))
	e.store = st
	var imgs Images = fakeImages{}
	if mkImages != nil {
		imgs = mkImages(st)
	}
	fg := &fakeGuest{files: map[string][]byte{}}
	e.guest = fg
	inGuest := agentGuest(t)
	sec, err := secrets.New(st, make([]byte, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	urls := preview.New(st, []byte("test key"))
	e.computer = &fakeComputer{}
	e.steps = steps.New(st, t.TempDir(), 0, slog.New(slog.DiscardHandler))
	e.recordings = recording.New(recording.Config{Dir: t.TempDir(), MaxSeconds: 60, KeepBytes: 1 << 30}, st, &pngScreens{}, e.desktops, slog.New(slog.DiscardHandler))
	d := Deps{Processes: inGuest, Ports: inGuest, Terminals: inGuest, Services: inGuest, SecretValues: sec, Secrets: sec, SecretsChanged: e.secretsChanged, Previews: urls, URLs: urls, PreviewDomain: "localhost", Desktops: e.desktops, Snapshots: e.desktops, Templates: e.desktops, Consoles: e.consoles, Web: web.Static,
		ConsoleBytes: func(dir string, n int) {
			v, _ := e.consoleBytes.LoadOrStore(dir, new(atomic.Int64))
			v.(*atomic.Int64).Add(int64(n))
		}, Computer: e.computer, Guest: fg, Clipboard: fg, Tokens: tokens, Images: imgs, Hosts: e.hosts, HostLoads: e.hosts, Drains: e.hosts, Steps: e.steps, Recordings: e.recordings, KeptRecordings: e.recordings, Backups: e.backups, BackupSchedules: e.backups, BackupFiles: e.backups,
		Live: e.live, Stats: fakeStats{}, Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "bureau_up 1\n") }),
		Log: slog.New(slog.DiscardHandler), Info: map[string]string{"accelerator": "tcg"}, HostDirs: []string{hostDir},
		CertificateNames: func(context.Context, string) error { return desktop.ErrNotFound }}
	d.UI = &fakeUI{} // ui_test.go
	e.audit = startAudit(t, st)
	d.Audit = e.audit
	e.people = newFakePeople()
	d.People = e.people
	d.Teams = teams.New(teamStore{Teams: st.Teams(), desktops: e.desktops}) // teams_test.go
	if tweak != nil {
		tweak(&d)
	}
	e.srv = httptest.NewServer(withSpecCheck(t, New(d)))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) do(t *testing.T, token, method, path, body string) (int, map[string]any) {
	return e.doF(t, token, method, path, body)
}

func (e *env) doF(t testing.TB, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func errField(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["field"].(string)
	return s
}

var routes = []struct{ method, path string }{
	{"GET", "/api/v1/info"}, {"GET", "/api/v1/desktops"}, {"POST", "/api/v1/desktops"},
	{"GET", "/api/v1/desktops/d1"}, {"DELETE", "/api/v1/desktops/d1"}, {"POST", "/api/v1/desktops/d1/start"},
	{"POST", "/api/v1/desktops/d1/stop"}, {"POST", "/api/v1/desktops/d1/reboot"}, {"GET", "/api/v1/desktops/d1/events"},
	{"GET", "/api/v1/desktops/d1/screenshot"}, {"GET", "/api/v1/images"}, {"POST", "/api/v1/images"},
	{"DELETE", "/api/v1/images/x"}, {"GET", "/api/v1/tokens"}, {"POST", "/api/v1/tokens"}, {"DELETE", "/api/v1/tokens/x"},
	{"POST", "/api/v1/desktops/d1/pause"}, {"POST", "/api/v1/desktops/d1/resume"}, {"POST", "/api/v1/desktops/d1/hibernate"},
	{"GET", "/api/v1/desktops/d1/snapshots"}, {"POST", "/api/v1/desktops/d1/snapshots/x/revert"},
	{"DELETE", "/api/v1/desktops/d1/snapshots/x"}, {"POST", "/api/v1/desktops/d1/reimage"},
}

func TestEveryRouteNeedsAToken(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.do(t, "", "GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz = %d", code)
	}
	for _, r := range routes {
		for _, tok := range []string{"", "bureau_not-a-real-token"} {
			if code, body := e.do(t, tok, r.method, r.path, "{}"); code != 401 || errCode(body) != "unauthorized" {
				t.Errorf("%s %s with token %q: %d %v", r.method, r.path, tok, code, body)
			}
		}
	}
}

func TestOwnersSeeOnlyTheirDesktops(t *testing.T) {
	e := newEnv(t)
	code, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	if code != 202 || d["owner"] != "alice" || d["state"] != "creating" {
		t.Fatalf("create: %d %v", code, d)
	}
	if req := e.desktops.lastReq; req.Spec.VCPUs != 2 || req.Spec.MemoryMiB != 4096 || req.Spec.DataDiskGiB != 20 {
		t.Errorf("defaults not applied: %+v", req.Spec)
	}
	id := d["id"].(string)
	e.desktops.desktops[id].State = desktop.StateRunning
	for _, r := range routes {
		if !strings.Contains(r.path, "/desktops/d1") {
			continue
		}
		path := strings.Replace(r.path, "d1", id, 1)
		if code, body := e.do(t, e.bob, r.method, path, ""); code != 404 || errCode(body) != "not_found" {
			t.Errorf("bob %s %s: %d %v, want 404", r.method, path, code, body)
		}
		if code, _ := e.do(t, e.alice, r.method, path, ""); code >= 400 {
			t.Errorf("alice %s %s: %d", r.method, path, code)
		}
		if code, _ := e.do(t, e.admin, r.method, path, ""); code >= 400 {
			t.Errorf("admin %s %s: %d", r.method, path, code)
		}
	}
	_, list := e.do(t, e.bob, "GET", "/api/v1/desktops", "")
	if ds := list["desktops"].([]any); len(ds) != 0 {
		t.Errorf("bob lists %d desktops", len(ds))
	}
	_, list = e.do(t, e.admin, "GET", "/api/v1/desktops", "")
	if ds := list["desktops"].([]any); len(ds) != 1 {
		t.Errorf("admin lists %d desktops", len(ds))
	}
}

func TestSnapshotRoutes(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	base := "/api/v1/desktops/" + id + "/snapshots"
	if code, sn := e.do(t, e.alice, "POST", base, `{"name":"s1","scope":"data","description":"ws"}`); code != 201 || sn["name"] != "s1" || sn["scope"] != "data" {
		t.Errorf("create snapshot: %d %v", code, sn)
	}
	if code, body := e.do(t, e.alice, "POST", base, `{"name":"s1","colour":"red"}`); code != 400 {
		t.Errorf("unknown field: %d %v", code, body)
	}
	if code, body := e.do(t, e.bob, "POST", base, `{"name":"s1"}`); code != 404 {
		t.Errorf("bob snapshots alice's desktop: %d %v", code, body)
	}
	if code, r := e.do(t, e.alice, "POST", base+"/s1/revert", ""); code != 202 || r["state"] != "reverting" {
		t.Errorf("revert: %d %v", code, r)
	}
	if code, _ := e.do(t, e.alice, "DELETE", base+"/s1", ""); code != 204 {
		t.Errorf("delete snapshot: %d", code)
	}
}

func TestReimageAndResizeRoutes(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	base := "/api/v1/desktops/" + d["id"].(string)
	if code, r := e.do(t, e.alice, "POST", base+"/reimage", `{"image":"debian"}`); code != 202 || r["state"] != "reimaging" {
		t.Errorf("reimage: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", base+"/data-disk", `{"size_gib":40}`); code != 200 || r["data_disk_gib"] != 40.0 {
		t.Errorf("resize: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "POST", base+"/data-disk", `{}`); code != 422 {
		t.Errorf("resize without size: %d %v", code, r)
	}
	if code, _ := e.do(t, e.bob, "POST", base+"/data-disk", `{"size_gib":40}`); code != 404 {
		t.Errorf("bob resizes alice's disk: %d", code)
	}
}

func TestActionsCountAsActivity(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine","idle_timeout_seconds":600}`)
	id := d["id"].(string)
	if d["idle_timeout_seconds"] != 600.0 {
		t.Errorf("created with idle timeout %v", d["idle_timeout_seconds"])
	}
	base := "/api/v1/desktops/" + id
	e.do(t, e.alice, "GET", base, "")
	e.do(t, e.alice, "GET", base+"/events", "")
	if len(e.desktops.touched) != 0 {
		t.Errorf("polling counted as activity: %v", e.desktops.touched)
	}
	// A watcher's thumbnail neither wakes the desktop nor counts.
	e.desktops.setState(id, desktop.StateHibernated)
	if code, body := e.do(t, e.alice, "GET", base+"/screenshot?passive=true&width=320", ""); code != 409 || len(e.desktops.touched) != 0 {
		t.Errorf("passive screenshot of a hibernated desktop: %d %v, touched %v", code, body, e.desktops.touched)
	}
	e.desktops.setState(id, desktop.StateRunning)
	if code, _ := e.do(t, e.alice, "GET", base+"/screenshot?passive=true", ""); code != 200 || len(e.desktops.touched) != 0 {
		t.Errorf("passive screenshot: %d, touched %v", code, e.desktops.touched)
	}
	e.do(t, e.bob, "POST", base+"/pause", "")
	if len(e.desktops.touched) != 0 {
		t.Errorf("a refused request counted as activity: %v", e.desktops.touched)
	}
	e.do(t, e.alice, "POST", base+"/pause", "")
	if len(e.desktops.touched) != 1 || e.desktops.touched[0] != id {
		t.Errorf("an action was not counted: %v", e.desktops.touched)
	}
	if code, r := e.do(t, e.alice, "PATCH", base, `{"idle_timeout_seconds":0}`); code != 200 || r["idle_timeout_seconds"] != 0.0 {
		t.Errorf("patch: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PATCH", base, `{"idle_timeout_seconds":5}`); code != 422 {
		t.Errorf("patch with 5 s: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PATCH", base, `{"nap_after_seconds":60,"sleep_after_seconds":300}`); code != 200 || r["nap_after_seconds"] != 60.0 || r["sleep_after_seconds"] != 300.0 {
		t.Errorf("patch tiers: %d %v", code, r)
	}
	// The tiers are checked together: a nap after the sleep is refused whole.
	if code, r := e.do(t, e.alice, "PATCH", base, `{"nap_after_seconds":400,"sleep_after_seconds":300,"restart_on_crash":true}`); code != 422 || errField(r) != "nap_after_seconds" {
		t.Errorf("patch a nap after the sleep: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PATCH", base, `{"keyboard_layout":"German"}`); code != 422 || errField(r) != "keyboard_layout" {
		t.Errorf("patch with a bad layout: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "PATCH", base, `{"keyboard_layout":"de"}`); code != 409 || errCode(r) != "invalid_state" {
		t.Errorf("patch the layout of a paused desktop: %d %v", code, r)
	}
	e.do(t, e.alice, "POST", base+"/resume", "")
	if code, r := e.do(t, e.alice, "PATCH", base, `{"keyboard_layout":"de"}`); code != 200 || r["keyboard_layout"] != "de" {
		t.Errorf("patch layout: %d %v", code, r)
	}
}

func TestQuotas(t *testing.T) {
	e := newEnv(t)
	code, body := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"big","vcpus":4}`)
	if code != 403 || errCode(body) != "quota_exceeded" || !strings.Contains(fmt.Sprint(body), "vcpus limit is 2") {
		t.Errorf("4 vCPUs on the free tier: %d %v", code, body)
	}
	if code, _ := e.do(t, e.admin, "POST", "/api/v1/desktops", `{"name":"big","vcpus":4}`); code != 202 {
		t.Errorf("admins have no quota: %d", code)
	}
	if code, r := e.do(t, e.alice, "GET", "/api/v1/quota", ""); code != 200 || r["quota"].(map[string]any)["plan"] != "free" {
		t.Errorf("own quota: %d %v", code, r)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/quotas/bob", ""); code != 403 {
		t.Errorf("alice reads bob's quota: %d", code)
	}
	if code, _ := e.do(t, e.alice, "PUT", "/api/v1/quotas/alice", `{"plan":"unlimited"}`); code != 403 {
		t.Errorf("alice raises her own quota: %d", code)
	}
	if code, r := e.do(t, e.admin, "PUT", "/api/v1/quotas/alice", `{"plan":"custom","max_vcpus":8}`); code != 200 || r["max_vcpus"] != 8.0 {
		t.Errorf("admin sets a quota: %d %v", code, r)
	}
	if code, _ := e.do(t, e.admin, "PUT", "/api/v1/quotas/alice", `{"plan":"gold"}`); code != 422 {
		t.Errorf("unknown plan: %d", code)
	}
	if code, r := e.do(t, e.admin, "PUT", "/api/v1/quotas/alice", `{"owner":"bob","plan":"team"}`); code != 422 || dig(r, "error.field") != "owner" {
		t.Errorf("a body naming another owner than the path: %d %v", code, r)
	}
	if code, r := e.do(t, e.admin, "GET", "/api/v1/quotas/bob", ""); code != 200 || dig(r, "quota.plan") == "team" {
		t.Errorf("bob's quota after a refused PUT: %d %v", code, r)
	}
}

func TestDesktopScopedTokens(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	_, other := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"other"}`)
	id, otherID := d["id"].(string), other["id"].(string)
	e.desktops.desktops[id].State = desktop.StateRunning
	if code, _ := e.do(t, e.bob, "POST", "/api/v1/tokens", `{"scope":"desktop","desktop_id":"`+id+`"}`); code != 422 {
		t.Errorf("bob makes a token for alice's desktop: %d", code)
	}
	code, r := e.do(t, e.alice, "POST", "/api/v1/tokens", `{"scope":"desktop","desktop_id":"`+id+`"}`)
	if code != 201 {
		t.Fatalf("desktop token: %d %v", code, r)
	}
	agent := r["token"].(string)
	_, r = e.do(t, e.alice, "POST", "/api/v1/tokens", `{"desktop_id":"`+id+`","computer_only":true}`)
	viewer := r["token"].(string)
	for _, c := range []struct {
		token, method, path string
		want                int
	}{
		{agent, "GET", "/api/v1/desktops/" + id, 200},
		{agent, "POST", "/api/v1/desktops/" + id + "/pause", 200},
		{agent, "GET", "/api/v1/desktops/" + id + "/screenshot", 200},
		{agent, "GET", "/api/v1/desktops/" + otherID, 404},
		{agent, "GET", "/api/v1/desktops", 403},
		{agent, "DELETE", "/api/v1/desktops/" + id, 403},
		{viewer, "GET", "/api/v1/desktops/" + id, 200},
		{viewer, "POST", "/api/v1/desktops/" + id + "/stop", 403},
		{viewer, "GET", "/api/v1/desktops/" + otherID + "/screenshot", 404},
	} {
		if code, body := e.do(t, c.token, c.method, c.path, ""); code != c.want {
			t.Errorf("%s %s: %d %v, want %d", c.method, c.path, code, body, c.want)
		}
	}
}

func TestScreenshotWakesAHibernatedDesktop(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	e.desktops.desktops[id].State = desktop.StateHibernated
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/desktops/"+id+"/screenshot", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Without waking it, a hibernated desktop's screenshot is 409.
	if resp.StatusCode != 200 {
		t.Errorf("screenshot of a hibernated desktop: %d", resp.StatusCode)
	}
}

func TestTemplatesAreForAdmins(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.do(t, e.alice, "POST", "/api/v1/templates", `{}`); code != 403 {
		t.Errorf("owner builds a template: %d", code)
	}
	if code, r := e.do(t, e.admin, "POST", "/api/v1/templates", `{"image":"debian-12-desktop","vcpus":2,"memory_mib":2048}`); code != 202 || r["state"] != "building" {
		t.Errorf("admin builds a template: %d %v", code, r)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/templates", ""); code != 200 {
		t.Errorf("list templates: %d", code)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"d"}`)
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/api/v1/desktops", `{"name":"x","colour":"red"}`, 400, "bad_request"},
		{"POST", "/api/v1/desktops", `{"name":`, 400, "bad_request"},
		{"POST", "/api/v1/desktops", ``, 400, "bad_request"},
		{"POST", "/api/v1/desktops", `{"name":"x"} {}`, 400, "bad_request"},
		{"POST", "/api/v1/desktops", `{"name":"x","vcpus":"two"}`, 400, "bad_request"},
		{"POST", "/api/v1/desktops/d1/stop?timeout=soon", ``, 422, "invalid"},
		{"POST", "/api/v1/desktops/d1/stop?force=maybe", ``, 422, "invalid"},
		{"DELETE", "/api/v1/desktops/d1?delete_data=perhaps", ``, 422, "invalid"},
		{"GET", "/api/v1/desktops/d1/events?limit=0", ``, 422, "invalid"},
		{"GET", "/api/v1/desktops/d1/screenshot", ``, 409, "invalid_state"},
		{"DELETE", "/api/v1/images/x", ``, 403, "forbidden"},
		{"POST", "/api/v1/tokens", `{"owner":"bob"}`, 404, "not_found"}, // not one of alice's teams (docs/teams.md)
		{"GET", "/api/v1/nothing", ``, 404, "not_found"},
		{"PUT", "/api/v1/desktops", ``, 405, "method_not_allowed"},
	}
	for _, c := range cases {
		if code, body := e.do(t, e.alice, c.method, c.path, c.body); code != c.status || errCode(body) != c.code {
			t.Errorf("%s %s %q: %d %v, want %d %s", c.method, c.path, c.body, code, body, c.status, c.code)
		}
	}
	e.do(t, e.alice, "POST", "/api/v1/desktops/d1/stop?force=true&timeout=30", "")
	if o := e.desktops.lastStop; !o.Force || o.Timeout != 30*time.Second {
		t.Errorf("stop options = %+v", o)
	}
	if code, body := e.do(t, e.admin, "DELETE", "/api/v1/images/x", ""); code != 409 || errCode(body) != "in_use" {
		t.Errorf("delete used image: %d %v", code, body)
	}
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{&desktop.ValidationError{Field: "vcpus", Message: "x"}, 422, "invalid"},
		{fmt.Errorf("wrapped: %w", &desktop.TransitionError{Op: desktop.OpStop, State: desktop.StateStopped}), 409, "invalid_state"},
		{fmt.Errorf("d: %w", desktop.ErrNameTaken), 409, "name_taken"},
		{fmt.Errorf("d: %w", desktop.ErrBusy), 409, "busy"},
		{fmt.Errorf("d: %w", desktop.ErrNotFound), 404, "not_found"},
		{fmt.Errorf("agent: %w", desktop.ErrUnavailable), 503, "unavailable"},
		{fmt.Errorf("x: %w", images.ErrExists), 409, "exists"},
		{fmt.Errorf("disk on fire"), 500, "internal"},
	}
	for _, c := range cases {
		status, body := classify(c.err)
		if status != c.status || body.Code != c.code {
			t.Errorf("%v → %d %s, want %d %s", c.err, status, body.Code, c.status, c.code)
		}
	}
	if _, body := classify(fmt.Errorf("secret path /var/lib/x")); strings.Contains(body.Message, "/var/lib") {
		t.Error("internal error message leaks details")
	}
	_, body := classify(&desktop.TransitionError{Op: desktop.OpStop, State: desktop.StateStopped})
	if body.State != "stopped" || !strings.Contains(body.Message, "stopped") {
		t.Errorf("transition error body %+v does not name the state", body)
	}
}

func TestOperationErrorsReachTheClient(t *testing.T) {
	e := newEnv(t)
	e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"d"}`)
	e.desktops.err = fmt.Errorf("d1: %w", desktop.ErrBusy)
	if code, body := e.do(t, e.alice, "POST", "/api/v1/desktops/d1/start", ""); code != 409 || errCode(body) != "busy" {
		t.Errorf("busy start: %d %v", code, body)
	}
}

func TestImportStreamsProgress(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/images", strings.NewReader(`{"name":"u","url":"http://127.0.0.1/x.img"}`))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if resp.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 2 ||
		!strings.Contains(lines[0], `"progress"`) || !strings.Contains(lines[1], `"image"`) {
		t.Fatalf("import stream: %s %q", resp.Header.Get("Content-Type"), data)
	}
	// The last line is written by the handler itself, yet the image in it
	// is the API's, like any reply's.
	var last struct{ Image map[string]any }
	if err := json.Unmarshal([]byte(lines[1]), &last); err != nil || last.Image["name"] != "u" || last.Image["size_bytes"] == nil {
		t.Errorf("import stream's image: %s", lines[1])
	}
}

type fakeLive struct {
	*manager.Feed
	events []*desktop.Event
}

func (f *fakeLive) AuditLog(_ context.Context, owner string, limit int) ([]*desktop.Event, error) {
	out := []*desktop.Event{}
	for _, e := range f.events {
		if owner == "" || e.Actor == owner {
			out = append(out, e)
		}
	}
	return out, nil
}

type fakeStats struct{}

func (fakeStats) DomainStats(context.Context, string) (*desktop.VMStats, error) {
	return &desktop.VMStats{CPUTimeNs: 42, VCPUs: 2, Disks: []desktop.DiskStats{{Name: "vdb", Path: hostDir + "/desktops/d1/data.qcow2"}}}, nil
}

func TestAuditLogStatsAndMetrics(t *testing.T) {
	e := newEnv(t)
	e.live.events = []*desktop.Event{{ID: "1", Actor: "alice"}, {ID: "2", Actor: "bob"}}
	if code, r := e.do(t, e.alice, "GET", "/api/v1/events", ""); code != 200 || len(r["events"].([]any)) != 1 {
		t.Errorf("alice's audit log: %d %v", code, r)
	}
	if code, r := e.do(t, e.admin, "GET", "/api/v1/events?limit=5", ""); code != 200 || len(r["events"].([]any)) != 2 {
		t.Errorf("admin's audit log: %d %v", code, r)
	}
	if code, _ := e.do(t, e.admin, "GET", "/api/v1/events?limit=0", ""); code != 422 {
		t.Errorf("limit 0: %d", code)
	}
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	if code, r := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/stats", ""); code != 409 {
		t.Errorf("stats of a desktop being created: %d %v", code, r)
	}
	e.desktops.desktops[id].State = desktop.StateRunning
	if code, r := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/stats", ""); code != 200 || r["cpu_time_ns"] != 42.0 {
		t.Errorf("stats: %d %v", code, r)
	}
	for tok, want := range map[string]int{"": 401, e.alice: 403, e.admin: 200} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics with token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}

func TestEventStreamDeliversOwnChanges(t *testing.T) {
	e := newEnv(t)
	// EventSource cannot send headers: the stream opens with a stream token.
	resp, err := http.Get(e.srv.URL + e.streamURL(t, e.alice))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	rd.ReadString('\n') // the opening comment
	rd.ReadString('\n')
	go func() {
		time.Sleep(50 * time.Millisecond)
		e.live.Publish(manager.Change{Owner: "bob", Desktop: &desktop.Desktop{ID: "bobs"}})
		e.live.Publish(manager.Change{Owner: "alice", Desktop: &desktop.Desktop{ID: "alices", State: desktop.StateRunning}})
	}()
	line1, _ := rd.ReadString('\n')
	line2, _ := rd.ReadString('\n')
	if line1 != "event: desktop\n" || !strings.Contains(line2, `"id":"alices"`) {
		t.Errorf("stream sent %q %q", line1, line2)
	}
}

// TestEveryRegisteredRouteNeedsAToken walks the router itself, so a route
// added later cannot forget authentication: only /healthz is public.
func TestEveryRegisteredRouteNeedsAToken(t *testing.T) {
	e := newEnv(t)
	router := New(Deps{Desktops: e.desktops, Snapshots: e.desktops, Templates: e.desktops, Log: slog.New(slog.DiscardHandler), Metrics: http.NotFoundHandler(), Web: web.Static})
	// The pages and their assets hold no data; /console/:id needs a
	// console token.
	public := map[string]bool{"GET /healthz": true, "GET /": true, "GET /static/*path": true, "GET /docs": true, "GET /api/v1/openapi.json": true,
		// Signing in (signin_test.go): the sign-in page's configuration
		// and the browser's way to the provider and back; signing out
		// takes the session cookie (404 here: single sign-on is off).
		"GET /auth/config": true, "GET /auth/login": true, "GET /auth/callback": true, "POST /auth/logout": true}
	n := 0
	for _, r := range router.Routes() {
		if public[r.Method+" "+r.Path] {
			continue
		}
		path := strings.NewReplacer(":id", "d1", ":name", "x", ":owner", "alice", "*filepath", "x", ":token_id", "x").Replace(r.Path)
		for _, tok := range []string{"", "bureau_not-a-real-token"} {
			if code, body := e.do(t, tok, r.Method, path, "{}"); code != 401 {
				t.Errorf("%s %s with token %q: %d %v", r.Method, r.Path, tok, code, body)
			}
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d routes checked", n)
	}
}
