package libvirt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp"
	"libvirt.org/go/libvirt"
)

// Screenshot returns the VM's primary display as PNG with its MIME type:
// written by QEMU into the desktop's folder when ScreenDir names it, else
// (or when that fails) as libvirt delivers it (virDomainScreenshot;
// image/png on QEMU ≥ 7.1), which also works on a remote host.
func (h *Hypervisor) Screenshot(ctx context.Context, name string) ([]byte, string, error) {
	h, err := h.on(ctx, name)
	if err != nil {
		return nil, "", err
	}
	if h.ScreenDir != nil {
		if dir := h.ScreenDir(name); dir != "" {
			b, err := h.screendump(ctx, name, dir)
			if err == nil {
				return b, "image/png", nil
			}
			h.log.Debug("screenshot through the desktop's folder failed; through libvirt", "domain", name, "err", err)
		}
	}
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

// screendump has the domain's QEMU write its display as PNG into dir (a
// folder of the desktop's that its QEMU user may write) and reads it back:
// ~12 ms faster than libvirt's stream (BENCHMARKS.md). The file is opened as
// QEMU left it only if it is a regular file of its own (no symlink, no
// hard link, not root's): a QEMU taken over by its guest must not make
// bureau read another file for it.
func (h *Hypervisor) screendump(ctx context.Context, name, dir string) ([]byte, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	path := filepath.Join(dir, "screendump-"+hex.EncodeToString(rnd[:])+".png")
	cmd, err := json.Marshal(qmp.Command{Execute: "screendump", Args: map[string]string{"filename": path, "format": "png"}})
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	if _, err := h.Monitor(ctx, name).Run(cmd); err != nil {
		return nil, fmt.Errorf("screendump: %w", err)
	}
	return readQEMUFile(path, maxScreendump)
}

// maxScreendump bounds a screenshot's PNG (a 4K screen of noise is ~33 MiB).
const maxScreendump = 64 << 20

// readQEMUFile reads a file a desktop's QEMU wrote, refusing anything but a
// regular file with one link, owned by a user other than root, and at most
// limit bytes.
func readQEMUFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("screendump: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("screendump: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || st.Nlink != 1 || st.Uid == 0 || fi.Size() > limit {
		return nil, fmt.Errorf("screendump: %s is not a file the desktop's QEMU wrote (%s, %d links)", path, fi.Mode(), st.Nlink)
	}
	return io.ReadAll(io.LimitReader(f, limit))
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
