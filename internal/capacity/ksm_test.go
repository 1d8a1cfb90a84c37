package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ksmFixture(t *testing.T, run string) *KSMHold {
	t.Helper()
	dir := t.TempDir()
	k := &KSMHold{Run: filepath.Join(dir, "run"), Marker: filepath.Join(dir, "ksm-held")}
	if err := os.WriteFile(k.Run, []byte(run+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

func ksmRun(t *testing.T, k *KSMHold) string {
	t.Helper()
	b, err := os.ReadFile(k.Run)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestKSMHoldStopsScanningUntilTheLastHoldEnds(t *testing.T) {
	k := ksmFixture(t, "1")
	a := k.Hold()
	if got := ksmRun(t, k); got != "0" {
		t.Fatalf("run = %s while held, want 0", got)
	}
	if _, err := os.Stat(k.Marker); err != nil {
		t.Fatalf("no marker while held: %v", err)
	}
	b := k.Hold()
	a()
	a() // a second release of the same hold changes nothing
	if got := ksmRun(t, k); got != "0" {
		t.Fatalf("run = %s with one hold left, want 0", got)
	}
	b()
	if got := ksmRun(t, k); got != "1" {
		t.Fatalf("run = %s after the last hold, want 1", got)
	}
	if _, err := os.Stat(k.Marker); !os.IsNotExist(err) {
		t.Fatalf("marker left after the last hold: %v", err)
	}
}

func TestKSMHoldLeavesKSMOffWhenItWasOff(t *testing.T) {
	k := ksmFixture(t, "0")
	k.Hold()()
	if got := ksmRun(t, k); got != "0" {
		t.Fatalf("run = %s, want 0: KSM was off before the hold", got)
	}
	k.Recover()
	if got := ksmRun(t, k); got != "0" {
		t.Fatalf("Recover switched on a KSM bureau had not stopped")
	}
}

func TestKSMRecoverSwitchesBackOnAfterACrash(t *testing.T) {
	k := ksmFixture(t, "1")
	k.Hold() // never released: the process "died"
	next := &KSMHold{Run: k.Run, Marker: k.Marker}
	next.Recover()
	if got := ksmRun(t, next); got != "1" {
		t.Fatalf("run = %s after Recover, want 1", got)
	}
	if _, err := os.Stat(k.Marker); !os.IsNotExist(err) {
		t.Fatalf("marker left after Recover: %v", err)
	}
}
