package libvirt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp"
	"libvirt.org/go/libvirt"
)

// Screenshot returns the VM's primary display as libvirt delivers it
// (virDomainScreenshot), with its MIME type (image/png on QEMU ≥ 7.1).
func (h *Hypervisor) Screenshot(ctx context.Context, name string) ([]byte, string, error) {
	conn, err := h.connect(ctx)
	if err != nil {
		return nil, "", err
	}
	type shot struct {
		data []byte
		mime string
	}
	s, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (shot, error) {
		stream, err := conn.NewStream(0)
		if err != nil {
			return shot{}, err
		}
		defer stream.Free()
		mime, err := d.Screenshot(stream, 0, 0)
		if err != nil {
			return shot{}, err
		}
		var buf bytes.Buffer
		chunk := make([]byte, 256<<10)
		for {
			n, err := stream.Recv(chunk)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				stream.Abort()
				return shot{}, err
			}
			if n > 0 {
				buf.Write(chunk[:n])
			}
		}
		return shot{buf.Bytes(), mime}, stream.Finish()
	})
	if err != nil {
		return nil, "", fmt.Errorf("screenshot: %w", err)
	}
	return s.data, s.mime, nil
}

// Monitor returns a go-qemu QMP monitor for a domain. libvirtd owns each
// guest's QMP socket, so commands travel through virDomainQemuMonitorCommand.
func (h *Hypervisor) Monitor(ctx context.Context, name string) qmp.Monitor {
	return &monitor{ctx: ctx, h: h, name: name}
}

type monitor struct {
	ctx  context.Context
	h    *Hypervisor
	name string
}

func (m *monitor) Connect() error    { return nil }
func (m *monitor) Disconnect() error { return nil }

func (m *monitor) Run(cmd []byte) ([]byte, error) {
	out, err := withDomain(m.ctx, m.h, m.name, func(d *libvirt.Domain) (string, error) {
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

// Screendump asks QEMU to write the display as PNG to path (a file QEMU can
// write: QEMU runs as root here), returns its bytes and removes the file.
// It is the QMP route to a screenshot, beside libvirt's Screenshot.
func (h *Hypervisor) Screendump(ctx context.Context, name, path string) ([]byte, error) {
	cmd, err := json.Marshal(qmp.Command{Execute: "screendump", Args: map[string]string{"filename": path, "format": "png"}})
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	if _, err := h.Monitor(ctx, name).Run(cmd); err != nil {
		return nil, fmt.Errorf("screendump: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("screendump: %w", err)
	}
	return b, nil
}

// qmpClass is the typed error a QMP error's text stands for (nil: none):
// QMP reports these as GenericError, so its description is read here, in
// one place.
func qmpClass(desc string) error {
	switch {
	case strings.Contains(desc, noSpace):
		return syscall.ENOSPC
	case strings.Contains(desc, "Snapshot with") && strings.Contains(desc, "does not exist"):
		return desktop.ErrNoSnapshot
	}
	return nil
}
