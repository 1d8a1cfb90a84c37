package display

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// VirtioKeyboardAlias and VirtioTabletAlias name the desktop's virtio
// keyboard and tablet; their QOM paths are /machine/peripheral/<alias>.
const (
	VirtioKeyboardAlias = "ua-keyboard"
	VirtioTabletAlias   = "ua-tablet"
)

// Input is the keyboards and pointers of the domains on every host.
type Input struct {
	link *link.Conn
}

// NewInput is the input devices of the domains c routes to.
func NewInput(c *link.Conn) *Input { return &Input{link: c} }

// SendInput injects input events (QMP input-send-event) into a VM's
// default keyboard and pointer; QEMU syncs once after the list.
func (in *Input) SendInput(ctx context.Context, name string, events []raw.InputEvent) error {
	if err := raw.NewMonitor(in.link.Monitor(ctx, name)).InputSendEvent(nil, nil, events); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	return nil
}

// KeyQueue reads the desktop's virtio keyboard. room is how many input
// events it can take now: the buffers its guest driver has posted and
// QEMU has not yet filled (QEMU drops a whole report that does not fit).
// leds counts (16-bit, wrapping) the LED changes the guest has sent back
// on the keyboard's status queue; a lock key's LED changes only once the
// guest's input stack (the X server) has handled the key. ok is false
// when the guest does not drive that keyboard (no driver yet, an older VM
// without the device): keys then go to the PS/2 keyboard.
func (in *Input) KeyQueue(ctx context.Context, name string) (room int, leds uint16, ok bool, err error) {
	var idx [2]ringIndex
	for q := range idx {
		if idx[q], ok, err = in.ring(ctx, name, VirtioKeyboardAlias, q); !ok || err != nil {
			return 0, 0, false, err
		}
	}
	// Free-running 16-bit ring indices: the difference wraps correctly.
	return int(idx[0].avail - idx[0].used), idx[1].used, true, nil
}

// PointerQueue reads the desktop's virtio tablet: room is how many input
// events it can take now (QEMU drops a whole report that does not fit).
// ok is false when the guest does not drive the tablet (no driver yet, an
// older VM without it): pointer events then go to the PS/2 mouse.
func (in *Input) PointerQueue(ctx context.Context, name string) (room int, ok bool, err error) {
	idx, ok, err := in.ring(ctx, name, VirtioTabletAlias, 0)
	if !ok || err != nil {
		return 0, false, err
	}
	return int(idx.avail - idx.used), true, nil
}

// ringIndex is a virtqueue's free-running available and used indices.
type ringIndex struct{ avail, used uint16 }

// ring reads a virtio input device's queue indices from guest memory
// (queue 0 carries events to the guest, queue 1 its status, such as LED
// changes). ok is false when the guest does not drive the device.
func (in *Input) ring(ctx context.Context, name, alias string, queue int) (ringIndex, bool, error) {
	out, err := in.link.Monitor(ctx, name).Run(ringQuery(alias, queue))
	if err != nil {
		for _, absent := range []string{"not a VirtIO", "not initialized", "Invalid virtqueue", "Cannot map"} {
			if strings.Contains(err.Error(), absent) {
				return ringIndex{}, false, nil
			}
		}
		return ringIndex{}, false, fmt.Errorf("%s queue: %w", alias, err)
	}
	var resp struct {
		Return struct {
			Avail struct{ Idx uint16 } `json:"avail"`
			Used  struct{ Idx uint16 } `json:"used"`
		} `json:"return"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return ringIndex{}, false, fmt.Errorf("%s queue: %w", alias, err)
	}
	return ringIndex{resp.Return.Avail.Idx, resp.Return.Used.Idx}, true, nil
}

func ringQuery(alias string, queue int) []byte {
	return []byte(fmt.Sprintf(`{"execute":"x-query-virtio-queue-element","arguments":{"path":"/machine/peripheral/%s/virtio-backend","queue":%d}}`,
		alias, queue))
}
