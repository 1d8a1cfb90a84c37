// Package cloudinit renders a desktop's NoCloud configuration from the
// templates in images/cloud-init and writes it into a "cidata" ISO.
package cloudinit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"

	templates "github.com/bureau/bureau/images/cloud-init"
	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// Config is what differs between desktops.
type Config struct {
	DesktopID  string
	InstanceID string
	Hostname   string
	User       string
	SSHKeys    []string
	// InstallDesktop adds the first-boot desktop installation for images
	// that were imported rather than built by bureau.
	InstallDesktop bool
	// KeyboardLayout is the X server's XKB layout ("" = us), set at the
	// first boot of an OS disk; bureau changes it live afterwards.
	KeyboardLayout string
	// Agent is the bureau-agent binary: carried on the seed and installed
	// at boot when the desktop has none (nil: not installed).
	Agent []byte
}

// hostnameRE is one RFC 1123 label; identRE ids and user names. The
// templates quote these values, so a name like "yes" stays a string.
var (
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	identRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	layoutRE   = regexp.MustCompile(`^[a-z]{2,3}$`)
)

// Validate refuses input that could break out of the YAML it is put into.
func (c Config) Validate() error {
	if !hostnameRE.MatchString(c.Hostname) {
		return fmt.Errorf("hostname %q is not a valid host name (letters, digits and inner hyphens, at most 63)", c.Hostname)
	}
	for _, v := range []string{c.DesktopID, c.InstanceID, c.User} {
		if !identRE.MatchString(v) {
			return fmt.Errorf("cloud-init value %q is empty or has characters that are not allowed", v)
		}
	}
	if !layoutRE.MatchString(c.KeyboardLayout) {
		return fmt.Errorf("keyboard layout %q is not an XKB layout name", c.KeyboardLayout)
	}
	for _, k := range c.SSHKeys {
		if !printable(k) || !strings.HasPrefix(k, "ssh-") && !strings.HasPrefix(k, "ecdsa-") && !strings.HasPrefix(k, "sk-") {
			return fmt.Errorf("ssh key %.20q… is not a single-line OpenSSH public key", k)
		}
	}
	return nil
}

var tmpl = template.Must(template.New("").Option("missingkey=error").ParseFS(templates.FS, "*.tmpl"))

// Render returns the NoCloud files by name.
func Render(c Config) (map[string][]byte, error) {
	if c.KeyboardLayout == "" {
		c.KeyboardLayout = "us"
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range []string{"user-data", "meta-data", "network-config"} {
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, name+".tmpl", c); err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
		out[name] = b.Bytes()
	}
	if len(c.Agent) > 0 {
		out["bureau-agent"] = c.Agent
	}
	if !c.InstallDesktop {
		out["bureau-setup"] = setupFile(c)
	}
	return out, nil
}

// setupFile is what first-boot, in bureau's own image
// (images/desktop/files/usr/local/lib/bureau/first-boot), reads to set a
// new instance up without cloud-init: the user-data's settings as
// name=value lines (values Validate allowed: no quoting needed). Imported
// images have no first-boot and use the user-data.
func setupFile(c Config) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# bureau's setup of desktop %s, read by first-boot in bureau's image\n", c.DesktopID)
	fmt.Fprintf(&b, "hostname=%s\nuser=%s\nkeyboard=%s\n", c.Hostname, c.User, c.KeyboardLayout)
	for _, k := range c.SSHKeys {
		fmt.Fprintf(&b, "ssh_key=%s\n", k)
	}
	return b.Bytes()
}

// WriteSeed renders c and writes the ISO at path (atomically: a temporary
// file renamed into place).
func WriteSeed(ctx context.Context, path string, c Config) error {
	files, err := Render(c)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp := path + ".partial"
	os.Remove(tmp)
	if err := writeISO(tmp, files); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write seed %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write seed: %w", err)
	}
	return nil
}

func writeISO(path string, files map[string][]byte) error {
	size := int64(1 << 20)
	for _, b := range files {
		size += int64(len(b)) + 4096
	}
	d, err := diskfs.Create(path, size, diskfs.SectorSizeDefault)
	if err != nil {
		return err
	}
	d.LogicalBlocksize = 2048
	workspace, err := os.MkdirTemp(filepath.Dir(path), ".seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workspace)
	fs, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: 0, FSType: filesystem.TypeISO9660, VolumeLabel: "cidata", WorkDir: workspace})
	if err != nil {
		return err
	}
	defer fs.Close()
	for name, content := range files {
		f, err := fs.OpenFile("/"+name, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return err
		}
		if _, err := f.Write(content); err != nil {
			return err
		}
	}
	iso, ok := fs.(*iso9660.FileSystem)
	if !ok {
		return fmt.Errorf("not an iso9660 filesystem")
	}
	return iso.Finalize(iso9660.FinalizeOptions{RockRidge: true, Joliet: true, VolumeIdentifier: "cidata"})
}

// printable reports whether s is valid UTF-8 with no control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
