package manager

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Firewall keeps the host's rules in step with desktops' network policies.
type Firewall interface {
	Load(ctx context.Context, policies map[string]desktop.NetworkPolicy) error
	Set(ctx context.Context, id string, p desktop.NetworkPolicy) error
	Forget(ctx context.Context, id string) error
}

// Desktops' QEMU users are drawn from [vmUIDBase, 2·vmUIDBase): far above
// any real or sub-uid range, below 2^31 so no tool reads them as negative.
// The store's unique index keeps two desktops from sharing one.
const vmUIDBase = 1 << 30

// templateUID runs template builds' VMs, which are not desktops.
const templateUID = vmUIDBase - 1

func newVMUID() int {
	var b [4]byte
	rand.Read(b[:])
	return vmUIDBase + int(binary.BigEndian.Uint32(b[:])%vmUIDBase)
}

// SetNetworkPolicy changes what a desktop may reach; a running desktop
// follows it at once.
func (m *Manager) SetNetworkPolicy(ctx context.Context, id string, p desktop.NetworkPolicy, actor string) (*desktop.Desktop, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d, err := m.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.cfg.Firewall != nil {
		if err := m.cfg.Firewall.Set(ctx, id, p); err != nil {
			return nil, err
		}
	}
	d.Network = p
	if d, err = m.putSettings(ctx, d); err != nil {
		return nil, err
	}
	m.event(ctx, id, "network_policy_set", actor, "network policy set: %s", policyText(p))
	return d, nil
}

func policyText(p desktop.NetworkPolicy) string {
	if len(p.AllowOut) == 0 && len(p.DenyOut) == 0 {
		return "default (the internet, nothing private)"
	}
	var parts []string
	if len(p.AllowOut) > 0 {
		parts = append(parts, "allow "+strings.Join(p.AllowOut, ", "))
	}
	if len(p.DenyOut) > 0 {
		parts = append(parts, "deny "+strings.Join(p.DenyOut, ", "))
	}
	return strings.Join(parts, "; ")
}

// loadNetwork gives desktops made before bureau isolated them their own
// QEMU user and loads every desktop's network rules (at start-up).
func (m *Manager) loadNetwork(ctx context.Context) error {
	ds, err := m.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return err
	}
	policies := map[string]desktop.NetworkPolicy{}
	for _, d := range ds {
		policies[d.ID] = d.Network
		if d.VMUID != 0 {
			continue
		}
		if err := m.giveVMUID(ctx, d.ID); err != nil {
			return err
		}
	}
	if m.cfg.Firewall == nil {
		return nil
	}
	return m.cfg.Firewall.Load(ctx, policies)
}

func (m *Manager) giveVMUID(ctx context.Context, id string) error {
	var err error
	for range 5 {
		if err = m.store.SetVMUID(ctx, id, newVMUID()); err == nil {
			return nil
		}
	}
	return fmt.Errorf("give desktop %s a QEMU user: %w", id, err)
}

// disown gives a deleted desktop's kept files back to root, so no QEMU
// can open them.
func disown(dir string) {
	filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(path, 0, 0)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil // best effort: the folder is 0700 either way
		}
		return nil
	})
}
