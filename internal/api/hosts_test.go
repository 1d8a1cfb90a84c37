package api

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/manager"
)

// fakeHosts keeps hosts in memory and answers as hosts.Registry does: the
// local host first and never removed, a name or URI taken is ErrExists, a
// URI naming "unreachable" does not answer, and with single set (SQLite) a
// second host needs PostgreSQL.
type fakeHosts struct {
	mu     sync.Mutex
	hosts  []hosts.Host
	single bool
	calls  int // of every method, to show a refused caller reached none
	added  map[string]map[string]string
	drain  *manager.DrainStatus
}

func newFakeHosts() *fakeHosts {
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	seen := created.Add(time.Hour)
	return &fakeHosts{added: map[string]map[string]string{}, hosts: []hosts.Host{
		{Name: hosts.LocalName, URI: "qemu:///system", Labels: map[string]string{}, State: hosts.StateUp,
			Facts: hosts.Facts{Hostname: "bureau-1", LibvirtVersion: "9.0.0", Accelerator: "kvm", CPUs: 8, MemoryMiB: 32000, FreeMemoryMiB: 20000,
				DiskMiB: 953869, FreeDiskMiB: 402113},
			LastSeenAt: &seen, CreatedAt: created},
		// Added, then lost before it answered again; never seen since bureau
		// started, so nothing is known of it.
		{Name: "gpu-1", URI: "qemu+ssh://bureau@gpu-1/system", Labels: map[string]string{"gpu": "a100"}, State: hosts.StateUnreachable,
			LastError: "dial tcp 10.0.0.9:22: connect: no route to host", CreatedAt: created},
	}}
}

func (f *fakeHosts) List(context.Context) ([]hosts.Host, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return append([]hosts.Host(nil), f.hosts...), nil
}

func (f *fakeHosts) Get(_ context.Context, name string) (*hosts.Host, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for i := range f.hosts {
		if f.hosts[i].Name == name {
			h := f.hosts[i]
			return &h, nil
		}
	}
	return nil, fmt.Errorf("host %s: %w", name, hosts.ErrNotFound)
}

func (f *fakeHosts) SSHPublicKey() string {
	return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBureau bureau"
}

func (f *fakeHosts) Add(_ context.Context, req hosts.AddRequest) (*hosts.Host, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	name, uri, labels := req.Name, req.URI, req.Labels
	if err := hosts.ValidateRequest(req); err != nil {
		return nil, err
	}
	if f.single {
		return nil, fmt.Errorf("%w: this bureau keeps its records in SQLite, which serves one host", hosts.ErrNeedsPostgres)
	}
	for _, h := range f.hosts {
		if h.Name == name || h.URI == uri {
			return nil, fmt.Errorf("host %s (%s): a host of that name or URI is there already: %w", name, uri, hosts.ErrExists)
		}
	}
	if strings.Contains(uri, "unreachable") {
		return nil, fmt.Errorf("%w: %s: dial tcp: connect: connection refused", hosts.ErrUnreachable, uri)
	}
	now := time.Now().UTC()
	h := hosts.Host{Name: name, URI: uri, Labels: maps.Clone(labels), State: hosts.StateUp,
		Facts: hosts.Facts{Hostname: name + ".lan", LibvirtVersion: "10.0.0", Accelerator: "tcg", CPUs: 4, MemoryMiB: 8000, FreeMemoryMiB: 6000},
		SSH:   req.SSH, Network: req.Network, Ready: true, LastSeenAt: &now, CreatedAt: now}
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	f.hosts = append(f.hosts, h)
	f.added[name] = labels
	return &h, nil
}

