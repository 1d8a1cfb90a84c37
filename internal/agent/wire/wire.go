// Package wire is the protocol between bureau and bureau-agent, its
// agent inside each desktop, over one virtio-serial channel.
//
// A connection starts with a handshake of text lines (see handshake.go)
// that survives stale bytes left in the channel by an earlier connection,
// then carries one yamux session. bureau opens a stream per call (the
// agent opens none, and bureau's end refuses any: see HostSession); the
// stream starts with a Request and its Response (each a length-prefixed
// JSON header) and goes on with frames (kind, length, payload) or, for a
// port dial, raw bytes.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Channel is the virtio-serial port's name; the guest sees it as
// DevicePath.
const (
	Channel    = "org.bureau.agent.0"
	DevicePath = "/dev/virtio-ports/" + Channel
)

// Limits on what either end accepts from the other.
const (
	MaxHeader = 1 << 20
	MaxFrame  = 1 << 20
)

// Ops.
const (
	OpExec   = "exec"   // run a command with pipes, streamed
	OpSpawn  = "spawn"  // start a background process, output to a log
	OpProcs  = "procs"  // list background processes
	OpKill   = "kill"   // signal a background process
	OpLog    = "log"    // read a background process's log
	OpRead   = "read"   // stream a file out
	OpWrite  = "write"  // stream a file in
	OpDial   = "dial"   // a TCP stream to 127.0.0.1:Port in the guest
	OpPTY    = "pty"    // a terminal
	OpUpdate = "update" // replace the agent's binary and restart it

	OpSvcPut  = "svc.put"  // create or replace a service and start it
	OpSvcList = "svc.list" // list services
	OpSvcCtl  = "svc.ctl"  // start, stop, restart or delete a service
	OpSvcLog  = "svc.log"  // read a service's log (like log)
	OpSecrets = "secrets"  // the secret values services name (all of them)

	OpWindows = "windows" // list the X session's windows (windows.go)
	OpWindow  = "window"  // act on one window and return it after (windows.go)
	// ui.tree, ui.find, ui.act: the accessibility tree (ui.go).
)

// Request opens a stream.
type Request struct {
	Op string `json:"op"`
	// exec, spawn, pty: the command, its whole environment and directory.
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// exec: stdin comes as frames when set (else /dev/null).
	Stdin bool `json:"stdin,omitempty"`
	// spawn: a label shown in the list.
	Name string `json:"name,omitempty"`
	// kill, log: which process; kill: the signal (default TERM);
	// window: which window ("0x…").
	ID     string `json:"id,omitempty"`
	Signal int    `json:"signal,omitempty"`
	// log: where to start (negative: that many bytes before the end) and
	// whether to follow until the process has ended.
	Offset int64 `json:"offset,omitempty"`
	Follow bool  `json:"follow,omitempty"`
	// read, write: an absolute path (already checked by bureau as the
	// user); write: its mode.
	Path string `json:"path,omitempty"`
	Mode uint32 `json:"mode,omitempty"`
	// dial
	Port int `json:"port,omitempty"`
	// pty: the first window size.
	Rows int `json:"rows,omitempty"`
	Cols int `json:"cols,omitempty"`
	// update: the new binary's size and SHA-256 (hex).
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// svc.put: the service; svc.ctl, svc.log: its name (in Name) and,
	// for svc.ctl, the action.
	Service *ServiceSpec `json:"service,omitempty"`
	Action  string       `json:"action,omitempty"`
	// secrets: every value the desktop's services name, replacing what
	// the agent held; svc.put: values to add first. Kept in memory only.
	Secrets map[string]string `json:"secrets,omitempty"`
	// window: what to do with the window ID names.
	Window *WindowAct `json:"window,omitempty"`
	// ui.tree, ui.find: what to read; ui.act: what to do (ui.go).
	UI    *UIQuery  `json:"ui,omitempty"`
	UIAct *UIAction `json:"ui_act,omitempty"`
}

