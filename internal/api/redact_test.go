package api

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

// TestHostPathsAreForAdmins: every response that carries a host path
// carries it for an admin and leaves it out (or hides it in text) for the
// owner.
func TestHostPathsAreForAdmins(t *testing.T) {
	e := newEnv(t)
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	id := d["id"].(string)
	disk := hostDir + "/desktops/" + id + "/data.qcow2"
	e.desktops.mu.Lock()
	e.desktops.desktops[id].DataDiskPath = disk
	e.desktops.desktops[id].State = desktop.StateRunning
	e.desktops.desktops[id].LastError = "start failed: open " + hostDir + "/desktops/" + id + "/os.qcow2: permission denied"
	e.desktops.mu.Unlock()
	e.live.events = []*desktop.Event{{ID: "1", Actor: "alice", Type: "deleted", Message: "deleted; data disk kept at " + disk}}

	type check struct {
		method, path string
		paths        []string // where in the body a host path may be
	}
	for _, c := range []check{
		{"GET", "/api/v1/desktops/" + id, []string{"data_disk_path", "last_error"}},
		{"GET", "/api/v1/desktops", []string{"desktops.0.data_disk_path", "desktops.0.last_error"}},
		{"GET", "/api/v1/images", []string{"images.0.path"}},
		{"GET", "/api/v1/desktops/" + id + "/stats", []string{"disks.0.path"}},
		{"GET", "/api/v1/events", []string{"events.0.message"}},
		{"DELETE", "/api/v1/desktops/" + id, []string{"data_disk_kept", "desktop.data_disk_path"}},
	} {
		_, asAdmin := e.do(t, e.admin, c.method, c.path, "")
		_, asOwner := e.do(t, e.alice, c.method, c.path, "")
		for _, p := range c.paths {
			if v := fmt.Sprint(dig(asAdmin, p)); !strings.Contains(v, hostDir) {
				t.Errorf("%s %s as admin: %s = %q, want the host path", c.method, c.path, p, v)
			}
		}
		if s := fmt.Sprint(asOwner); strings.Contains(s, hostDir) || strings.Contains(s, "data_disk_path") || strings.Contains(s, "data_disk_kept") {
			t.Errorf("%s %s as owner shows a host path: %s", c.method, c.path, s)
		}
	}
	owner := presenter{hide: newRedactor([]string{hostDir + "/"}).text}
	tpl := owner.value([]*manager.Template{{Key: "k", Error: "build failed: " + hostDir + "/templates/k/os.qcow2: no space"}})
	if msg := tpl.([]*apiv1.Template)[0].Error; msg != "build failed: "+hiddenPath+": no space" {
		t.Errorf("template error for an owner: %q", msg)
	}
	_, got := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id, "")
	if msg, _ := got["last_error"].(string); !strings.Contains(msg, "open "+hiddenPath+": permission denied") {
		t.Errorf("owner's last_error: %q", msg)
	}

	e.desktops.err = fmt.Errorf("%s/desktops has 1 MiB free: %w", hostDir, desktop.ErrCapacity)
	if _, body := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/start", ""); strings.Contains(fmt.Sprint(body), hostDir) {
		t.Errorf("owner's error shows a host path: %v", body)
	}
	if _, body := e.do(t, e.admin, "POST", "/api/v1/desktops/"+id+"/start", ""); !strings.Contains(fmt.Sprint(body), hostDir) {
		t.Errorf("admin's error hides the host path: %v", body)
	}
}

// TestStreamHidesHostPaths: the live stream sends desktop records and
// events as the reader may see them.
func TestStreamHidesHostPaths(t *testing.T) {
	e := newEnv(t)
	read := func(tok string) string {
		resp, err := http.Get(e.srv.URL + e.streamURL(t, tok))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		rd.ReadString('\n')
		rd.ReadString('\n')
		go func() {
			time.Sleep(50 * time.Millisecond)
			e.live.Publish(manager.Change{Owner: "alice", Desktop: &desktop.Desktop{ID: "d9", Owner: "alice", State: desktop.StateRunning, DataDiskPath: hostDir + "/d9/data.qcow2"}})
		}()
		rd.ReadString('\n')
		data, _ := rd.ReadString('\n')
		return data
	}
	if data := read(e.alice); !strings.Contains(data, `"id":"d9"`) || strings.Contains(data, hostDir) {
		t.Errorf("owner's stream: %q", data)
	}
	if data := read(e.admin); !strings.Contains(data, hostDir) {
		t.Errorf("admin's stream: %q", data)
	}
}

// dig follows a dotted path (numbers index lists) through decoded JSON.
func dig(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			fmt.Sscan(k, &i)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
