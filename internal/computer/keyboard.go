package computer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// Keys reach the guest through one of two keyboards.
//
// Once its driver is up, a desktop takes keys from a virtio keyboard, and
// bureau keeps every queue on the way from overflowing:
//   - QEMU's: before each report bureau reads how many buffers the guest
//     driver has posted (a report that does not fit is dropped whole);
//   - the guest's: the kernel hands keys to the X server through a
//     64-event buffer and drops it all when X falls behind. So each batch
//     ends with two taps of Num Lock, a barrier: the X server switches
//     the keyboard's LED on each tap it handles, the LED change comes back
//     on the keyboard's status queue, and bureau counts it. At most
//     deepWindow batches are out without their barrier answered, and a
//     typing call returns once X has handled every key. Barriers go only
//     where no key is held (Shift+Num Lock would toggle mouse keys), and
//     the two taps leave Num Lock as it was.
//
// Before that (boot, an older VM without the device, a guest with no
// driver) keys go to the PS/2 keyboard, whose 16-byte queue cannot be
// asked: calls are kept small and paced (typeBudget, typePause). A guest
// whose LED never answers gets the same pacing on the virtio keyboard.

const (
	// deepBatch is the most key events in one batch before its barrier.
	deepBatch = 16
	// deepWindow is how many batches may await their barrier: with the
	// barriers' events and the syncs the kernel adds, well under the
	// 64 events the guest can buffer for X.
	deepWindow = 2
)

// barrier is two taps of Num Lock.
var barrier = []raw.InputEvent{
	keyEvent(raw.QKeyCodeNumLock, true), keyEvent(raw.QKeyCodeNumLock, false),
	keyEvent(raw.QKeyCodeNumLock, true), keyEvent(raw.QKeyCodeNumLock, false),
}

// barrierLEDs is how many LED changes a barrier brings back.
const barrierLEDs = 2

// keyboards remembers, per desktop, when a PS/2 call last went out and
// whether the guest answers barriers.
type keyboards struct {
	mu       sync.Mutex
	last     map[string]time.Time
	answered map[string]bool      // a barrier came back
	silent   map[string]time.Time // when a first barrier never did
	used     map[string]string    // the way keys last went in
}

// Ways keys go in, as StepResult.Keyboard reports them.
const (
	viaVirtio      = "virtio"       // every key acknowledged by the guest
	viaVirtioPaced = "virtio-paced" // the guest's LEDs do not answer
	viaPS2         = "ps2"
)

// silentFor is how long a desktop whose LEDs did not answer is typed to
// by time before bureau tries barriers again.
const silentFor = 10 * time.Minute

func newKeyboards() *keyboards {
	return &keyboards{last: map[string]time.Time{}, answered: map[string]bool{}, silent: map[string]time.Time{}, used: map[string]string{}}
}