func (f *fakeHosts) Remove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if name == hosts.LocalName {
		return fmt.Errorf("%w: the local host is the one bureau runs on; it cannot be removed", hosts.ErrInUse)
	}
	for i := range f.hosts {
		if f.hosts[i].Name == name {
			f.hosts = append(f.hosts[:i], f.hosts[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("host %s: %w", name, hosts.ErrNotFound)
}

func (f *fakeHosts) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeHosts) setSingle(single bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.single = single
}

// labelsAdded are the labels Add was given for host name.
func (f *fakeHosts) labelsAdded(name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.added[name]
}

// TestHosts drives the hosts routes as an admin through every answer they
// give; the env's checker holds each response, and each request the server
// accepted, to the spec.
func TestHosts(t *testing.T) {
	e := newEnv(t)
	e.srv.Config.Handler.(*specChecker).requests = true
	admin := func(method, path, body string, want int) map[string]any {
		t.Helper()
		_, out := e.call(t, specCall{token: e.admin, method: method, path: path, body: body, want: want})
		return out
	}
	wantErr := func(body map[string]any, code, field string) {
		t.Helper()
		if errCode(body) != code || errField(body) != field {
			t.Errorf("error %v, want code %q field %q", body, code, field)
		}
	}

	// The list: local first, fields left out when empty.
	list := admin("GET", "/api/v1/hosts", "", 200)["hosts"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "local" {
		t.Fatalf("hosts: %v", list)
	}
	lost := list[1].(map[string]any)
	if _, ok := lost["last_seen_at"]; ok || lost["state"] != "unreachable" || lost["last_error"] == nil || lost["accelerator"] != "" {
		t.Errorf("a host never seen: %v", lost)
	}
	if _, ok := list[0].(map[string]any)["last_error"]; ok {
		t.Errorf("a host that answered has a last_error: %v", list[0])
	}
	// Its disk as measured; a host never measured shows 0, not nothing.
	if local := list[0].(map[string]any); local["disk_mib"] != 953869.0 || local["free_disk_mib"] != 402113.0 {
		t.Errorf("local disk: %v", local)
	}
	for _, k := range []string{"disk_mib", "free_disk_mib", "desktops", "committed_memory_mib"} {
		if lost[k] != 0.0 {
			t.Errorf("a host never seen: %s %v, want 0", k, lost[k])
		}
	}

	if key, _ := admin("GET", "/api/v1/hosts", "", 200)["ssh_public_key"].(string); !strings.HasPrefix(key, "ssh-ed25519 ") {
		t.Errorf("the list does not show bureau's SSH key: %q", key)
	}
	// With its SSH target and network, passed on and shown.
	h := admin("POST", "/api/v1/hosts", `{"name":"node-4","uri":"qemu+tcp://node-4:16509/system","ssh_address":"root@node-4:2222",`+
		`"ssh_host_key":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHost","bridge":"bureau1","subnet":"10.121.0.0/16"}`, 201)
	if h["ssh_address"] != "root@node-4:2222" || h["ssh_host_key"] != "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHost" || h["bridge"] != "bureau1" ||
		h["subnet"] != "10.121.0.0/16" || h["ready"] != true {
		t.Errorf("added with SSH and network: %v", h)
	}
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","subnet":"10.121.0.1/16"}`, 422), "invalid", "subnet")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","bridge":"no spaces"}`, 422), "invalid", "bridge")
	admin("DELETE", "/api/v1/hosts/node-4", "", 204)

	// Added: with labels, and without (an empty object, never null).
	h = admin("POST", "/api/v1/hosts", `{"name":"node-2","uri":"qemu+ssh://bureau@node-2/system","labels":{"zone":"eu-1","team/x":"a b"}}`, 201)
	if h["name"] != "node-2" || h["state"] != "up" || h["uri"] != "qemu+ssh://bureau@node-2/system" ||
		fmt.Sprint(h["labels"]) != "map[team/x:a b zone:eu-1]" || h["cpus"] != 4.0 || h["last_seen_at"] == nil {
		t.Errorf("added: %v", h)
	}
	if got := e.hosts.labelsAdded("node-2"); got["zone"] != "eu-1" || got["team/x"] != "a b" {
		t.Errorf("labels passed on: %v", got)
	}
	if h := admin("POST", "/api/v1/hosts", `{"name":"node-3","uri":"qemu+tls://node-3/system"}`, 201); fmt.Sprint(h["labels"]) != "map[]" {
		t.Errorf("added without labels: %v", h)
	}
	if h := admin("GET", "/api/v1/hosts/node-2", "", 200); h["name"] != "node-2" || h["hostname"] != "node-2.lan" {
		t.Errorf("get: %v", h)
	}
	if n := len(admin("GET", "/api/v1/hosts", "", 200)["hosts"].([]any)); n != 4 {
		t.Errorf("%d hosts after two adds, want 4", n)
	}

	// Refusals.
	wantErr(admin("GET", "/api/v1/hosts/nope", "", 404), "not_found", "")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"node-2","uri":"qemu+ssh://bureau@elsewhere/system"}`, 409), "exists", "")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"other","uri":"qemu+ssh://bureau@node-2/system"}`, 409), "exists", "")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"Node_2","uri":"qemu+ssh://h/system"}`, 422), "invalid", "name")
	wantErr(admin("POST", "/api/v1/hosts", `{"uri":"qemu+ssh://h/system"}`, 422), "invalid", "name")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"http://h/system"}`, 422), "invalid", "uri")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/session"}`, 422), "invalid", "uri")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","labels":{"-bad":"x"}}`, 422), "invalid", "labels")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","labels":{"k":"a\nb"}}`, 422), "invalid", "labels")
	body := admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+tcp://unreachable:16509/system"}`, 422)
	wantErr(body, "host_unreachable", "uri")
	if msg, _ := body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "connection refused") {
		t.Errorf("unreachable: libvirt's reason is not in %q", msg)
	}
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","zone":"x"}`, 400), "bad_request", "")
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system","labels":{"k":1}}`, 400), "bad_request", "")
	wantErr(admin("POST", "/api/v1/hosts", ``, 400), "bad_request", "")
	e.hosts.setSingle(true)
	wantErr(admin("POST", "/api/v1/hosts", `{"name":"n","uri":"qemu+ssh://h/system"}`, 409), "needs_postgres", "")
	e.hosts.setSingle(false)

	// Removed: never the local host.
	wantErr(admin("DELETE", "/api/v1/hosts/local", "", 409), "in_use", "")
	admin("DELETE", "/api/v1/hosts/node-2", "", 204)
	wantErr(admin("DELETE", "/api/v1/hosts/node-2", "", 404), "not_found", "")
	wantErr(admin("GET", "/api/v1/hosts/node-2", "", 404), "not_found", "")
	if _, err := e.hosts.Get(context.Background(), hosts.LocalName); err != nil {
		t.Errorf("the local host went: %v", err)
	}
}

