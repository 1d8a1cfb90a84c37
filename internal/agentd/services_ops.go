package agentd

import (
	"context"
	"net"
	"os"

	"github.com/bureau/bureau/internal/agentwire"
)

// services answers svc.put, svc.list, svc.ctl and secrets.
func (s *Server) services(st net.Conn, req agentwire.Request) {
	t := s.svcs
	var (
		one agentwire.ServiceStatus
		err error
	)
	switch req.Op {
	case agentwire.OpSvcList:
		agentwire.WriteHeader(st, agentwire.Response{Services: t.list()})
		return
	case agentwire.OpSecrets:
		t.setSecrets(req.Secrets)
		agentwire.WriteHeader(st, agentwire.Response{Services: t.list()})
		return
	case agentwire.OpSvcPut:
		if req.Service == nil {
			refuse(st, agentwire.CodeInvalid, "no service")
			return
		}
		one, err = t.put(*req.Service, req.Secrets)
		if err != nil {
			refuse(st, agentwire.CodeInvalid, err.Error())
			return
		}
	case agentwire.OpSvcCtl:
		one, err = t.control(req.Name, req.Action)
	}
	if err != nil {
		if os.IsNotExist(err) {
			refuse(st, agentwire.CodeNotFound, "no service "+req.Name)
			return
		}
		refuse(st, agentwire.CodeInvalid, err.Error())
		return
	}
	agentwire.WriteHeader(st, agentwire.Response{Services: []agentwire.ServiceStatus{one}})
}

// serviceLog streams a service's log; with Follow it goes on (across
// restarts) until the service is deleted or bureau hangs up.
func (s *Server) serviceLog(ctx context.Context, st net.Conn, req agentwire.Request) {
	if _, ok := s.svcs.get(req.Name); !ok {
		refuse(st, agentwire.CodeNotFound, "no service "+req.Name)
		return
	}
	path := s.svcs.path(req.Name, "log")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		os.WriteFile(path, nil, 0o600) // not started yet: an empty log
	}
	streamLog(ctx, st, path, req, func() bool {
		_, ok := s.svcs.get(req.Name)
		return ok
	})
}