// pace waits until typePause has passed since the last paced call.
func (k *keyboards) pace(ctx context.Context, domain string) error {
	k.mu.Lock()
	d := typePause - time.Since(k.last[domain])
	k.mu.Unlock()
	if d > 0 {
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
	k.mu.Lock()
	k.last[domain] = time.Now()
	k.mu.Unlock()
	return nil
}

// note records the way keys went in to domain.
func (k *keyboards) note(domain, via string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.used[domain] = via
}

// via is the way keys last went in to domain.
func (k *keyboards) via(domain string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.used[domain]
}

func (k *keyboards) get(domain string) (answered, silent bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.answered[domain], time.Since(k.silent[domain]) < silentFor
}

func (k *keyboards) set(domain string, answered, silent bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.answered[domain] = answered
	if silent {
		k.silent[domain] = time.Now()
	} else {
		delete(k.silent, domain)
	}
}

// sendKeys delivers a chord's presses or releases; settled says no key is
// held once they are in, so a barrier may follow.
func (c *Computer) sendKeys(ctx context.Context, domain string, ev []raw.InputEvent, settled bool) error {
	return c.deliver(ctx, domain, [][]raw.InputEvent{ev}, settled)
}

// typeKeys types text that has keys on the keyboard.
func (c *Computer) typeKeys(ctx context.Context, domain, text string, km keymap) error {
	err := c.deliver(ctx, domain, keyBatches(text, deepBatch, km), true)
	if err != nil {
		// A failure part-way must not leave a modifier down.
		c.in.SendInput(context.WithoutCancel(ctx), domain, []raw.InputEvent{keyEvent(raw.QKeyCodeShift, false), keyEvent(altGr, false)})
	}
	return err
}

// forcePaced marks a request context whose keys are paced by time.
type forcePaced struct{}

// deliver sends batches of key events in order, each ending with no key
// held when settled.
func (c *Computer) deliver(ctx context.Context, domain string, batches [][]raw.InputEvent, settled bool) error {
	room, leds, deep, err := c.in.KeyQueue(ctx, domain)
	if err != nil {
		return err
	}
	answered, silent := c.kbd.get(domain)
	switch {
	case !deep:
		c.kbd.note(domain, viaPS2)
		return c.paced(ctx, domain, batches)
	case silent, ctx.Value(forcePaced{}) != nil:
		c.kbd.note(domain, viaVirtioPaced)
		return c.paced(ctx, domain, batches)
	}
	c.kbd.note(domain, viaVirtio)
	d := deepSend{c: c, domain: domain, room: room, leds: leds, answered: answered, barriers: settled}
	return d.run(ctx, batches)
}

// paced sends batches cut to typeBudget events, typePause apart.
func (c *Computer) paced(ctx context.Context, domain string, batches [][]raw.InputEvent) error {
	for _, b := range batches {
		for len(b) > 0 {
			n := min(len(b), typeBudget)
			if err := c.kbd.pace(ctx, domain); err != nil {
				return err
			}
			if err := c.in.SendInput(ctx, domain, b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
	}
	return nil
}

// deepSend is one delivery to a virtio keyboard.
type deepSend struct {
	c        *Computer
	domain   string
	room     int    // buffers free at the last look
	leds     uint16 // LED changes seen at the last look
	sent     uint16 // LED changes the barriers sent so far will bring
	pending  int    // batches whose barrier is not answered yet
	answered bool   // this guest has answered a barrier
	barriers bool
}

func (d *deepSend) run(ctx context.Context, batches [][]raw.InputEvent) error {
	d.sent = d.leds
	for i, b := range batches {
		report := b
		if d.barriers {
			report = append(b[:len(b):len(b)], barrier...)
		}
		// A report takes a buffer per event and one for its sync.
		switch err := d.await(ctx, func() bool { return d.pending < deepWindow && d.room >= len(report)+1 }); {
		case errors.Is(err, errSilent):
			d.c.kbd.note(d.domain, viaVirtioPaced)
			return d.c.paced(ctx, d.domain, batches[i:])
		case errors.Is(err, errNoDriver):
			d.c.kbd.note(d.domain, viaPS2)
			return d.c.paced(ctx, d.domain, batches[i:])
		case err != nil:
			return err
		}
		if err := d.c.in.SendInput(ctx, d.domain, report); err != nil {
			return err
		}
		d.room -= len(report) + 1
		if d.barriers {
			d.sent += barrierLEDs
			d.pending++
		}
	}
	// Return once the guest has handled every key.
	if err := d.await(ctx, func() bool { return d.pending == 0 }); err != nil && !errors.Is(err, errSilent) && !errors.Is(err, errNoDriver) {
		return err
	}
	return nil
}

var (
	// errSilent: the guest has never answered a barrier; pace by time.
	errSilent = errors.New("the guest's keyboard LEDs do not answer")
	// errNoDriver: the guest dropped its virtio keyboard driver (a
	// reboot); the PS/2 keyboard takes the keys.
	errNoDriver = errors.New("the guest's virtio keyboard driver is gone")
)

// await re-reads the keyboard until ready() holds.
func (d *deepSend) await(ctx context.Context, ready func() bool) error {
	wait, since, seen := time.Millisecond, time.Now(), d.leds
	for !ready() {
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, 20*time.Millisecond)
		room, leds, deep, err := d.c.in.KeyQueue(ctx, d.domain)
		if err != nil {
			return err
		}
		if !deep {
			return errNoDriver
		}
		if room > d.room {
			since = time.Now() // the guest is taking keys
		}
		d.room, d.leds = room, leds
		// Barriers answered: sent - leds is what is still out (less if
		// someone else toggled a lock key meanwhile).
		d.pending = min(d.pending, (max(int(int16(d.sent-d.leds)), 0)+barrierLEDs-1)/barrierLEDs)
		if d.leds != seen {
			seen, since = d.leds, time.Now()
			if !d.answered {
				d.answered = true
				d.c.kbd.set(d.domain, true, false)
			}
		}
		waited := time.Since(since)
		if d.pending > 0 && !d.answered && waited > d.c.KeyAckWait {
			slog.Warn("keyboard LEDs do not answer: typing paced by time", "domain", d.domain)
			d.c.kbd.set(d.domain, false, true)
			return errSilent
		}
		if waited > d.c.KeyStall {
			return fmt.Errorf("the desktop took no key for %s (is it paused or hung?): %w", d.c.KeyStall, desktop.ErrUnavailable)
		}
	}
	return nil
}
