package moves

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/domains"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
)

// managedSaveDir is where a privileged libvirtd's qemu driver keeps a
// domain's managed save image, <name>.save (its default save_dir; also
// host.DefaultSaveDir). The same path on every host (host2 in the e2e
// tests has its own /var/lib/libvirt in its mount namespace).
const managedSaveDir = "/var/lib/libvirt/qemu/save"

func managedSavePath(name string) string { return filepath.Join(managedSaveDir, name+".save") }

// coldSaveTimeout bounds making a save image managed on the destination
// (a restore and a save of the guest's RAM) when ctx has no deadline.
const coldSaveTimeout = 10 * time.Minute

// saveDirs counts, by host URI, the copies using the storage pool on that
// host's save dir, and says whether bureau started it (a transient pool,
// destroyed when the last of them ends) or found it (kept as it is).
var saveDirs = struct {
	sync.Mutex
	users map[string]int
	pool  map[string]string
	made  map[string]bool
}{users: map[string]int{}, pool: map[string]string{}, made: map[string]bool{}}

// saveDirEnd is host's side of a copy of a file in its save dir: this
// machine's file system, or on a remote host a dir pool on that folder,
// never built (which would chown and chmod libvirt's own folder). release
// ends its use.
func (m *Moves) saveDirEnd(ctx context.Context, host string) (e fileEnd, release func(), err error) {
	if host == "local" {
		return fileEnd{host: host}, func() {}, nil
	}
	p, err := m.hostPools(ctx, host)
	if err != nil {
		return fileEnd{}, nil, err
	}
	saveDirs.Lock()
	defer saveDirs.Unlock()
	if saveDirs.users[p.URI()] == 0 {
		type found struct {
			name string
			made bool
		}
		f, err := link.Call(ctx, func() (found, error) {
			name, made, err := p.OpenSaveDir(managedSaveDir)
			return found{name, made}, err
		})
		if err != nil {
			return fileEnd{}, nil, fmt.Errorf("host %s: storage pool for %s: %w", host, managedSaveDir, err)
		}
		saveDirs.pool[p.URI()], saveDirs.made[p.URI()] = f.name, f.made
	}
	saveDirs.users[p.URI()]++
	name := saveDirs.pool[p.URI()]
	release = func() {
		saveDirs.Lock()
		defer saveDirs.Unlock()
		if saveDirs.users[p.URI()]--; saveDirs.users[p.URI()] > 0 {
			return
		}
		made := saveDirs.made[p.URI()]
		delete(saveDirs.users, p.URI())
		delete(saveDirs.pool, p.URI())
		delete(saveDirs.made, p.URI())
		if !made {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), link.DefaultCallTimeout)
		defer cancel()
		_, err := link.Call(ctx, func() (bool, error) {
			return p.WithPool(name, func(pl *libvirt.StoragePool) (bool, error) { return true, pl.Destroy() })
		})
		if err != nil && !link.IsCode(err, libvirt.ERR_NO_STORAGE_POOL) {
			m.link.Log().Warn("transient storage pool on the save dir left running", "host", host, "pool", name, "err", err)
		}
	}
	return fileEnd{host: host, p: p, pool: name}, release, nil
}

// moveSaveImage copies domain name's managed save image from host from
// to host to, where the domain is defined (without one), and makes it the
// domain's managed save image there, its NIC's tap renamed inside.
func (m *Moves) moveSaveImage(ctx context.Context, dst *link.Conn, name, from, to, tap string, progress pools.CopyProgress) error {
	src, releaseSrc, err := m.saveDirEnd(ctx, from)
	if err != nil {
		return err
	}
	defer releaseSrc()
	dstEnd, releaseDst, err := m.saveDirEnd(ctx, to)
	if err != nil {
		return err
	}
	defer releaseDst()
	path := managedSavePath(name)
	head, err := src.head(ctx, path, binary.Size(domains.SaveHeader{}))
	if err != nil {
		return fmt.Errorf("host %s: %w", from, err)
	}
	running, err := domains.SavedRunning(head)
	if err != nil {
		return fmt.Errorf("host %s: %s: %w", from, path, err)
	}
	began := time.Now()
	var size int64
	sized := func(done, total int64) {
		size = total
		if progress != nil {
			progress(done, total)
		}
	}
	// root's, 0600, as libvirt makes them.
	if err := copyBetween(ctx, src, dstEnd, path, pools.Perms{UID: 0, GID: 0, Mode: 0o600}, sized); err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	copied := time.Since(began)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, coldSaveTimeout)
		defer cancel()
	}
	resaved, err := link.DomainOn(ctx, dst, name, func(d *libvirt.Domain) (bool, error) { return makeManagedSave(d, tap, running) })
	if err != nil {
		return err
	}
	m.link.Log().Info("managed save image moved", "domain", name, "from", from, "to", to, "bytes", size,
		"copy", copied, "restored_and_saved_again", resaved, "took", time.Since(began))
	return nil
}

// makeManagedSave makes the file at the domain's managed save path its
// managed save image: the definition inside renamed to tap (libvirt
// checks the new one is ABI-compatible with the saved guest).
//
// libvirt 9.0's qemu driver notices a managed save image only when it
// starts (qemuDomainManagedSaveLoad) or makes one itself: for a file put
// there, HasManagedSaveImage says false (neither defining the domain after
// the file is in place nor virDomainManagedSaveDefineXML changes that),
// though Create restores it (qemuDomainObjStart looks for the file). So
// the guest is restored from it, paused (its vCPUs never run), and saved
// again with ManagedSave, which libvirt records; the image keeps whether
// the guest was running. That reads and writes its RAM once more on the
// destination, starts QEMU there (the domain's files must be in place),
// and the domain's lifecycle events there tell of a start, a pause and a
// save.
func makeManagedSave(d *libvirt.Domain, tap string, running bool) (resaved bool, err error) {
	x, err := d.ManagedSaveGetXMLDesc(libvirt.DOMAIN_SAVE_IMAGE_XML_SECURE)
	if err != nil {
		return false, link.HostErr("the copied save image", err)
	}
	if x, err = domainWithTap(x, tap); err != nil {
		return false, fmt.Errorf("the copied save image: %w", err)
	}
	if err := d.ManagedSaveDefineXML(x, 0); err != nil {
		return false, link.HostErr("the copied save image", err)
	}
	if has, err := d.HasManagedSaveImage(0); err != nil || has {
		return false, err // a libvirt that notices the file
	}
	if err := domains.GiveFiles(d); err != nil {
		return false, err
	}
	if err := d.CreateWithFlags(libvirt.DOMAIN_START_PAUSED); err != nil {
		return false, link.HostErr("restore the copied save image, paused", err)
	}
	flags := libvirt.DOMAIN_SAVE_PAUSED
	if running {
		flags = libvirt.DOMAIN_SAVE_RUNNING
	}
	if err := d.ManagedSave(flags); err != nil {
		return false, link.HostErr("save it again as the managed save image", err)
	}
	if has, err := d.HasManagedSaveImage(0); err != nil {
		return false, link.HostErr("managed save image", err)
	} else if !has {
		return false, errors.New("libvirt has no managed save image after saving one")
	}
	return true, nil
}
