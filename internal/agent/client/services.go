package client

import (
	"context"
	"io"

	"github.com/bureau/bureau/internal/agent/wire"
)

// ServiceSpec and ServiceStatus are a service bureau-agent supervises.
type (
	ServiceSpec   = wire.ServiceSpec
	ServiceStatus = wire.ServiceStatus
)

func (c *Client) svcCall(ctx context.Context, domain string, req wire.Request) ([]ServiceStatus, error) {
	st, resp, err := c.open(ctx, domain, req)
	if err != nil {
		return nil, err
	}
	st.Close()
	if resp.Services == nil {
		resp.Services = []ServiceStatus{}
	}
	return resp.Services, nil
}

// PutService creates or replaces a service and starts it; values are
// secrets it names, added to those the agent holds.
func (c *Client) PutService(ctx context.Context, domain string, spec ServiceSpec, values map[string]string) (ServiceStatus, error) {
	out, err := c.svcCall(ctx, domain, wire.Request{Op: wire.OpSvcPut, Service: &spec, Secrets: values})
	if err != nil || len(out) == 0 {
		return ServiceStatus{}, err
	}
	return out[0], nil
}

// Services lists the desktop's services by name.
func (c *Client) Services(ctx context.Context, domain string) ([]ServiceStatus, error) {
	return c.svcCall(ctx, domain, wire.Request{Op: wire.OpSvcList})
}

// ControlService starts, stops, restarts or deletes a service.
func (c *Client) ControlService(ctx context.Context, domain, name, action string) (ServiceStatus, error) {
	out, err := c.svcCall(ctx, domain, wire.Request{Op: wire.OpSvcCtl, Name: name, Action: action})
	if err != nil || len(out) == 0 {
		return ServiceStatus{}, err
	}
	return out[0], nil
}

// SetSecrets replaces the secret values the agent holds for services.
func (c *Client) SetSecrets(ctx context.Context, domain string, values map[string]string) ([]ServiceStatus, error) {
	if values == nil {
		values = map[string]string{}
	}
	return c.svcCall(ctx, domain, wire.Request{Op: wire.OpSecrets, Secrets: values})
}

// ServiceLog copies a service's log to w from offset (negative: that many
// bytes before the end); with follow, until ctx is done or the service is
// deleted.
func (c *Client) ServiceLog(ctx context.Context, domain, name string, offset int64, follow bool, w io.Writer) error {
	return c.copyLog(ctx, domain, wire.Request{Op: wire.OpSvcLog, Name: name, Offset: offset, Follow: follow}, w)
}
