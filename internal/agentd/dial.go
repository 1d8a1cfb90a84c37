package agentd

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agentwire"
)

// dial connects to 127.0.0.1:Port in the guest and joins the stream to
// it, each way until its sender is done.
func (s *Server) dial(st net.Conn, req agentwire.Request) {
	if req.Port < 1 || req.Port > 65535 {
		refuse(st, agentwire.CodeInvalid, "port must be 1..65535")
		return
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", req.Port), 5*time.Second)
	if err != nil {
		refuse(st, agentwire.CodeFailed, err.Error())
		return
	}
	defer c.Close()
	if err := agentwire.WriteHeader(st, agentwire.Response{}); err != nil {
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
