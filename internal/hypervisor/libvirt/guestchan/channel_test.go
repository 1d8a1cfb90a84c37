package guestchan

import (
	"errors"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/agent/wire"
)

// A running domain's XML names each channel's socket; the agent's is
// found by its target name, and a domain without one says how to get it.
func TestChannelPath(t *testing.T) {
	running := `<domain type="qemu"><name>bureau-x</name><devices>
<channel type="unix"><source mode="bind" path="/run/libvirt/qemu/channel/1-bureau-x/org.qemu.guest_agent.0"/><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
<channel type="unix"><source mode="bind" path="/run/libvirt/qemu/channel/1-bureau-x/org.bureau.agent.0"/><target type="virtio" name="org.bureau.agent.0"/></channel>
</devices></domain>`
	p, err := channelPath(running, wire.Channel)
	if err != nil || p != "/run/libvirt/qemu/channel/1-bureau-x/org.bureau.agent.0" {
		t.Fatalf("%q %v", p, err)
	}
	old := strings.Replace(running, `name="org.bureau.agent.0"`, `name="something.else"`, 1)
	if _, err := channelPath(old, wire.Channel); !errors.Is(err, errNoChannel) {
		t.Errorf("domain without the channel: %v", err)
	}
}
