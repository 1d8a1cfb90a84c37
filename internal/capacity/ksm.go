package capacity

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// DefaultKSMRun is the kernel's switch for same-page merging (ksmd).
const DefaultKSMRun = "/sys/kernel/mm/ksm/run"

// KSMHold stops ksmd's scanning while a desktop's CPU-bound first
// seconds run (the identity of a warm create): on two cores under
// emulation ksmd's scan took up to a quarter of a CPU from the guest and
// made a warm create 0.5–3 s slower. Pages already merged stay merged
// (run=0 keeps them); scanning resumes when the last hold ends. A marker
// file says bureau stopped it, so a process that died holding it lets the
// next one turn it back on (Recover).
type KSMHold struct {
	Run    string // DefaultKSMRun
	Marker string // a file in bureau's data directory
	Log    *slog.Logger

	mu     sync.Mutex
	holds  int
	paused bool // this process switched ksmd off
}

// Hold stops ksmd unless it is already off; release ends the hold. A host
// without KSM (or without the right to switch it) is left as it is.
func (k *KSMHold) Hold() (release func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.holds++
	if k.holds == 1 && k.running() {
		if err := os.WriteFile(k.Marker, nil, 0o600); err == nil {
			if err := os.WriteFile(k.Run, []byte("0"), 0); err == nil {
				k.paused = true
			} else {
				os.Remove(k.Marker)
			}
		}
	}
	var once sync.Once
	return func() { once.Do(k.release) }
}

func (k *KSMHold) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.holds--
	if k.holds > 0 || !k.paused {
		return
	}
	k.paused = false
	k.resume()
}

// Recover turns ksmd back on when a previous process stopped it and died
// before its hold ended.
func (k *KSMHold) Recover() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := os.Stat(k.Marker); err == nil && k.holds == 0 {
		k.resume()
	}
}

func (k *KSMHold) running() bool {
	b, err := os.ReadFile(k.Run)
	return err == nil && string(bytes.TrimSpace(b)) == "1"
}

func (k *KSMHold) resume() {
	if err := os.WriteFile(k.Run, []byte("1"), 0); err != nil {
		if k.Log != nil {
			k.Log.Warn("KSM not switched back on", "err", err)
		}
		return
	}
	os.Remove(k.Marker)
}

// NewKSMHold holds the host's KSM, with its marker in dataDir.
func NewKSMHold(dataDir string, log *slog.Logger) *KSMHold {
	return &KSMHold{Run: DefaultKSMRun, Marker: filepath.Join(dataDir, "ksm-held"), Log: log}
}
