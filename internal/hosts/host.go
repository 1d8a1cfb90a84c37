// Package hosts keeps the libvirt hosts bureau's desktops run on: the
// local one first, more when a team outgrows one machine. It records each
// host, watches its connection (libvirt keepalive, reconnect) and keeps
// what the host reports (CPUs, memory, accelerator) for placement.
// Several hosts need PostgreSQL: SQLite serves one.
package hosts

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Host is one libvirt host as bureau last saw it.
type Host struct {
	Name   string
	URI    string
	Labels map[string]string
	State  State
	// What the host reported at its last check.
	Facts
	// SSH is how bureau reaches a remote host for what libvirt does not
	// carry (its firewall, consoles); Network is bureau's desktop network
	// there. The local host needs neither.
	SSH     SSH
	Network Network
	// Ready: bureau's network and firewall are in place on the host (the
	// local one is made ready at start-up); ReadyError says what is not.
	Ready      bool
	ReadyError string
	// Draining: bureau is moving every desktop off it, and places none
	// there.
	Draining   bool
	LastError  string
	LastSeenAt *time.Time
	CreatedAt  time.Time
}

// Facts are what a host's libvirtd reports about it.
type Facts struct {
	Hostname       string
	LibvirtVersion string
	// Accelerator is "kvm" where the host's CPU has hardware
	// virtualization and libvirt offers KVM guests, else "tcg".
	Accelerator   string
	CPUs          int
	MemoryMiB     int64
	FreeMemoryMiB int64
	// DiskMiB and FreeDiskMiB are the size and free space of the
	// filesystem holding bureau's data directory on the host (its images
	// folder); 0 when not measured. Free space counts root's reserve,
	// as libvirt's storage pools do.
	DiskMiB, FreeDiskMiB int64
}

// SSH is how a remote host is reached over SSH: "user@host:port" and its
// host key, pinned, in authorized_keys form ("ssh-ed25519 AAAA…").
type SSH struct {
	Address string
	HostKey string
}

// Network is bureau's desktop network on a host: the bridge libvirt makes
// and the desktops' subnet (its first address is the host's).
type Network struct {
	Bridge string
	Subnet string
}

// AddRequest asks for a host to be added.
type AddRequest struct {
	Name, URI string
	Labels    map[string]string
	SSH       SSH
	Network   Network
}

// State is a host's connection state.
type State string

const (
	// StateConnecting: added, not checked yet (or bureau just started).
	StateConnecting State = "connecting"
	// StateUp: its libvirtd answered the last check.
	StateUp State = "up"
	// StateUnreachable: the last check or its keepalive failed; bureau
	// keeps reconnecting. Its desktops are never deleted or marked
	// crashed for that.
	StateUnreachable State = "unreachable"
)

// LocalName is the host bureau runs on, the first one.
const LocalName = "local"

var (
	// ErrNotFound: no host of that name.
	ErrNotFound = errors.New("no such host")
	// ErrExists: a host of that name or URI is there already.
	ErrExists = errors.New("host already added")
	// ErrNeedsPostgres: a second host on SQLite.
	ErrNeedsPostgres = errors.New("several hosts need PostgreSQL")
	// ErrUnreachable: a host being added did not answer.
	ErrUnreachable = errors.New("host unreachable")
	// ErrInUse: the host cannot go (the local one runs bureau's desktops).
	ErrInUse = errors.New("host in use")
)

// NotReadyError: a host answered but could not be made ready for desktops
// (SSH refused, a tool missing, its network clashing); Field names what
// the request should change, when one field is at fault.
type NotReadyError struct{ Field, Message string }

func (e *NotReadyError) Error() string { return e.Message }

// InvalidError names the field a request got wrong.
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

var (
	nameRe  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	labelRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._/-]{0,61}[a-zA-Z0-9])?$`)
)

// schemes are the libvirt transports a remote host may be reached by;
// qemu+tcp carries no authentication or encryption (tests, private links).
var schemes = map[string]bool{"qemu": true, "qemu+ssh": true, "qemu+tls": true, "qemu+tcp": true, "qemu+unix": true, "qemu+libssh2": true, "qemu+libssh": true}

// Validate checks a host's name, URI and labels.
func Validate(name, uri string, labels map[string]string) error {
	return ValidateRequest(AddRequest{Name: name, URI: uri, Labels: labels})
}

// ValidateRequest checks a request to add a host: its name, URI, labels and
// desktop network (its SSH target is checked by connecting).
func ValidateRequest(req AddRequest) error {
	name, uri, labels := req.Name, req.URI, req.Labels
	if !nameRe.MatchString(name) {
		return &InvalidError{"name", "1–32 lower-case letters, digits and inner dashes"}
	}
	u, err := url.Parse(uri)
	if err != nil || !schemes[u.Scheme] {
		return &InvalidError{"uri", fmt.Sprintf("%q is not a libvirt QEMU URI (qemu+ssh://user@host/system, qemu+tls://host/system, qemu+tcp://host:port/system)", uri)}
	}
	if _, ok := u.User.Password(); ok {
		return &InvalidError{"uri", "no password in the URI: it would be stored and shown (use SSH keys or TLS certificates)"}
	}
	if u.Path != "/system" {
		return &InvalidError{"uri", fmt.Sprintf("%q: bureau needs the host's system daemon (path /system)", uri)}
	}
	if err := ValidateLabels(labels); err != nil {
		return &InvalidError{"labels", err.Error()}
	}
	return req.Network.validate()
}

// ValidateLabels checks a host's labels, or those a desktop asks its host
// to carry: at most 32, keys of letters, digits, '.', '_', '/', '-',
// values on one line.
func ValidateLabels(labels map[string]string) error {
	if len(labels) > 32 {
		return errors.New("at most 32")
	}
	for k, v := range labels {
		if !labelRe.MatchString(k) {
			return fmt.Errorf("key %q: 1–63 letters, digits, '.', '_', '/', '-'", k)
		}
		if err := desktop.ValidateText("labels", v, 63, false); err != nil {
			return fmt.Errorf("value of %q: at most 63 characters on one line, plain text", k)
		}
	}
	return nil
}

var bridgeRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$`)

func (n Network) validate() error {
	if n.Bridge != "" && !bridgeRe.MatchString(n.Bridge) {
		return &InvalidError{"bridge", fmt.Sprintf("%q: a network device name (1–15 letters, digits, '_', '.', '-')", n.Bridge)}
	}
	if n.Subnet == "" {
		return nil
	}
	p, err := netip.ParsePrefix(n.Subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 28 {
		return &InvalidError{"subnet", fmt.Sprintf("%q: an IPv4 subnet between /8 and /28, e.g. 10.121.0.0/16", n.Subnet)}
	}
	if p.Masked() != p {
		return &InvalidError{"subnet", fmt.Sprintf("%q has host bits set; did you mean %s?", n.Subnet, p.Masked())}
	}
	return nil
}

// SSHAddressOf is the SSH address a qemu+ssh URI implies ("user@host:port",
// root and 22 by default); "" for other transports.
func SSHAddressOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "qemu+ssh" && u.Scheme != "qemu+libssh2" && u.Scheme != "qemu+libssh") || u.Hostname() == "" {
		return ""
	}
	user := "root"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	return user + "@" + net.JoinHostPort(u.Hostname(), port)
}
