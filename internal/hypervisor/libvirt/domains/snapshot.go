package domains

import (
	"context"
	"encoding/json"
	"fmt"
	"html"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/digitalocean/go-qemu/qmp"
	"libvirt.org/go/libvirt"
)

// SnapshotWithMemory takes an internal snapshot of a running VM with its RAM
// and every writable disk (QEMU savevm), kept inside the qcow2 files.
func (ds *Domains) SnapshotWithMemory(ctx context.Context, name, snap, description string) error {
	xml := fmt.Sprintf("<domainsnapshot><name>%s</name><description>%s</description></domainsnapshot>",
		html.EscapeString(snap), html.EscapeString(description))
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		s, err := d.CreateSnapshotXML(xml, libvirt.DOMAIN_SNAPSHOT_CREATE_ATOMIC)
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, s.Free()
	})
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", snap, err)
	}
	return nil
}

// RevertSnapshot returns the VM to a snapshot taken with SnapshotWithMemory:
// disks and RAM, running.
func (ds *Domains) RevertSnapshot(ctx context.Context, name, snap string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		s, err := d.SnapshotLookupByName(snap, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer s.Free()
		if err := GiveFiles(d); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, s.RevertToSnapshot(libvirt.DOMAIN_SNAPSHOT_REVERT_RUNNING)
	})
	if err != nil {
		return fmt.Errorf("revert to snapshot %s: %w", snap, err)
	}
	return nil
}

// DeleteSnapshot removes a snapshot taken with SnapshotWithMemory; one that
// no longer exists is not an error.
func (ds *Domains) DeleteSnapshot(ctx context.Context, name, snap string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
		s, err := d.SnapshotLookupByName(snap, 0)
		if link.IsCode(err, libvirt.ERR_NO_DOMAIN_SNAPSHOT) {
			return struct{}{}, nil
		}
		if err != nil {
			return struct{}{}, err
		}
		defer s.Free()
		return struct{}{}, s.Delete(0)
	})
	if err != nil {
		return fmt.Errorf("delete snapshot %s: %w", snap, err)
	}
	return nil
}

// LiveDiskSnapshot takes an internal, disk-only snapshot of the named disk
// files of a running or paused VM (QMP blockdev-snapshot-internal-sync).
// The guest's filesystems are frozen through the guest agent around it when
// the agent answers; quiesced reports whether they were.
func (ds *Domains) LiveDiskSnapshot(ctx context.Context, name, snap string, files []string) (quiesced bool, err error) {
	nodes, err := ds.blockNodes(ctx, name, files)
	if err != nil {
		return false, err
	}
	if _, ferr := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.FSFreeze(nil, 0) }); ferr == nil {
		quiesced = true
		defer link.WithDomain(context.WithoutCancel(ctx), ds.link, name, func(d *libvirt.Domain) (struct{}, error) { return struct{}{}, d.FSThaw(nil, 0) })
	}
	for i, node := range nodes {
		if err := ds.qmp(ctx, name, "blockdev-snapshot-internal-sync", map[string]string{"device": node, "name": snap}); err != nil {
			for _, done := range nodes[:i] {
				ds.qmp(context.WithoutCancel(ctx), name, "blockdev-snapshot-delete-internal-sync", map[string]string{"device": done, "name": snap})
			}
			return quiesced, fmt.Errorf("snapshot %s of %s: %w", snap, files[i], err)
		}
	}
	return quiesced, nil
}

// DeleteLiveDiskSnapshot removes a disk-only internal snapshot from the disk
// files of a running or paused VM.
func (ds *Domains) DeleteLiveDiskSnapshot(ctx context.Context, name, snap string, files []string) error {
	nodes, err := ds.blockNodes(ctx, name, files)
	if err != nil {
		return err
	}
	for i, node := range nodes {
		if err := ds.qmp(ctx, name, "blockdev-snapshot-delete-internal-sync", map[string]string{"device": node, "name": snap}); err != nil {
			return fmt.Errorf("delete snapshot %s of %s: %w", snap, files[i], err)
		}
	}
	return nil
}

// blockNodes maps disk files to the node names QEMU knows them by.
func (ds *Domains) blockNodes(ctx context.Context, name string, files []string) ([]string, error) {
	out, err := ds.qmpOut(ctx, name, "query-block", nil)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Return []struct {
			Inserted *struct {
				NodeName string `json:"node-name"`
				File     string `json:"file"`
			} `json:"inserted"`
		} `json:"return"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("query-block: %w", err)
	}
	byFile := map[string]string{}
	for _, b := range resp.Return {
		if b.Inserted != nil {
			byFile[b.Inserted.File] = b.Inserted.NodeName
		}
	}
	nodes := make([]string, len(files))
	for i, f := range files {
		if nodes[i] = byFile[f]; nodes[i] == "" {
			return nil, fmt.Errorf("disk %s is not attached to %s", f, name)
		}
	}
	return nodes, nil
}

func (ds *Domains) qmp(ctx context.Context, name, cmd string, args any) error {
	_, err := ds.qmpOut(ctx, name, cmd, args)
	return err
}

func (ds *Domains) qmpOut(ctx context.Context, name, cmd string, args any) ([]byte, error) {
	raw, err := json.Marshal(qmp.Command{Execute: cmd, Args: args})
	if err != nil {
		return nil, err
	}
	return ds.link.Monitor(ctx, name).Run(raw)
}
