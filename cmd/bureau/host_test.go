package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHostList(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET /api/v1/hosts", 200, map[string]any{"hosts": []map[string]any{
		{"name": "local", "uri": "qemu:///system", "labels": map[string]string{}, "state": "up", "ready": true, "accelerator": "kvm", "cpus": 8,
			"memory_mib": 64000, "free_memory_mib": 40960, "disk_mib": 953869, "free_disk_mib": 402113, "desktops": 3, "committed_memory_mib": 12288},
		{"name": "gpu-1", "uri": "qemu+ssh://bureau@gpu-1/system", "labels": map[string]string{"zone": "eu", "gpu": "a100"}, "state": "unreachable",
			"desktops": 1, "committed_memory_mib": 4096, "last_error": "no route to host"},
	}})
	out, _, err := f.run("host", "list")
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME   STATE        READY  ACCEL  CPUS  DESKTOPS  COMMITTED/MEMORY  FREE-MEMORY  FREE/DISK        URI                             LABELS            ERROR
local  up           yes    kvm    8     3         12.0/62.5 GiB     40.0 GiB     392.7/931.5 GiB  qemu:///system
gpu-1  unreachable  no            0     1         4.0/- GiB         -            -                qemu+ssh://bureau@gpu-1/system  gpu=a100,zone=eu  no route to host
`
	if trimLines(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestHostShowHasEveryField(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET /api/v1/hosts/local", 200, map[string]any{"name": "local", "memory_mib": 64000, "disk_mib": 953869, "free_disk_mib": 402113,
		"desktops": 3, "committed_memory_mib": 12288})
	out, _, err := f.run("host", "show", "local")
	var h map[string]any
	if err != nil || json.Unmarshal([]byte(out), &h) != nil {
		t.Fatalf("%s %v", out, err)
	}
	for k, v := range map[string]float64{"disk_mib": 953869, "free_disk_mib": 402113, "desktops": 3, "committed_memory_mib": 12288, "free_memory_mib": 0} {
		if h[k] != v {
			t.Errorf("%s: %v, want %v", k, h[k], v)
		}
	}
}

func TestDesktopCreatePlaceLabels(t *testing.T) {
	f := newFakeBureau(t)
	var bodies []map[string]any
	f.routes["POST /api/v1/desktops"] = func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &b)
		bodies = append(bodies, b)
		writeJSON(w, 202, map[string]any{"id": "d2", "name": "work", "state": "creating"})
	}
	if _, _, err := f.run("desktop", "create", "work", "--place-label", "gpu=a100", "--place-label", "zone=eu"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.run("desktop", "create", "plain"); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 {
		t.Fatalf("%d creates", len(bodies))
	}
	if p, _ := json.Marshal(bodies[0]["placement"]); string(p) != `{"labels":{"gpu":"a100","zone":"eu"}}` {
		t.Errorf("placement sent: %s", p)
	}
	if _, ok := bodies[1]["placement"]; ok {
		t.Errorf("placement without --place-label: %v", bodies[1])
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--place-label", "gpu"}, `--place-label "gpu": want key=value`},
		{[]string{"--place-label", "=a100"}, `--place-label "=a100": want key=value (the key is empty)`},
		{[]string{"--place-label", "gpu=a100", "--host", "gpu-1"}, "--host and --place-label: give one"},
	} {
		_, _, err := f.run(append([]string{"desktop", "create", "work"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	if len(bodies) != 2 {
		t.Errorf("a refused flag reached the server: %d creates", len(bodies))
	}
}
