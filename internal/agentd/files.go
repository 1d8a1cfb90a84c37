package agentd

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/bureau/bureau/internal/agentwire"
)

// read streams a regular file as data frames and an end frame.
func (s *Server) read(st net.Conn, req agentwire.Request) {
	if !filepath.IsAbs(req.Path) {
		refuse(st, agentwire.CodeInvalid, "path must be absolute")
		return
	}
	f, err := os.Open(req.Path)
	if err != nil {
		refuseErr(st, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		refuseErr(st, err)
		return
	}
	if !fi.Mode().IsRegular() {
		refuse(st, agentwire.CodeInvalid, req.Path+" is not a regular file")
		return
	}
	if err := agentwire.WriteHeader(st, agentwire.Response{Size: fi.Size()}); err != nil {
		return
	}
	w := agentwire.FrameWriter{W: st, Kind: agentwire.FrameData}
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			agentwire.WriteFrame(st, agentwire.FrameEnd, nil)
			return
		}
		if err != nil {
			agentwire.WriteFrame(st, agentwire.FrameError, []byte(err.Error()))
			return
		}
	}
}

// write creates a new file (it must not exist: bureau names a temporary
// file and moves it into place itself) from data frames; only an end
// frame keeps it. A first header says the file is open; the last one
// says how much was written, or why not.
func (s *Server) write(st net.Conn, req agentwire.Request) {
	if !filepath.IsAbs(req.Path) {
		refuse(st, agentwire.CodeInvalid, "path must be absolute")
		return
	}
	mode := os.FileMode(req.Mode & 0o7777)
	if mode == 0 {
		mode = 0o600
	}
	f, err := os.OpenFile(req.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		refuseErr(st, err)
		return
	}
	if err := agentwire.WriteHeader(st, agentwire.Response{}); err != nil {
		f.Close()
		os.Remove(req.Path)
		return
	}
	n, err := agentwire.ReceiveData(st, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(req.Path)
		refuseErr(st, err)
		return
	}
	agentwire.WriteHeader(st, agentwire.Response{Size: n})
}
