package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/network"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// HostLink is a kept connection to one host's libvirtd for the hosts
// registry: keepalive (every 5 s, 3 misses) and a close callback notice a
// lost host between checks.
type HostLink struct {
	uri  string
	conn *libvirt.Connect
	// imagesDir is bureau's images folder, whose filesystem Facts
	// measures ("" not to); local: it is on this machine (HostDialer).
	imagesDir string
	local     bool
	closed    atomic.Pointer[string] // why libvirt closed it
	busy      atomic.Bool            // a Facts call has not returned
	// inflight counts C calls on conn still running (one a caller gave up
	// on included): the connection is closed only once they returned.
	inflight  sync.WaitGroup
	closeOnce sync.Once
}

// do runs fn on the connection within ctx (see link.Call), counted in flight
// until fn itself returns.
func do[T any](ctx context.Context, l *HostLink, fn func() (T, error)) (T, error) {
	l.inflight.Add(1)
	return link.Call(ctx, func() (T, error) {
		defer l.inflight.Done()
		return fn()
	})
}

// DialHost connects to uri (qemu+ssh://…, qemu+tls://…, qemu+tcp://…).
// The process's libvirt event loop (Open) runs the keepalive. A host that
// accepts the connection but does not answer holds libvirt's C call past
// ctx: the caller gets its error at ctx's end, the connection is closed
// whenever the call returns, and no second dial of that URI starts
// meanwhile.
func DialHost(ctx context.Context, uri string) (hosts.Link, error) {
	l, err := dialHost(ctx, uri)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func dialHost(ctx context.Context, uri string) (*HostLink, error) {
	if _, busy := dialing.LoadOrStore(uri, true); busy {
		return nil, errors.New("no answer yet to the last attempt to connect")
	}
	type result struct {
		conn *libvirt.Connect
		err  error
	}
	ch := make(chan result, 1)
	begun := time.Now()
	go func() {
		conn, err := libvirt.NewConnect(uri)
		ch <- result{conn, err}
	}()
	var r result
	select {
	case r = <-ch:
		dialing.Delete(uri)
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
			dialing.Delete(uri)
		}()
		return nil, fmt.Errorf("no answer within %s", time.Since(begun).Round(time.Second))
	}
	if r.err != nil {
		return nil, link.Message(r.err)
	}
	conn := r.conn
	l := &HostLink{uri: uri, conn: conn}
	// Drivers that run in this process (test:///) have no connection to
	// keep alive.
	if err := conn.SetKeepAlive(5, 3); err != nil && !link.IsCode(err, libvirt.ERR_NO_SUPPORT) {
		conn.Close()
		return nil, fmt.Errorf("keepalive: %w", link.Message(err))
	}
	conn.RegisterCloseCallback(func(_ *libvirt.Connect, reason libvirt.ConnectCloseReason) {
		why := closeReasons[reason]
		if why == "" {
			why = fmt.Sprintf("closed (reason %d)", reason)
		}
		l.closed.Store(&why)
	})
	return l, nil
}

// dialing holds the URIs a DialHost is connecting to.
var dialing sync.Map

var closeReasons = map[libvirt.ConnectCloseReason]string{
	libvirt.CONNECT_CLOSE_REASON_ERROR:     "connection lost: socket error",
	libvirt.CONNECT_CLOSE_REASON_EOF:       "connection lost: the host closed it",
	libvirt.CONNECT_CLOSE_REASON_KEEPALIVE: "connection lost: no keepalive answer",
	libvirt.CONNECT_CLOSE_REASON_CLIENT:    "connection closed",
}

