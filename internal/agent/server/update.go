package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"os"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// update receives a new agent binary, checks its size and digest, puts it
// in place of Exe and restarts into it.
func (s *Server) update(st net.Conn, req wire.Request) {
	if s.Exe == "" || s.Restart == nil {
		refuse(st, wire.CodeInvalid, "this agent cannot update itself")
		return
	}
	tmp := s.Exe + ".new"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		refuseErr(st, err)
		return
	}
	h := sha256.New()
	n, err := wire.ReceiveData(st, io.MultiWriter(f, h))
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	sum := hex.EncodeToString(h.Sum(nil))
	switch {
	case err != nil:
		refuseErr(st, err)
	case n != req.Size || sum != req.SHA256:
		refuse(st, wire.CodeInvalid, "the binary received does not match its size and digest")
	default:
		if err := os.Rename(tmp, s.Exe); err != nil {
			refuseErr(st, err)
			break
		}
		s.Log.Info("updated; restarting", "sha256", sum)
		wire.WriteHeader(st, wire.Response{Size: n})
		st.Close()
		go func() {
			time.Sleep(100 * time.Millisecond)
			s.Restart()
		}()
		return
	}
	os.Remove(tmp)
}