// Response answers a Request. A non-empty Error means the op did not
// start (or, as the last header of a write, did not finish).
type Response struct {
	Error string `json:"error,omitempty"`
	// Code classifies Error: not_found, invalid, failed, unavailable.
	Code string `json:"code,omitempty"`
	PID  int    `json:"pid,omitempty"`
	ID   string `json:"id,omitempty"`
	// read: the file's size; write: bytes written.
	Size  int64  `json:"size,omitempty"`
	Procs []Proc `json:"procs,omitempty"`
	// svc.*: the services (one for put and ctl).
	Services []ServiceStatus `json:"services,omitempty"`
	// windows: the windows and the screen; window: the window after
	// the action (nil once closed).
	Windows []Window `json:"windows,omitempty"`
	Window  *Window  `json:"window,omitempty"`
	Screen  *Screen  `json:"screen,omitempty"`
	// ui.*: the answer (in the second header, see ui.go).
	UI *UIResult `json:"ui,omitempty"`
}

// Error codes.
const (
	CodeNotFound = "not_found"
	CodeInvalid  = "invalid"
	CodeFailed   = "failed"
	// CodeUnavailable: what the op needs in the guest is not up (the X
	// session).
	CodeUnavailable = "unavailable"
)

// Proc is a background process.
type Proc struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	Argv      []string `json:"argv"`
	PID       int      `json:"pid"`
	Running   bool     `json:"running"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	StartedAt int64    `json:"started_at"` // Unix ms
	EndedAt   int64    `json:"ended_at,omitempty"`
	LogBytes  int64    `json:"log_bytes"`
}

// Exit ends an exec or a pty.
type Exit struct {
	// Code is the exit status, 128+signal when a signal ended it.
	Code       int   `json:"code"`
	Signal     int   `json:"signal,omitempty"`
	DurationMS int64 `json:"duration_ms"`
}

// Frame kinds.
const (
	FrameStdout   byte = 1  // guest → bureau
	FrameStderr   byte = 2  // guest → bureau
	FrameStdin    byte = 3  // bureau → guest
	FrameStdinEOF byte = 4  // bureau → guest
	FrameSignal   byte = 5  // bureau → guest: payload is the signal number, one byte
	FrameExit     byte = 6  // guest → bureau: payload is Exit as JSON
	FrameData     byte = 7  // file content, either way
	FrameEnd      byte = 8  // the data is complete
	FrameError    byte = 9  // the data stops: payload is the reason
	FrameResize   byte = 10 // bureau → guest: rows and cols, two uint16
)

// ErrTooLarge: a header or frame over its limit.
var ErrTooLarge = errors.New("agent/wire: header or frame too large")

// WriteHeader writes v as a length-prefixed JSON header.
func WriteHeader(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxHeader {
		return ErrTooLarge
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadHeader reads a header written by WriteHeader into v.
func ReadHeader(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxHeader {
		return ErrTooLarge
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return noEOF(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("agent/wire: header: %w", err)
	}
	return nil
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return ErrTooLarge
	}
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame; buf is reused when it is big enough.
func ReadFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(h[1:])
	if size > MaxFrame {
		return 0, nil, ErrTooLarge
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, noEOF(err)
	}
	return h[0], buf, nil
}

// noEOF: a stream that ends inside a header or frame was cut.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ErrCut: a data stream ended before its end frame (the sender went
// away, or sent an error frame, whose text follows).
var ErrCut = errors.New("agent/wire: the data stopped before its end")

// ReceiveData copies data frames to w until an end frame and returns how
// many bytes it copied.
func ReceiveData(r io.Reader, w io.Writer) (int64, error) {
	var total int64
	var buf []byte
	for {
		kind, p, err := ReadFrame(r, buf)
		if err != nil {
			return total, fmt.Errorf("%w after %d bytes: %v", ErrCut, total, err)
		}
		buf = p
		switch kind {
		case FrameData:
			if _, err := w.Write(p); err != nil {
				return total, err
			}
			total += int64(len(p))
		case FrameEnd:
			return total, nil
		case FrameError:
			return total, fmt.Errorf("%w after %d bytes: %s", ErrCut, total, p)
		}
	}
}

// FrameWriter sends what is written to it as frames of one kind.
type FrameWriter struct {
	W    io.Writer
	Kind byte
}

func (f FrameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), 256<<10)
		if err := WriteFrame(f.W, f.Kind, p[:c]); err != nil {
			return n, err
		}
		n += c
		p = p[c:]
	}
	return n, nil
}
