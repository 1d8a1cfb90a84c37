package link

import (
	"errors"
	"syscall"
	"testing"

	"libvirt.org/go/libvirt"
)

func TestHostErrKeepsLibvirtsCodeAndFindsAFullDisk(t *testing.T) {
	full := HostErr("upload", libvirt.Error{Code: libvirt.ERR_SYSTEM_ERROR, Message: "Unable to write to '/x': No space left on device"})
	var lerr libvirt.Error
	if !errors.Is(full, syscall.ENOSPC) || !errors.As(full, &lerr) || lerr.Code != libvirt.ERR_SYSTEM_ERROR ||
		full.Error() != "upload: Unable to write to '/x': No space left on device (the host's disk is full)" {
		t.Errorf("%v", full)
	}
	other := HostErr("upload", libvirt.Error{Code: libvirt.ERR_NO_SUPPORT, Message: "not supported"})
	if errors.Is(other, syscall.ENOSPC) || other.Error() != "upload: not supported" {
		t.Errorf("%v", other)
	}
}

// Connecting is tried again only for what a restarting libvirtd says.
func TestRestarting(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{libvirt.Error{Code: libvirt.ERR_SYSTEM_ERROR, Message: "Failed to connect socket to '/var/run/libvirt/libvirt-sock': No such file or directory"}, true},
		{libvirt.Error{Code: libvirt.ERR_SYSTEM_ERROR, Message: "Failed to connect socket to '/var/run/libvirt/libvirt-sock': Connection refused"}, true},
		{libvirt.Error{Code: libvirt.ERR_SYSTEM_ERROR, Message: "Failed to connect socket to '/var/run/libvirt/libvirt-sock': Permission denied"}, false},
		{libvirt.Error{Code: libvirt.ERR_AUTH_FAILED, Message: "authentication failed"}, false},
		{errors.New("Connection refused"), false},
	} {
		if got := restarting(c.err); got != c.want {
			t.Errorf("restarting(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
