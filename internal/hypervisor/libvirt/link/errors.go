package link

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// IsCode says whether err is libvirt's error code.
func IsCode(err error, code libvirt.ErrorNumber) bool {
	var lerr libvirt.Error
	return errors.As(err, &lerr) && lerr.Code == code
}

// ErrNoDomain means the domain does not exist.
var ErrNoDomain = errors.New("no such domain")

// Translate is the error a call about domain name returns for libvirt's
// err: the desktop package's errors where one fits.
func Translate(name string, err error) error {
	if err == nil {
		return nil
	}
	var lerr libvirt.Error
	if errors.As(err, &lerr) {
		switch lerr.Code {
		case libvirt.ERR_NO_DOMAIN:
			return fmt.Errorf("domain %s: %w", name, ErrNoDomain)
		case libvirt.ERR_AGENT_UNRESPONSIVE, libvirt.ERR_AGENT_UNSYNCED:
			return fmt.Errorf("domain %s: guest agent not answering: %w", name, desktop.ErrUnavailable)
		case libvirt.ERR_OPERATION_INVALID:
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrUnavailable)
		case libvirt.ERR_NO_DOMAIN_SNAPSHOT:
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrNoSnapshot)
		}
		if connectionLost(lerr) {
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrHostLost)
		}
		if strings.Contains(lerr.Message, NoSpace) {
			// libvirt reports the errno of a failed write only as its text.
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, syscall.ENOSPC)
		}
		return fmt.Errorf("domain %s: %s", name, lerr.Message)
	}
	return fmt.Errorf("domain %s: %w", name, err)
}

// connectionLost says whether a call failed because its connection to
// libvirtd broke (libvirtd restarted mid-call: "End of file while reading
// data", "client socket is closed"), not because of what it asked.
func connectionLost(lerr libvirt.Error) bool {
	switch lerr.Code {
	case libvirt.ERR_NO_CONNECT, libvirt.ERR_INVALID_CONN, libvirt.ERR_RPC:
		return true
	}
	return lerr.Domain == libvirt.FROM_RPC ||
		strings.Contains(lerr.Message, "End of file while reading data") || strings.Contains(lerr.Message, "client socket is closed")
}

// NoSpace is strerror(ENOSPC) as libvirt and QEMU print it (glibc's text;
// Go's syscall.ENOSPC.Error() is lower-case).
const NoSpace = "No space left on device"

// IsBureauDomain says whether a domain is one of bureau's ("bureau-…").
func IsBureauDomain(name string) bool { return strings.HasPrefix(name, "bureau-") }

// IsLocalURI says whether a libvirt URI names a libvirtd on this machine.
func IsLocalURI(uri string) bool {
	return strings.HasPrefix(uri, "qemu:///") || strings.HasPrefix(uri, "qemu+unix:///") || strings.HasPrefix(uri, "test:///")
}

// Message is libvirt's own text of err.
func Message(err error) error {
	var lerr libvirt.Error
	if errors.As(err, &lerr) {
		return errors.New(lerr.Message)
	}
	return err
}

// HostErr is what a libvirt call on the host said, after what was being
// done. errors.As still finds the libvirt.Error, and errors.Is finds
// syscall.ENOSPC when the host's disk is full.
func HostErr(what string, err error) error {
	var lerr libvirt.Error
	if !errors.As(err, &lerr) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &libvirtError{what: what, lerr: lerr}
}

type libvirtError struct {
	what string
	lerr libvirt.Error
}

func (e *libvirtError) Error() string {
	msg := e.what + ": " + e.lerr.Message
	if strings.Contains(e.lerr.Message, NoSpace) {
		msg += " (the host's disk is full)"
	}
	return msg
}

func (e *libvirtError) Unwrap() []error {
	if strings.Contains(e.lerr.Message, NoSpace) {
		return []error{e.lerr, syscall.ENOSPC}
	}
	return []error{e.lerr}
}