// Facts asks the host for its name, libvirt version, CPUs, memory and
// accelerator, and measures its disk when the link was dialled by a
// HostDialer (hostdisk.go); a disk that cannot be measured is 0, not an
// error.
func (l *HostLink) Facts(ctx context.Context) (hosts.Facts, error) {
	if why := l.closed.Load(); why != nil {
		return hosts.Facts{}, errors.New(*why)
	}
	// A host that stopped answering holds the last call until keepalive
	// gives up on it: no second call piles up behind it.
	if !l.busy.CompareAndSwap(false, true) {
		return hosts.Facts{}, errors.New("no answer yet to the last check")
	}
	begun := time.Now()
	f, err := do(ctx, l, func() (hosts.Facts, error) {
		defer l.busy.Store(false)
		var f hosts.Facts
		info, err := l.conn.GetNodeInfo()
		if err != nil {
			return f, link.Message(err)
		}
		free, err := l.freeMemoryMiB()
		if err != nil {
			return f, link.Message(err)
		}
		f.CPUs, f.MemoryMiB, f.FreeMemoryMiB = int(info.Cpus), int64(info.Memory>>10), free
		if f.Hostname, err = l.conn.GetHostname(); err != nil {
			return f, link.Message(err)
		}
		if v, err := l.conn.GetLibVersion(); err == nil {
			f.LibvirtVersion = fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
		}
		caps, err := l.conn.GetCapabilities()
		if err != nil {
			return f, link.Message(err)
		}
		if f.Accelerator, err = acceleratorOf(caps); err != nil {
			return f, err
		}
		f.DiskMiB, f.FreeDiskMiB = l.disk()
		return f, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", time.Since(begun).Round(time.Second))
	}
	return f, err
}

// acceleratorOf reads a host's capabilities: "kvm" when libvirt offers
// KVM guests and the host CPU has vmx or svm (nested hosts without them
// offer /dev/kvm but run guests unusably slowly), else "tcg".
func acceleratorOf(capsXML string) (string, error) {
	var caps libvirtxml.Caps
	if err := caps.Unmarshal(capsXML); err != nil {
		return "", fmt.Errorf("host capabilities: %w", err)
	}
	hw := false
	if cpu := caps.Host.CPU; cpu != nil {
		for _, f := range cpu.FeatureFlags {
			hw = hw || f.Name == "vmx" || f.Name == "svm"
		}
	}
	for _, g := range caps.Guests {
		for _, d := range g.Arch.Domains {
			if d.Type == "kvm" && hw {
				return "kvm", nil
			}
		}
	}
	return "tcg", nil
}

// Close drops the connection in the background: libvirt's close waits
// for a call still in flight to a host that does not answer.
func (l *HostLink) Close() error {
	l.closeOnce.Do(func() {
		go func() {
			// libvirt-go frees the connection's data on close: a call
			// still running on it, or a second close, would use freed
			// memory (seen as a SIGSEGV in UnregisterCloseCallback after
			// a frozen host came back).
			l.inflight.Wait()
			l.conn.UnregisterCloseCallback()
			l.conn.Close()
		}()
	})
	return nil
}

// freeMemoryMiB is the memory the host can still give: free, plus its
// buffers and page cache, which the kernel gives back on demand (the
// host's node memory statistics, in KiB); virNodeGetFreeMemory's figure
// (free pages only) where the driver keeps no statistics.
func (l *HostLink) freeMemoryMiB() (int64, error) {
	if st, err := l.conn.GetMemoryStats(libvirt.NODE_MEMORY_STATS_ALL_CELLS, 0); err == nil && st.FreeSet {
		if st.AvailableSet {
			return int64(st.Available >> 10), nil
		}
		return int64((st.Free + st.Buffers + st.Cached) >> 10), nil
	}
	free, err := l.conn.GetFreeMemory()
	return int64(free >> 20), err
}

// EnsureNetwork puts bureau's desktop network on the host as the local
// host's EnsureNetwork does, named "bureau".
func (l *HostLink) EnsureNetwork(ctx context.Context, bridge string, subnet netip.Prefix) error {
	c, err := network.NewNetworkConfig(network.DesktopNetwork, bridge, subnet)
	if err != nil {
		return err
	}
	want, err := network.NetworkXML(c)
	if err != nil {
		return err
	}
	_, err = do(ctx, l, func() (bool, error) { return network.Ensure(l.conn, c, want) })
	return err
}

// storage is the link's storage-pool code.
func (l *HostLink) storage() pools.Host { return pools.NewHost(l.conn, l.uri) }

// CopyImage makes remotePath on the host a copy of the local file
// localPath (a base image; its bytes as they are) through a dir storage
// pool whose target is remotePath's folder: an existing pool with that
// target (started and set to autostart if it is not), else a new one
// named "bureau-" and a hash of the folder, defined, built (which makes the
// folder, or sets an existing one to mode 0755, owner root) and started.
// The file gets mode 0644, owner root.
//
// A complete copy already there is kept (progress reports it done); any
// other file at remotePath (a copy cut short, another build) is replaced. progress, if
// not nil, is called at most every 250 ms while data moves and once at the
// end with done == total, from the goroutine moving the data: it must
// return quickly. Cancelling ctx aborts the stream and removes the
// partial volume; a copy that moves no data for a minute is ended too. A
// second copy to the same path on the same host while one runs is refused.
func (l *HostLink) CopyImage(ctx context.Context, localPath, remotePath string, progress pools.CopyProgress) error {
	if why := l.closed.Load(); why != nil {
		return errors.New(*why)
	}
	return l.storage().CopyImage(ctx, localPath, remotePath, progress, false, nil)
}

// ImageOnHost says whether remotePath on the host is a complete copy of
// the local file localPath: the same file size, the same virtual size
// (libvirt reads the qcow2 header on the host), the same first 4 KiB and
// the same sha256 (the sum file kept beside the copy; a copy without one
// is read back and hashed once, and given one if it matches).
// It finds or makes the folder's pool as CopyImage does, and refreshes it,
// so files put there outside libvirt count too.
func (l *HostLink) ImageOnHost(ctx context.Context, localPath, remotePath string) (bool, error) {
	if why := l.closed.Load(); why != nil {
		return false, errors.New(*why)
	}
	return l.storage().ImageOnHost(ctx, localPath, remotePath)
}
