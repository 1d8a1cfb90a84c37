package api

import (
	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/readiness"
	"github.com/gin-gonic/gin"
)

// forCaller is v as the caller receives it: domain values become the API's
// own types (package apiv1), lists are never null, and for anyone but an
// admin host paths are left out and hidden in free text.
func (s *core) forCaller(c *gin.Context, v any) any {
	p := presenter{hide: s.redact.text, paths: seesHostPaths(c), hosts: s.hostLost(c.Request.Context())}
	if s.readiness != nil {
		p.ready = s.readiness.Status
	}
	if s.people != nil {
		p.loop = s.people.Status
	}
	if p.paths {
		p.hide = func(s string) string { return s }
	}
	return p.value(v)
}

// presenter turns what handlers return into what the API shows.
type presenter struct {
	hide  func(string) string // free text with host paths hidden (or not)
	paths bool                // host path fields are shown
	// hosts says why a remote host is unreachable ("" when it answers).
	hosts func(host string) string
	// ready says how far a running desktop has come (nil: not known).
	ready func(id string) readiness.Status
	// loop says who holds a desktop's input and what is asked (nil: no
	// people in the loop).
	loop func(id string) loop.Status
}

// value knows every domain type a handler returns; others pass unchanged.
// A gin.H is walked, as handlers wrap lists in one.
func (p presenter) value(v any) any {
	switch v := v.(type) {
	case gin.H:
		out := make(gin.H, len(v))
		for k, x := range v {
			out[k] = p.value(x)
		}
		return out
	case *desktop.Desktop:
		return p.desktop(v)
	case []*desktop.Desktop:
		return each(v, p.desktop)
	case *manager.DeleteResult:
		return p.deleteResult(v)
	case *desktop.Event:
		return p.event(v)
	case []*desktop.Event:
		return each(v, p.event)
	case *desktop.Image:
		return p.image(v)
	case []*desktop.Image:
		return each(v, p.image)
	case *manager.Template:
		return p.template(v)
	case []*manager.Template:
		return each(v, p.template)
	case *desktop.VMStats:
		return p.stats(v)
	case *desktop.Snapshot:
		return apiv1.FromSnapshot(v)
	case []*desktop.Snapshot:
		return each(v, apiv1.FromSnapshot)
	case *desktop.Token:
		return apiv1.FromToken(v)
	case []*desktop.Token:
		return each(v, apiv1.FromToken)
	case *desktop.ConsoleToken:
		return apiv1.FromConsoleToken(v)
	case []*desktop.ConsoleToken:
		return each(v, apiv1.FromConsoleToken)
	case *desktop.Share:
		return apiv1.FromShare(v)
	case []*desktop.Share:
		return each(v, apiv1.FromShare)
	case *desktop.Secret:
		return apiv1.FromSecret(v)
	case []*desktop.Secret:
		return each(v, apiv1.FromSecret)
	case desktop.Quota:
		return apiv1.FromQuota(v)
	case *desktop.Quota:
		if v == nil {
			return nil
		}
		return apiv1.FromQuota(*v)
	case desktop.Usage:
		return apiv1.FromUsage(v)
	case *desktop.Backup:
		return p.backup(v)
	case []*desktop.Backup:
		return each(v, p.backup)
	case *desktop.BackupTarget:
		return apiv1.FromBackupTarget(v)
	case []*desktop.BackupTarget:
		return each(v, apiv1.FromBackupTarget)
	case *desktop.BackupCheck:
		return apiv1.FromBackupCheck(v)
	case *desktop.BackupSchedule:
		return apiv1.FromBackupSchedule(v)
	case *loop.Request:
		return apiv1.FromRequest(v)
	case []*loop.Request:
		return each(v, apiv1.FromRequest)
	}
	return v
}

// each converts a list; an empty (or nil) list is [] on the wire.
func each[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func (p presenter) desktop(d *desktop.Desktop) *apiv1.Desktop {
	out := apiv1.FromDesktop(d)
	if out == nil {
		return nil
	}
	if !p.paths {
		out.DataDiskPath = ""
	}
	if d.Remote() && d.DeletedAt == nil && p.hosts != nil {
		if why := p.hosts(d.Host); why != "" {
			out.State, out.LastError = "unreachable", why
		}
	}
	out.LastError = p.hide(out.LastError)
	p.readiness(d, out)
	if p.loop != nil && d.DeletedAt == nil {
		st := p.loop(d.ID)
		out.SetPeople(apiv1.FromControl(st.Control), st.Help > 0, st.Approvals)
	}
	return out
}

// readiness fills what a running desktop's readiness is; any other is
// not ready and says nothing more.
func (p presenter) readiness(d *desktop.Desktop, out *apiv1.Desktop) {
	if p.ready == nil || d.State != desktop.StateRunning || d.DeletedAt != nil || out.State != string(desktop.StateRunning) {
		return
	}
	st := p.ready(d.ID)
	if st.Up == "" { // running, not looked at yet
		st.Up, st.Waiting = readiness.UpBooting, guest.WaitAgent
	}
	out.SetReadiness(st.Ready, st.ReadyAt, st.Up, st.Waiting)
}

func (p presenter) deleteResult(r *manager.DeleteResult) *apiv1.DeleteResult {
	if r == nil {
		return nil
	}
	out := &apiv1.DeleteResult{Desktop: p.desktop(r.Desktop), DataDeleted: r.DataDeleted, DataDiskKept: r.DataDiskKept}
	if !p.paths {
		out.DataDiskKept = ""
	}
	return out
}

func (p presenter) event(e *desktop.Event) *apiv1.Event {
	out := apiv1.FromEvent(e)
	if out != nil {
		out.Message = p.hide(out.Message)
	}
	return out
}

func (p presenter) image(im *desktop.Image) *apiv1.Image {
	out := apiv1.FromImage(im)
	if out != nil && !p.paths {
		out.Path = ""
	}
	return out
}

// template hides host paths in a failed build's error.
func (p presenter) template(t *manager.Template) *apiv1.Template {
	if t == nil {
		return nil
	}
	return &apiv1.Template{Key: t.Key, Image: t.Image, VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB, State: t.State,
		Error: p.hide(t.Error), CreatedAt: t.CreatedAt, BuildTime: t.BuildTime, Spares: t.Spares}
}

func (p presenter) stats(st *desktop.VMStats) *apiv1.Stats {
	out := apiv1.FromStats(st)
	if out != nil && !p.paths {
		for i := range out.Disks {
			out.Disks[i].Path = ""
		}
	}
	return out
}

// backup hides host paths in a failed backup's error.
func (p presenter) backup(b *desktop.Backup) *apiv1.Backup {
	out := apiv1.FromBackup(b)
	if out != nil {
		out.Error = p.hide(out.Error)
	}
	return out
}
