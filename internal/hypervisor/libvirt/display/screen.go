// Package display is a desktop's screen and input devices: Screen takes
// screenshots (screen.go), Input sends keyboard and pointer events and
// reads the virtio input queues (input.go). Both speak QMP through
// libvirt (link.Conn.Monitor).
package display

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
	"syscall"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/digitalocean/go-qemu/qmp"
	"libvirt.org/go/libvirt"
)

// Screen is the displays of the domains on every host.
type Screen struct {
	link *link.Conn
	// ScreenDir, when set, names a domain's folder its QEMU may write
	// ("" for none): screenshots are written there by QEMU and read back
	// instead of streamed through libvirt (faster on a local host).
	ScreenDir func(domain string) string
}

// NewScreen is the displays of the domains c routes to.
func NewScreen(c *link.Conn) *Screen { return &Screen{link: c} }

// Screenshot returns the VM's primary display as PNG with its MIME type:
// written by QEMU into the desktop's folder when ScreenDir names it, else
// (or when that fails) as libvirt delivers it (virDomainScreenshot;
// image/png on QEMU ≥ 7.1), which also works on a remote host.
func (s *Screen) Screenshot(ctx context.Context, name string) ([]byte, string, error) {
	h, err := s.link.On(ctx, name)
	if err != nil {
		return nil, "", err
	}
	// ScreenDir is a setting of bureau's own connection (its folders are
	// on this machine), which remote hosts' connections never had.
	if h == s.link && s.ScreenDir != nil {
		if dir := s.ScreenDir(name); dir != "" {
			b, err := screendump(ctx, h, name, dir)
			if err == nil {
				return b, "image/png", nil
			}
			h.Log().Debug("screenshot through the desktop's folder failed; through libvirt", "domain", name, "err", err)
		}
	}
	conn, err := h.Connect(ctx)
	if err != nil {
		return nil, "", err
	}
	type shot struct {
		data []byte
		mime string
	}
	sh, err := link.WithDomain(ctx, h, name, func(d *libvirt.Domain) (shot, error) {
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
	return sh.data, sh.mime, nil
}

// screendump has the domain's QEMU write its display as PNG into dir (a
// folder of the desktop's that its QEMU user may write) and reads it back:
// ~12 ms faster than libvirt's stream (BENCHMARKS.md). The file is opened as
// QEMU left it only if it is a regular file of its own (no symlink, no
// hard link, not root's): a QEMU taken over by its guest must not make
// bureau read another file for it.
func screendump(ctx context.Context, h *link.Conn, name, dir string) ([]byte, error) {
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
