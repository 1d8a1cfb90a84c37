package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/placement"
	"github.com/gin-gonic/gin"
)

// Hosts are the libvirt hosts desktops run on (admins only).
type Hosts interface {
	List(ctx context.Context) ([]hosts.Host, error)
	Get(ctx context.Context, name string) (*hosts.Host, error)
	Add(ctx context.Context, req hosts.AddRequest) (*hosts.Host, error)
	Remove(ctx context.Context, name string) error
	// SSHPublicKey is the key bureau signs in to remote hosts with (one
	// line of authorized_keys).
	SSHPublicKey() string
}

// HostLoads says what bureau's desktops take on each host.
type HostLoads interface {
	HostLoads(ctx context.Context) (map[string]placement.Load, error)
}

// hostHandlers manage the hosts desktops run on, their drains, and moves
// of desktops between them (admins only).
type hostHandlers struct {
	*core                 // its hosts are the hosts listed
	hostLoads  HostLoads  // nil: loads not shown
	drains     Drains     // nil: hosts are not drained
	migrations Migrations // nil: desktops do not move
}

// withLoad is h on the wire with what its desktops take (loads nil: not
// shown) and its drain.
func (s *hostHandlers) withLoad(h *hosts.Host, loads map[string]placement.Load) apiv1.Host {
	out := apiv1.FromHost(h)
	l := loads[h.Name]
	out.Desktops, out.CommittedMemoryMiB = l.Desktops, l.CommittedMiB
	out.Drain = s.drainOf(h.Name)
	return out
}

// loads reads the hosts' loads, when the server has them.
func (s *hostHandlers) loads(ctx context.Context) (map[string]placement.Load, error) {
	if s.hostLoads == nil {
		return nil, nil
	}
	return s.hostLoads.HostLoads(ctx)
}

type addHostRequest struct {
	Name       string            `json:"name"`
	URI        string            `json:"uri"`
	Labels     map[string]string `json:"labels"`
	SSHAddress string            `json:"ssh_address"`
	SSHHostKey string            `json:"ssh_host_key"`
	Bridge     string            `json:"bridge"`
	Subnet     string            `json:"subnet"`
}

func (s *hostHandlers) listHosts(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	hs, err := s.hosts.List(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	loads, err := s.loads(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	out := make([]apiv1.Host, 0, len(hs))
	for i := range hs {
		out = append(out, s.withLoad(&hs[i], loads))
	}
	return reply{http.StatusOK, gin.H{"hosts": out, "ssh_public_key": s.hosts.SSHPublicKey()}}, nil
}

func (s *hostHandlers) getHost(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	return s.hostReply(c, http.StatusOK)
}

// hostReply is the host the request names, with its load and drain.
func (s *hostHandlers) hostReply(c *gin.Context, status int) (reply, error) {
	h, err := s.hosts.Get(c.Request.Context(), c.Param("name"))
	if err != nil {
		return reply{}, err
	}
	loads, err := s.loads(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	return reply{status, s.withLoad(h, loads)}, nil
}

// addHost records a host once its libvirtd answered and bureau made it
// ready for desktops (admins only).
func (s *hostHandlers) addHost(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	var req addHostRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	h, err := s.hosts.Add(c.Request.Context(), hosts.AddRequest{Name: req.Name, URI: req.URI, Labels: req.Labels,
		SSH: hosts.SSH{Address: req.SSHAddress, HostKey: req.SSHHostKey}, Network: hosts.Network{Bridge: req.Bridge, Subnet: req.Subnet}})
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, apiv1.FromHost(h)}, nil
}

func (s *hostHandlers) removeHost(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if err := s.hosts.Remove(c.Request.Context(), c.Param("name")); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
