package link

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp"
	"libvirt.org/go/libvirt"
)

// Monitor returns a go-qemu QMP monitor for a domain. libvirtd owns each
// guest's QMP socket, so commands travel through virDomainQemuMonitorCommand.
func (c *Conn) Monitor(ctx context.Context, name string) qmp.Monitor {
	return &monitor{ctx: ctx, c: c, name: name}
}

type monitor struct {
	ctx  context.Context
	c    *Conn
	name string
}

func (m *monitor) Connect() error    { return nil }
func (m *monitor) Disconnect() error { return nil }

func (m *monitor) Run(cmd []byte) ([]byte, error) {
	out, err := WithDomain(m.ctx, m.c, m.name, func(d *libvirt.Domain) (string, error) {
		return d.QemuMonitorCommand(string(cmd), libvirt.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT)
	})
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error *struct {
			Class string `json:"class"`
			Desc  string `json:"desc"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err == nil && resp.Error != nil {
		err := fmt.Errorf("qmp: %s: %s", resp.Error.Class, resp.Error.Desc)
		if typed := qmpClass(resp.Error.Desc); typed != nil {
			err = fmt.Errorf("%w (%w)", err, typed)
		}
		return nil, err
	}
	return []byte(out), nil
}

// Events is not offered: lifecycle events come from libvirt's event loop.
func (m *monitor) Events(context.Context) (<-chan qmp.Event, error) {
	return nil, qmp.ErrEventsNotSupported
}

// qmpClass is the typed error a QMP error's text stands for (nil: none):
// QMP reports these as GenericError, so its description is read here, in
// one place.
func qmpClass(desc string) error {
	switch {
	case strings.Contains(desc, NoSpace):
		return syscall.ENOSPC
	case strings.Contains(desc, "Snapshot with") && strings.Contains(desc, "does not exist"):
		return desktop.ErrNoSnapshot
	}
	return nil
}
