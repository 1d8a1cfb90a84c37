package domains

import (
	"crypto/rand"
	"fmt"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/display"
	"libvirt.org/go/libvirtxml"
)

// DomainXML renders a desktop's libvirt domain definition.
func DomainXML(c desktop.VMConfig) (string, error) {
	dom := libvirtxml.Domain{
		Type:   "qemu",
		Name:   c.Name,
		UUID:   c.UUID,
		Memory: &libvirtxml.DomainMemory{Value: uint(c.MemoryMiB), Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Placement: "static", Value: uint(c.VCPUs)},
		OS: &libvirtxml.DomainOS{
			Type:        &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
			BootDevices: []libvirtxml.DomainBootDevice{{Dev: "hd"}},
		},
		Features: &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}, APIC: &libvirtxml.DomainFeatureAPIC{}},
		CPU:      &libvirtxml.DomainCPU{Mode: "maximum", Check: "none", Migratable: "on"},
		Clock:    &libvirtxml.DomainClock{Offset: "utc"},

		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			Emulator: "/usr/bin/qemu-system-x86_64",
			Disks: []libvirtxml.DomainDisk{
				qcow2Disk(c.OSDisk, "vda", ""),
				qcow2Disk(c.DataDisk, "vdb", "agentdata"),
				{
					Device:   "cdrom",
					Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
					Source:   &libvirtxml.DomainDiskSource{File: ownFile(c.SeedISO)},
					Target:   &libvirtxml.DomainDiskTarget{Dev: "hdc", Bus: "ide"},
					ReadOnly: &libvirtxml.DomainDiskReadOnly{},
				},
			},
			Interfaces: []libvirtxml.DomainInterface{nic(c)},
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: c.SerialLog, Append: "on"}},
				Target: &libvirtxml.DomainSerialTarget{Port: new(uint)},
			}},
			// QEMU's guest agent, and bureau's own (bureau-agent); libvirt
			// names each channel's unix socket.
			Channels: []libvirtxml.DomainChannel{{
				Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{}},
				Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: guestAgentChannel}},
			}, {
				Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{}},
				Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: wire.Channel}},
			}},
			// Virtio input devices, whose queues bureau reads (see
			// internal/computer/keyboard.go); QEMU routes to PS/2 until
			// the guest's driver is up. No USB: the tablet was the only
			// USB device, and it lost every move on a starved guest.
			Controllers: []libvirtxml.DomainController{{Type: "usb", Model: "none"}},
			Inputs: []libvirtxml.DomainInput{{Type: "keyboard", Bus: "ps2"},
				{Type: "tablet", Bus: "virtio", Alias: &libvirtxml.DomainAlias{Name: display.VirtioTabletAlias}},
				{Type: "keyboard", Bus: "virtio", Alias: &libvirtxml.DomainAlias{Name: display.VirtioKeyboardAlias}}},
			Graphics: []libvirtxml.DomainGraphic{{VNC: &libvirtxml.DomainGraphicVNC{
				Listeners: []libvirtxml.DomainGraphicListener{{Socket: &libvirtxml.DomainGraphicListenerSocket{Socket: c.VNCSocket}}},
			}}},
			Videos: []libvirtxml.DomainVideo{{Model: libvirtxml.DomainVideoModel{Type: "virtio", Heads: 1, Primary: "yes"}}},
			// Balloon statistics every 10 s feed /stats and /metrics.
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "virtio", FreePageReporting: "on", Stats: &libvirtxml.DomainMemBalloonStats{Period: 10}},
			RNGs: []libvirtxml.DomainRNG{{
				Model:   "virtio",
				Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
			}},
		},
		// QEMU runs as the desktop's own unprivileged user. libvirt labels
		// its own per-VM state for that user; the desktop's files are given
		// to it by bureau (disks say relabel='no', so libvirt never chowns
		// the shared base image under an overlay).
		SecLabel: []libvirtxml.DomainSecLabel{dacSecLabel(c)},
		// A generation id: libvirt makes a new one at define and on a
		// snapshot revert, so a guest reseeds its RNG when it is cloned,
		// warm-created from a template or rolled back.
		GenID: &libvirtxml.DomainGenID{},
	}
	if c.Accelerator != desktop.AccelKVM && c.TCGCacheMiB > 0 {
		dom.Features.TCG = &libvirtxml.DomainFeatureTCG{TBCache: &libvirtxml.DomainFeatureTCGTBCache{Unit: "MiB", Size: uint(c.TCGCacheMiB)}}
	}
	if c.Accelerator == desktop.AccelKVM {
		dom.Type = "kvm"
		// arch-capabilities off: some hosts fail with "failed to set MSR 0x10a".
		dom.CPU = &libvirtxml.DomainCPU{Mode: "host-passthrough", Check: "none", Migratable: "on",
			Features: []libvirtxml.DomainCPUFeature{{Policy: "disable", Name: "arch-capabilities"}}}
	}
	out, err := dom.Marshal()
	if err != nil {
		return "", fmt.Errorf("domain xml: %w", err)
	}
	return out, nil
}

const guestAgentChannel = "org.qemu.guest_agent.0"

func qcow2Disk(path, dev, serial string) libvirtxml.DomainDisk {
	return libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2", Discard: "unmap"},
		Source: &libvirtxml.DomainDiskSource{File: ownFile(path)},
		Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "virtio"},
		Serial: serial,
	}
}

// ownFile is a file of the desktop's own, which bureau gives to the
// desktop's user: libvirt must not relabel it (nor, through it, the base
// image it is an overlay of).
func ownFile(path string) *libvirtxml.DomainDiskSourceFile {
	return &libvirtxml.DomainDiskSourceFile{File: path,
		SecLabel: []libvirtxml.DomainDeviceSecLabel{{Model: "dac", Relabel: "no"}}}
}

// nic joins the desktops' network through a tap named for the desktop, so
// the firewall's rules for it hold from the first packet.
func nic(c desktop.VMConfig) libvirtxml.DomainInterface {
	var mac *libvirtxml.DomainInterfaceMAC
	if c.MAC != "" {
		mac = &libvirtxml.DomainInterfaceMAC{Address: c.MAC}
	}
	return libvirtxml.DomainInterface{
		MAC:    mac,
		Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: c.Network}},
		Target: &libvirtxml.DomainInterfaceTarget{Dev: c.Tap},
		Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
	}
}

func dacSecLabel(c desktop.VMConfig) libvirtxml.DomainSecLabel {
	return libvirtxml.DomainSecLabel{Type: "static", Model: "dac", Relabel: "yes", Label: fmt.Sprintf("+%d:+%d", c.UID, c.GID)}
}

// newGenID is a random generation id in libvirt's UUID form.
func newGenID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
