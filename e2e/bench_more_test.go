//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
)

// benchPersistence measures pause, hibernate, resume, snapshots, the idle
// desktop's host memory and API list latency on the running bench desktop.
func benchPersistence(t *testing.T, s *server, id string, d *apiv1.Desktop, add func(string, time.Duration), addRow func(name, value string)) {
	base := "/api/v1/desktops/" + id

	// Idle host memory: what the QEMU process holds once the desktop settled.
	time.Sleep(20 * time.Second)
	var st apiv1.Stats
	benchCall(t, s, adminToken, "GET", base+"/stats", nil, &st)
	rssMiB := st.MemoryRSSKiB / 1024
	addRow("idle desktop host memory (QEMU RSS, 2 GiB guest)", fmt.Sprintf("%d MiB", rssMiB))
	if rssMiB > 0 {
		addRow("idle desktops that fit in 24 GiB at that RSS (2 GiB host reserve)", fmt.Sprintf("%d", (22*1024)/int(rssMiB)))
	}
	if saved := ksmSavedMiB(); saved >= 0 {
		addRow("KSM: memory shared away (pages_sharing × 4 KiB)", fmt.Sprintf("%d MiB", saved))
	}

	t0 := time.Now()
	benchCall(t, s, adminToken, "POST", base+"/pause", nil, nil)
	add("pause", time.Since(t0))
	t0 = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/resume", nil, nil)
	add("resume from pause", time.Since(t0))

	t0 = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/hibernate", nil, nil)
	s.waitState(adminToken, id, desktop.StateHibernated, 5*time.Minute)
	add("hibernate → hibernated", time.Since(t0))
	t0 = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/resume", nil, nil)
	s.waitState(adminToken, id, desktop.StateRunning, 5*time.Minute)
	add("resume from hibernation → running", time.Since(t0))
	s.waitAgent(d, 2*time.Minute)
	add("resume from hibernation → guest agent answers (interactive)", time.Since(t0))

	t0 = time.Now()
	var sn apiv1.Snapshot
	benchCall(t, s, adminToken, "POST", base+"/snapshots", map[string]any{"name": "bench-mem"}, &sn)
	add("snapshot with memory (running)", time.Since(t0))
	addRow("memory snapshot size", fmt.Sprintf("%d MiB", sn.SizeBytes>>20))
	t0 = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/snapshots", map[string]any{"name": "bench-data", "scope": "data"}, nil)
	add("snapshot of the data disk (live, quiesced)", time.Since(t0))
	t0 = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/snapshots/bench-mem/revert", nil, nil)
	s.waitState(adminToken, id, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(d, 2*time.Minute)
	add("revert to the memory snapshot → guest agent answers", time.Since(t0))

	// The listing fills the database with 1,000 desktops: not on a
	// desktop other checks still use.
	if !strings.HasPrefix(s.dbURL, "postgres") && !benchShort() {
		addRow(fmt.Sprintf("GET /desktops p50 / %s with 1,000 desktops in the DB (%d runs)", tail(reps()), reps()), listLatency(t, s))
	}
}

// listLatency fills the server's SQLite database with 1,000 stopped
// desktops of one owner and times that owner's listing through the API.
func listLatency(t *testing.T, s *server) string {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(s.dataDir, "bureau.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	for i := range 1000 {
		d := &desktop.Desktop{ID: fmt.Sprintf("bench%04d", i), Owner: "bench", Name: "d" + strconv.Itoa(i),
			Spec:  desktop.Spec{Image: "debian-12-desktop", VCPUs: 2, MemoryMiB: 4096, DataDiskGiB: 20},
			State: desktop.StateStopped, DesiredState: desktop.StateStopped, Accelerator: "tcg",
			Dir: "/nonexistent", CreatedAt: now, UpdatedAt: now}
		if err := st.CreateDesktop(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var tok struct{ Token string }
	benchCall(t, s, adminToken, "POST", "/api/v1/tokens", map[string]any{"owner": "bench"}, &tok)
	times := timeN(reps(), func() {
		var out struct{ Desktops []apiv1.Desktop }
		benchCall(t, s, tok.Token, "GET", "/api/v1/desktops", nil, &out)
		if len(out.Desktops) != 1000 {
			t.Fatalf("listed %d desktops", len(out.Desktops))
		}
	})
	return fmt.Sprintf("%s / %s", pct(times, 50), pct(times, 99))
}

func ksmSavedMiB() int {
	b, err := os.ReadFile("/sys/kernel/mm/ksm/pages_sharing")
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n * 4 / 1024
}

// benchShort reports a short run of the benchmarks: the benchmarks check
// on make test's lifecycle desktop, which keeps them working; make bench
// (BUREAU_BENCH=1) runs them in full.
func benchShort() bool { return os.Getenv("BUREAU_BENCH") != "1" }

// reps is how often a repeated measurement runs: 20, or 3 in a short run.
func reps() int {
	if benchShort() {
		return 3
	}
	return 20
}
