package libvirt

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// VirtioKeyboardAlias names the desktop's virtio keyboard; its QOM path
// is /machine/peripheral/<alias>.
const VirtioKeyboardAlias = "ua-keyboard"

// SendInput injects input events (QMP input-send-event) into a VM's
// default keyboard and pointer; QEMU syncs once after the list.
func (h *Hypervisor) SendInput(ctx context.Context, name string, events []raw.InputEvent) error {
	if err := raw.NewMonitor(h.Monitor(ctx, name)).InputSendEvent(nil, nil, events); err != nil {
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
func (h *Hypervisor) KeyQueue(ctx context.Context, name string) (room int, leds uint16, ok bool, err error) {
	var idx [2]struct{ avail, used uint16 }
	for q := range idx {
		out, err := h.Monitor(ctx, name).Run(keyQueueQuery(q))
		if err != nil {
			for _, absent := range []string{"not a VirtIO", "not initialized", "Invalid virtqueue", "Cannot map"} {
				if strings.Contains(err.Error(), absent) {
					return 0, 0, false, nil
				}
			}
			return 0, 0, false, fmt.Errorf("keyboard queue: %w", err)
		}
		var resp struct {
			Return struct {
				Avail struct{ Idx uint16 } `json:"avail"`
				Used  struct{ Idx uint16 } `json:"used"`
			} `json:"return"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			return 0, 0, false, fmt.Errorf("keyboard queue: %w", err)
		}
		idx[q].avail, idx[q].used = resp.Return.Avail.Idx, resp.Return.Used.Idx
	}
	// Free-running 16-bit ring indices: the difference wraps correctly.
	return int(idx[0].avail - idx[0].used), idx[1].used, true, nil
}

// keyQueueQuery reads a virtio keyboard queue's ring indices from guest
// memory: queue 0 carries events to the guest, queue 1 its LED changes.
func keyQueueQuery(queue int) []byte {
	return []byte(fmt.Sprintf(`{"execute":"x-query-virtio-queue-element","arguments":{"path":"/machine/peripheral/%s/virtio-backend","queue":%d}}`,
		VirtioKeyboardAlias, queue))
}
