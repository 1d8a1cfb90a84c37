package server

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// dial connects to 127.0.0.1:Port in the guest and joins the stream to
// it, each way until its sender is done.
func (s *Server) dial(st net.Conn, req wire.Request) {
	if req.Port < 1 || req.Port > 65535 {
		refuse(st, wire.CodeInvalid, "port must be 1..65535")
		return
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", req.Port), 5*time.Second)
	if err != nil {
		refuse(st, wire.CodeFailed, err.Error())
		return
	}
	defer c.Close()
	if err := wire.WriteHeader(st, wire.Response{}); err != nil {
		return
	}
	tcp := c.(*net.TCPConn)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(tcp, st)
		tcp.CloseWrite()
	}()
	io.Copy(st, tcp)
	st.Close() // half-close: bureau reads to its end
	wg.Wait()
}
