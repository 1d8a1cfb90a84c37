package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bureau/bureau/internal/hosts"
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

// do runs fn on the connection within ctx (see call), counted in flight
// until fn itself returns.
func do[T any](ctx context.Context, l *HostLink, fn func() (T, error)) (T, error) {
	l.inflight.Add(1)
	return call(ctx, func() (T, error) {
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
		return nil, message(r.err)
	}
	conn := r.conn
	l := &HostLink{uri: uri, conn: conn}
	// Drivers that run in this process (test:///) have no connection to
	// keep alive.
	if err := conn.SetKeepAlive(5, 3); err != nil && !isCode(err, libvirt.ERR_NO_SUPPORT) {
		conn.Close()
		return nil, fmt.Errorf("keepalive: %w", message(err))
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
			return f, message(err)
		}
		free, err := l.freeMemoryMiB()
		if err != nil {
			return f, message(err)
		}
		f.CPUs, f.MemoryMiB, f.FreeMemoryMiB = int(info.Cpus), int64(info.Memory>>10), free
		if f.Hostname, err = l.conn.GetHostname(); err != nil {
			return f, message(err)
		}
		if v, err := l.conn.GetLibVersion(); err == nil {
			f.LibvirtVersion = fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
		}
		caps, err := l.conn.GetCapabilities()
		if err != nil {
			return f, message(err)
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

// message is libvirt's own text of err.
func message(err error) error {
	var lerr libvirt.Error
	if errors.As(err, &lerr) {
		return errors.New(lerr.Message)
	}
	return err
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
