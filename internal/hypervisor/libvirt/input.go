package libvirt

import (
	"context"
	"fmt"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// SendInput injects input events (QMP input-send-event) into a VM's
// default keyboard and pointer; QEMU syncs once after the list.
func (h *Hypervisor) SendInput(ctx context.Context, name string, events []raw.InputEvent) error {
	if err := raw.NewMonitor(h.Monitor(ctx, name)).InputSendEvent(nil, nil, events); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	return nil
}
