//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/capacity"
	"github.com/bureau/bureau/internal/desktop"
)

// TestDensity warm-creates desktops (2 vCPUs, 2 GiB) one after another
// until BUREAU_DENSITY_N run or bureau refuses one for memory, then
// measures the host as they settle: memory available, QEMU memory in all
// and KSM's merged pages, every 30 s. Then one keeps running, four nap and
// the rest sleep, and the host is measured again (make bench-density).
func TestDensity(t *testing.T) {
	if os.Getenv("BUREAU_BENCH_DENSITY") == "" {
		t.Skip("set BUREAU_BENCH_DENSITY=1 (make bench-density)")
	}
	want := 20
	if n, err := strconv.Atoi(os.Getenv("BUREAU_DENSITY_N")); err == nil && n > 0 {
		want = n
	}
	s := newServer(t)
	fmt.Printf("template build: %s\n", s.buildTemplate(2, 2048).Round(time.Second))
	var ds []*apiv1.Desktop
	t.Cleanup(func() {
		for _, d := range ds {
			s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
		}
	})
	fmt.Println("\n| desktop | warm create → running | host memory available after |\n|---|---|---|")
	refused := ""
	for i := 1; i <= want; i++ {
		begun := time.Now()
		var raw []byte
		code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": fmt.Sprintf("dense-%d", i), "vcpus": 2, "memory_mib": 2048, "data_disk_gib": 2}, &raw)
		if code == http.StatusInsufficientStorage { // the host is full: the end of the run
			refused = fmt.Sprintf("create %d refused (%d): %s", i, code, raw)
			break
		}
		if code != http.StatusAccepted {
			t.Fatalf("create %d: %d %s", i, code, raw)
		}
		var d apiv1.Desktop
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("create: %v", err)
		}
		ds = append(ds, &d)
		run := s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
		*ds[len(ds)-1] = *run
		took := time.Since(begun).Round(100 * time.Millisecond)
		var evs struct{ Events []apiv1.Event }
		s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
		steps := ""
		if n := len(evs.Events); n > 0 {
			_, steps, _ = strings.Cut(evs.Events[n-1].Message, " running in ")
		}
		fmt.Printf("| %d | %s (bureau: %s) | %d MiB |\n", i, took, steps, memAvailableMiB(t))
	}
	if refused != "" {
		fmt.Println(refused)
	}
	if len(ds) == 0 {
		t.Fatal("no desktop was created")
	}
	measure := func(label string) {
		var rss, own int64
		for _, d := range ds {
			rss, own = rss+s.rssKiB(d), own+s.privateKiB(d)
		}
		n := int64(len(ds))
		fmt.Printf("| %s | %d | %d MiB | %d / %d MiB | %d MiB |\n", label, n, memAvailableMiB(t), rss/1024/n, own/1024/n, ksmSavedMiB())
	}
	fmt.Println("\n| after the last create | desktops | host memory available | QEMU memory per desktop, mean: resident / held alone | KSM: shared away |\n|---|---|---|---|---|")
	for i := 0; i <= 8; i++ {
		measure(fmt.Sprintf("%d s", i*30))
		if i < 8 {
			time.Sleep(30 * time.Second)
		}
	}
	// Every desktop still answers.
	for _, d := range ds {
		if code := s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/exec", map[string]any{"argv": []string{"true"}}, nil); code != http.StatusOK {
			t.Errorf("%s: exec %d", d.Name, code)
		}
	}
	if len(ds) < 6 {
		return
	}
	// One keeps running, four nap, the rest sleep.
	for i, d := range ds[1:] {
		tiers := map[string]any{"nap_after_seconds": 10, "sleep_after_seconds": 20, "idle_timeout_seconds": 0}
		if i < 4 {
			tiers["sleep_after_seconds"] = 0
		}
		if code := s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, tiers, nil); code != http.StatusOK {
			t.Fatalf("%s: set tiers %d", d.Name, code)
		}
	}
	for _, d := range ds[1:5] {
		s.waitState(adminToken, d.ID, desktop.StateNapping, 5*time.Minute)
	}
	for _, d := range ds[5:] {
		s.waitState(adminToken, d.ID, desktop.StateSleeping, 5*time.Minute)
	}
	var nap, sleep int64
	for _, d := range ds[1:5] {
		nap += s.privateKiB(d)
	}
	for _, d := range ds[5:] {
		sleep += s.privateKiB(d)
	}
	s.call(adminToken, "POST", "/api/v1/desktops/"+ds[0].ID+"/exec", map[string]any{"argv": []string{"true"}}, nil)
	fmt.Printf("\nheld alone: 1 running (%d MiB), 4 napping (%d MiB each), %d sleeping (%d MiB each); KSM shares %d MiB; host memory available %d MiB\n",
		s.privateKiB(ds[0])/1024, nap/4/1024, len(ds)-5, sleep/int64(len(ds)-5)/1024, ksmSavedMiB(), memAvailableMiB(t))
}

// memAvailableMiB is the host's MemAvailable, read as bureau reads it.
func memAvailableMiB(t *testing.T) int64 {
	t.Helper()
	n, err := capacity.Capacity{}.AvailableMemoryMiB()
	if err != nil {
		t.Fatal(err)
	}
	return int64(n)
}
