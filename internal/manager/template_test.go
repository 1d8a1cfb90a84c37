package manager

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func (h *harness) waitTemplate(t *testing.T, key string) *Template {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if tp, err := h.m.warm.read(context.Background(), key); err == nil && tp.State != "building" {
			return tp
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("template %s still building", key)
	return nil
}

func TestWarmCreateFromTemplate(t *testing.T) {
	var ops []string
	h := newHarness(t, &fakeDisks{snaps: &ops})
	ctx := context.Background()
	tp, err := h.m.WarmPool().BuildTemplate(ctx, "base", 2, 2048)
	if err != nil || tp.State != "building" {
		t.Fatalf("build template: %v %+v", err, tp)
	}
	if got := h.waitTemplate(t, tp.Key); got.State != "ready" {
		t.Fatalf("template: %+v", got)
	}
	dir := h.m.warm.dir(tp.Key)
	if _, err := os.Stat(filepath.Join(dir, "ram.save")); err != nil {
		t.Fatalf("no saved RAM: %v", err)
	}
	vms, _ := h.hv.List(ctx)
	for n := range vms {
		if strings.HasPrefix(n, "bureau-tmpl-") {
			t.Errorf("template VM %s left defined", n)
		}
	}
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "warm", SSHKeys: []string{"ssh-ed25519 AAAA k"},
		Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning {
		t.Fatalf("warm desktop: %+v", got)
	}
	calls := h.hv.callList()
	if !slices.Contains(calls, "RestoreAs "+d.DomainName()) || slices.Contains(calls, "Start "+d.DomainName()) {
		t.Errorf("warm create did not restore the template: %v", calls)
	}
	if !slices.Contains(calls, "ResizeDisk "+d.DomainName()+" data.qcow2 21474836480") {
		t.Errorf("data disk not grown to the requested size: %v", calls)
	}
	evs, _ := h.m.Events(ctx, d.ID, 10)
	if last := evs[len(evs)-1]; !strings.Contains(last.Message, "warm template") {
		t.Errorf("created event: %q", last.Message)
	}
	// Another size, or asking for a cold boot, boots.
	cold, _ := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "cold", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	h.settle(t, cold.ID)
	if !slices.Contains(h.hv.callList(), "Start "+cold.DomainName()) {
		t.Error("a desktop of another size did not boot")
	}
}

func TestTemplateRefusals(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	var ve *desktop.ValidationError
	if _, err := h.m.WarmPool().BuildTemplate(ctx, "nope", 2, 2048); !errors.As(err, &ve) {
		t.Errorf("unknown image: %v", err)
	}
	if _, err := h.m.WarmPool().BuildTemplate(ctx, "imported", 2, 2048); !errors.As(err, &ve) {
		t.Errorf("imported image: %v", err)
	}
	if _, err := h.m.WarmPool().BuildTemplate(ctx, "base", 99, 2048); !errors.As(err, &ve) {
		t.Errorf("99 vCPUs: %v", err)
	}
	h.hv.fail("SaveTo")
	tp, _ := h.m.WarmPool().BuildTemplate(ctx, "base", 1, 1024)
	if got := h.waitTemplate(t, tp.Key); got.State != "failed" || got.Error == "" {
		t.Errorf("failed build: %+v", got)
	}
	if h.m.warm.ready(context.Background(), "base", 1, 1024) != nil {
		t.Error("a failed template is used")
	}
}

// TestWarmCreateWhoseIdentityFails: a guest restored from a template that
// fails to take the desktop's identity never runs as the template: the
// create fails with what the guest printed and its VM is gone.
func TestWarmCreateWhoseIdentityFails(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	tp, err := h.m.WarmPool().BuildTemplate(ctx, "base", 2, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.waitTemplate(t, tp.Key); got.State != "ready" {
		t.Fatalf("template: %+v", got)
	}
	h.hv.onExec(identityScript, desktop.ExecResult{ExitCode: 2, Stderr: []byte("unknown identity file: --- x")}, nil)
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "warm", Spec: desktop.Spec{VCPUs: 2, MemoryMiB: 2048, DataDiskGiB: 20}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateError || !strings.Contains(got.LastError, "exit 2: unknown identity file") {
		t.Fatalf("warm create whose identity failed: %s (%q)", got.State, got.LastError)
	}
	if !slices.Contains(h.hv.callList(), "RestoreAs "+d.DomainName()) {
		t.Fatalf("not a warm create: %v", h.hv.callList())
	}
	if st := h.hv.vm(d.DomainName()); st != "" {
		t.Errorf("VM %s left of a desktop without its identity", st)
	}
	if exists(got.Dir) {
		t.Errorf("files left in %s", got.Dir)
	}
}

// template.json is read back by the next bureau: its keys are a file
// format, kept apart from the Template type.
func TestTemplateRecordFormat(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	b, err := json.Marshal(templateRecord(Template{Key: "img-2c-2048m", Image: "img", VCPUs: 2, MemoryMiB: 2048, State: "ready", CreatedAt: at, BuildTime: "1m0s", Spares: 1}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"key":"img-2c-2048m","image":"img","vcpus":2,"memory_mib":2048,"state":"ready","created_at":"2026-11-27T10:00:00Z","build_time":"1m0s","spares":1}`
	if string(b) != want {
		t.Errorf("template.json = %s\nwant %s", b, want)
	}
	var r templateRecord
	if err := json.Unmarshal([]byte(`{"key":"k","image":"i","vcpus":1,"memory_mib":1024,"state":"failed","error":"boom","created_at":"2026-11-27T10:00:00Z","spares":0}`), &r); err != nil || Template(r).Error != "boom" || Template(r).MemoryMiB != 1024 {
		t.Errorf("an older template.json read as %+v (%v)", r, err)
	}
}
