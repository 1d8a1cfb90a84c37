package server

import (
	"context"
	"net"
	"os"

	"github.com/bureau/bureau/internal/agent/wire"
)

// services answers svc.put, svc.list, svc.ctl and secrets.
func (s *Server) services(st net.Conn, req wire.Request) {
	t := s.svcs
	var (
		one wire.ServiceStatus
		err error
	)
	switch req.Op {
	case wire.OpSvcList:
		wire.WriteHeader(st, wire.Response{Services: t.list()})
		return
	case wire.OpSecrets:
		t.setSecrets(req.Secrets)
		wire.WriteHeader(st, wire.Response{Services: t.list()})
		return
	case wire.OpSvcPut:
		if req.Service == nil {
			refuse(st, wire.CodeInvalid, "no service")
			return
		}
		one, err = t.put(*req.Service, req.Secrets)
		if err != nil {
			refuse(st, wire.CodeInvalid, err.Error())
			return
		}
	case wire.OpSvcCtl:
		one, err = t.control(req.Name, req.Action)
	}
	if err != nil {
		if os.IsNotExist(err) {
			refuse(st, wire.CodeNotFound, "no service "+req.Name)
			return
		}
		refuse(st, wire.CodeInvalid, err.Error())
		return
	}
	wire.WriteHeader(st, wire.Response{Services: []wire.ServiceStatus{one}})
}

// serviceLog streams a service's log; with Follow it goes on (across
// restarts) until the service is deleted or bureau hangs up.
func (s *Server) serviceLog(ctx context.Context, st net.Conn, req wire.Request) {
	if _, ok := s.svcs.get(req.Name); !ok {
		refuse(st, wire.CodeNotFound, "no service "+req.Name)
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