// TestHostsAreAdminOnly: every hosts route refuses an owner's token, a
// desktop token and a computer-only one with 403 before it asks the hosts
// anything, and a call without a token with 401.
func TestHostsAreAdminOnly(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	tokens := auth.New(e.store)
	scoped := func(computerOnly bool) string {
		s, _, err := tokens.Create(context.Background(), auth.CreateRequest{Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: id, ComputerOnly: computerOnly})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	callers := map[string]string{"owner": e.alice, "another owner": e.bob, "desktop token": scoped(false), "computer-only token": scoped(true)}
	bodies := map[string]string{"POST": `{"name":"node-2","uri":"qemu+ssh://bureau@node-2/system"}`}
	n := 0
	for _, r := range engineOf(t, e).Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/hosts") {
			continue
		}
		n++
		path := strings.ReplaceAll(r.Path, ":name", "gpu-1")
		for who, tok := range callers {
			if code, body := e.do(t, tok, r.Method, path, bodies[r.Method]); code != 403 || errCode(body) != "forbidden" {
				t.Errorf("%s %s as %s: %d %v, want 403 forbidden", r.Method, path, who, code, body)
			}
		}
		if code, body := e.do(t, "", r.Method, path, bodies[r.Method]); code != 401 || errCode(body) != "unauthorized" {
			t.Errorf("%s %s without a token: %d %v, want 401", r.Method, path, code, body)
		}
		if code, _ := e.do(t, e.admin, "GET", "/api/v1/hosts/gpu-1", ""); code != 200 {
			t.Errorf("after %s %s by non-admins: gpu-1 is %d", r.Method, path, code)
		}
	}
	if n != 6 {
		t.Errorf("%d hosts routes, want 6", n)
	}
	// The admin's own checks above are the only calls that reached the hosts.
	if got := e.hosts.callCount(); got != n {
		t.Errorf("non-admin calls reached the hosts: %d calls, want %d", got, n)
	}
}

// TestOnlyAdminsPlaceDesktops: an admin names the host a desktop runs on
// and sees it; an owner who tries is refused before anything is made.
func TestOnlyAdminsPlaceDesktops(t *testing.T) {
	e := newEnv(t)
	_, out := e.call(t, specCall{token: e.admin, method: "POST", path: "/api/v1/desktops", body: `{"name":"far","host":"node-2"}`, want: 202})
	if out["host"] != "node-2" || e.desktops.lastReq.Host != "node-2" {
		t.Errorf("an admin's create on node-2: %v (asked %q)", out, e.desktops.lastReq.Host)
	}
	_, out = e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops", body: `{"name":"mine","host":"node-2"}`, want: 422})
	if errField(out) != "host" {
		t.Errorf("an owner's create on a host: %v", out)
	}
}

// TestADesktopOfALostHostShowsUnreachable: while its host does not answer,
// a desktop shows state unreachable with the reason, in the list and
// alone; its recorded state is untouched.
func TestADesktopOfALostHostShowsUnreachable(t *testing.T) {
	e := newEnv(t)
	_, far := e.call(t, specCall{token: e.admin, method: "POST", path: "/api/v1/desktops", body: `{"name":"far","host":"gpu-1"}`, want: 202})
	_, near := e.call(t, specCall{token: e.admin, method: "POST", path: "/api/v1/desktops", body: `{"name":"near"}`, want: 202})
	_, got := e.call(t, specCall{token: e.admin, method: "GET", path: "/api/v1/desktops/" + far["id"].(string), want: 200})
	if got["state"] != "unreachable" || !strings.Contains(fmt.Sprint(got["last_error"]), "gpu-1 does not answer") {
		t.Errorf("a desktop of an unreachable host: %v", got)
	}
	_, list := e.call(t, specCall{token: e.admin, method: "GET", path: "/api/v1/desktops", want: 200})
	for _, x := range list["desktops"].([]any) {
		d := x.(map[string]any)
		if want := map[string]string{far["id"].(string): "unreachable", near["id"].(string): "creating"}[d["id"].(string)]; d["state"] != want {
			t.Errorf("listed %s: %v, want %s", d["name"], d["state"], want)
		}
	}
	if d, _ := e.desktops.Get(context.Background(), far["id"].(string)); d.State != desktop.StateCreating {
		t.Errorf("the recorded state changed: %s", d.State)
	}
}
