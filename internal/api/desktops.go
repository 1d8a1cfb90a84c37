package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Lifecycle creates, lists, powers and deletes desktops.
type Lifecycle interface {
	Create(ctx context.Context, req manager.CreateRequest) (*desktop.Desktop, error)
	Get(ctx context.Context, id string) (*desktop.Desktop, error)
	List(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	Start(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Stop(ctx context.Context, id, actor string, opts manager.StopOptions) (*desktop.Desktop, error)
	Reboot(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Delete(ctx context.Context, id, actor string, deleteData bool) (*manager.DeleteResult, error)
	Events(ctx context.Context, id string, limit int) ([]*desktop.Event, error)
	// Wake resumes a paused or hibernated desktop and waits until it runs.
	Wake(ctx context.Context, id, actor string) (*desktop.Desktop, error)
}

// desktopHandlers create, list, power, change and delete desktops.
type desktopHandlers struct {
	*core
	persistence Persistence
	settings    Settings
	// computer forgets a screen's keyboard map when its layout changes.
	computer Computer
	// What a deleted desktop leaves: its kept recordings stay, its
	// secrets and share links go.
	keptRecordings KeptRecordings
	secrets        Secrets
	urls           URLs
	ownerOpenable  []netip.Prefix
}

type createDesktopRequest struct {
	Name        string   `json:"name"`
	Image       string   `json:"image"`
	VCPUs       *int     `json:"vcpus"`
	MemoryMiB   *int     `json:"memory_mib"`
	DataDiskGiB *int     `json:"data_disk_gib"`
	SSHKeys     []string `json:"ssh_authorized_keys"`
	IdleTimeout *int     `json:"idle_timeout_seconds"`
	NapAfter    *int     `json:"nap_after_seconds"`
	SleepAfter  *int     `json:"sleep_after_seconds"`
	// From clones another desktop's snapshot.
	From *cloneFrom `json:"from"`
	// Cold boots even when a warm template of this image and size is ready.
	Cold bool `json:"cold"`
	// Network is what the desktop may reach outside (default: the
	// internet, nothing private).
	Network *apiv1.NetworkPolicy `json:"network"`
	// KeyboardLayout is the guest's XKB layout (default us).
	KeyboardLayout string `json:"keyboard_layout"`
	// Host runs it on one of bureau's hosts (admins; default: bureau's own).
	Host string `json:"host"`
	// Placement asks for a host carrying these labels (placement on).
	Placement *apiv1.PlacementRequest `json:"placement"`
}

// cloneFrom is a create request's "from": the snapshot of another desktop
// the new one starts as.
type cloneFrom struct {
	DesktopID string `json:"desktop"`
	Snapshot  string `json:"snapshot"`
}

// Defaults for sizes a create request leaves out: the free tier.
const (
	defaultVCPUs       = 2
	defaultMemoryMiB   = 4096
	defaultDataDiskGiB = 20
)

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func (s *desktopHandlers) createDesktop(c *gin.Context) (reply, error) {
	var req createDesktopRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if len(req.SSHKeys) > 32 {
		return reply{}, &desktop.ValidationError{Field: "ssh_authorized_keys", Message: "at most 32 keys"}
	}
	dataDisk := orDefault(req.DataDiskGiB, defaultDataDiskGiB)
	var from *manager.CloneSource
	if req.From != nil {
		if err := s.canClone(c, req.From); err != nil {
			return reply{}, err
		}
		from = &manager.CloneSource{DesktopID: req.From.DesktopID, Snapshot: req.From.Snapshot}
		if req.DataDiskGiB == nil {
			dataDisk = 0 // the source's size
		}
	}
	if req.Host != "" && !isAdmin(c) {
		return reply{}, &desktop.ValidationError{Field: "host", Message: "only an admin chooses the host a desktop runs on"}
	}
	var labels map[string]string
	if req.Placement != nil {
		if err := hosts.ValidateLabels(req.Placement.Labels); err != nil {
			return reply{}, &desktop.ValidationError{Field: "placement.labels", Message: err.Error()}
		}
		labels = req.Placement.Labels
	}
	var policy desktop.NetworkPolicy
	if req.Network != nil {
		policy = req.Network.ToNetworkPolicy()
		if err := s.mayOpen(c, policy, nil); err != nil {
			return reply{}, err
		}
	}
	d, err := s.lifecycle.Create(c.Request.Context(), manager.CreateRequest{From: from, Unlimited: isAdmin(c), Cold: req.Cold, Network: policy, KeyboardLayout: req.KeyboardLayout, Host: req.Host, PlaceLabels: labels,
		Owner: caller(c).Owner, Name: req.Name, SSHKeys: req.SSHKeys, Actor: actor(c), IdleTimeout: req.IdleTimeout,
		NapAfter: req.NapAfter, SleepAfter: req.SleepAfter,
		Spec: desktop.Spec{Image: req.Image, VCPUs: orDefault(req.VCPUs, defaultVCPUs),
			MemoryMiB: orDefault(req.MemoryMiB, defaultMemoryMiB), DataDiskGiB: dataDisk},
	})
	if err != nil {
		return reply{}, err
	}
	c.Header("Location", "/api/v1/desktops/"+d.ID)
	created(c, "desktop", d.ID)
	return reply{http.StatusAccepted, d}, nil
}

func (s *desktopHandlers) listDesktops(c *gin.Context) (reply, error) {
	ds, err := s.lifecycle.List(c.Request.Context(), desktop.Filter{Owner: ownerFilter(c)})
	if err != nil {
		return reply{}, err
	}
	if ds == nil {
		ds = []*desktop.Desktop{}
	}
	return reply{http.StatusOK, gin.H{"desktops": ds}}, nil
}

func (s *desktopHandlers) getDesktop(c *gin.Context) (reply, error) {
	switch c.Query("wait") {
	case "":
	case "ready":
		return s.waitReady(c)
	default:
		return reply{}, &desktop.ValidationError{Field: "wait", Message: `the one thing to wait for is "ready"`}
	}
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, d}, nil
}

func (s *desktopHandlers) startDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.lifecycle.Start(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *desktopHandlers) stopDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var opts manager.StopOptions
	var err error
	if opts.Force, err = boolQuery(c, "force"); err != nil {
		return reply{}, err
	}
	if t := c.Query("timeout"); t != "" {
		secs, err := strconv.Atoi(t)
		if err != nil || secs < 1 || secs > 3600 {
			return reply{}, &desktop.ValidationError{Field: "timeout", Message: "must be whole seconds between 1 and 3600"}
		}
		opts.Timeout = time.Duration(secs) * time.Second
	}
	d, err := s.lifecycle.Stop(c.Request.Context(), c.Param("id"), actor(c), opts)
	return reply{http.StatusAccepted, d}, err
}

func (s *desktopHandlers) rebootDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.lifecycle.Reboot(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *desktopHandlers) desktopEvents(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	limit := 100
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return reply{}, &desktop.ValidationError{Field: "limit", Message: "must be between 1 and 1000"}
		}
		limit = n
	}
	evs, err := s.lifecycle.Events(c.Request.Context(), c.Param("id"), limit)
	if err != nil {
		return reply{}, err
	}
	if evs == nil {
		evs = []*desktop.Event{}
	}
	return reply{http.StatusOK, gin.H{"events": evs}}, nil
}

// boolQuery reads an optional true/false query parameter (absent: false).
func boolQuery(c *gin.Context, name string) (bool, error) {
	v := c.Query(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &desktop.ValidationError{Field: name, Message: "must be true or false"}
	}
	return b, nil
}

// canClone checks that the caller may see the desktop a clone copies from;
// one it may not see does not exist for it.
func (s *desktopHandlers) canClone(c *gin.Context, from *cloneFrom) error {
	if from.DesktopID == "" || from.Snapshot == "" {
		return &desktop.ValidationError{Field: "from", Message: `give {"desktop": id, "snapshot": name}`}
	}
	src, err := s.lifecycle.Get(c.Request.Context(), from.DesktopID)
	if err == nil && (src.DeletedAt != nil || !isAdmin(c) && src.Owner != caller(c).Owner) {
		err = desktop.ErrNotFound
	}
	if errors.Is(err, desktop.ErrNotFound) {
		return &desktop.ValidationError{Field: "from.desktop", Message: fmt.Sprintf("no desktop %q", from.DesktopID)}
	}
	return err
}
