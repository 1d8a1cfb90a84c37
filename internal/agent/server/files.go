package server

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/bureau/bureau/internal/agent/wire"
)

// read streams a regular file as data frames and an end frame.
func (s *Server) read(st net.Conn, req wire.Request) {
	if !filepath.IsAbs(req.Path) {
		refuse(st, wire.CodeInvalid, "path must be absolute")
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
		refuse(st, wire.CodeInvalid, req.Path+" is not a regular file")
		return
	}
	if err := wire.WriteHeader(st, wire.Response{Size: fi.Size()}); err != nil {
		return
	}
	w := wire.FrameWriter{W: st, Kind: wire.FrameData}
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			wire.WriteFrame(st, wire.FrameEnd, nil)
			return
		}
		if err != nil {
			wire.WriteFrame(st, wire.FrameError, []byte(err.Error()))
			return
		}
	}
}

// write creates a new file (it must not exist: bureau names a temporary
// file and moves it into place itself) from data frames; only an end
// frame keeps it. A first header says the file is open; the last one
// says how much was written, or why not.
func (s *Server) write(st net.Conn, req wire.Request) {
	if !filepath.IsAbs(req.Path) {
		refuse(st, wire.CodeInvalid, "path must be absolute")
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
	if err := wire.WriteHeader(st, wire.Response{}); err != nil {
		f.Close()
		os.Remove(req.Path)
		return
	}
	n, err := wire.ReceiveData(st, f)
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
	wire.WriteHeader(st, wire.Response{Size: n})
}
