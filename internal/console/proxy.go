package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/coder/websocket"
)

// bufSize is how much of the display stream one read moves: the bound on
// what a viewer holds in bureau's memory per direction.
const bufSize = 64 << 10

// writeTimeout bounds one write to a browser.
const writeTimeout = 30 * time.Second

// maxClientMessage bounds one WebSocket message from a browser.
const maxClientMessage = 2 << 20

// Options tune one console session.
type Options struct {
	// ViewOnly drops the viewer's keyboard, pointer, clipboard and resize
	// messages.
	ViewOnly bool
	// Input, when set, decides each input message of a viewer that is
	// not view-only (Filter.Input): who holds the desktop's input.
	Input func(Input) bool
	// Count, when set, is told the bytes moved: "to_browser" (display) and
	// "to_desktop" (input).
	Count func(direction string, n int)
}

func (o Options) count(direction string, n int) {
	if o.Count != nil && n > 0 {
		o.Count(direction, n)
	}
}

// Pipe copies RFB between a browser's WebSocket and the desktop's VNC
// connection until either side ends or ctx does, then closes both. When ctx
// ends with a *CloseError cause, the browser gets its code and reason. Each
// viewer has its own VNC connection, so a slow viewer only slows itself.
func Pipe(ctx context.Context, ws *websocket.Conn, vnc net.Conn, opts Options) error {
	ws.SetReadLimit(maxClientMessage)
	// WebSocket reads and writes must not see ctx end: coder/websocket
	// drops the connection when their context does, and the browser should
	// get a close frame that says why.
	ioCtx := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { cancel(fromBrowser(ioCtx, ws, vnc, &Filter{ViewOnly: opts.ViewOnly, Input: opts.Input}, opts)) }()
	go func() { cancel(toBrowser(ioCtx, ws, vnc, opts)) }()
	<-ctx.Done()
	vnc.Close()
	err := context.Cause(ctx)
	var ce *CloseError
	var wsClose websocket.CloseError
	switch {
	case errors.As(err, &ce):
		ws.Close(websocket.StatusCode(ce.Code), ce.Reason)
	case errors.As(err, &wsClose): // the browser closed
		ws.CloseNow()
		return nil
	case errors.Is(err, errProtocol):
		ws.Close(websocket.StatusProtocolError, trim(err.Error()))
	case errors.Is(err, errUpstreamClosed):
		ws.Close(CodeDesktopGone, "the desktop's display closed")
	default:
		ws.Close(websocket.StatusInternalError, trim(err.Error()))
	}
	return err
}

var (
	errProtocol       = errors.New("protocol error")
	errUpstreamClosed = errors.New("VNC server closed the connection")
)

func fromBrowser(ctx context.Context, ws *websocket.Conn, vnc net.Conn, f *Filter, opts Options) error {
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageBinary {
			return fmt.Errorf("%w: text message on a binary RFB connection", errProtocol)
		}
		out, err := f.Feed(msg)
		if err != nil {
			return fmt.Errorf("%w: %v", errProtocol, err)
		}
		if len(out) > 0 {
			if _, err := vnc.Write(out); err != nil {
				return fmt.Errorf("write to VNC: %w", err)
			}
			opts.count("to_desktop", len(out))
		}
	}
}

func toBrowser(ctx context.Context, ws *websocket.Conn, vnc net.Conn, opts Options) error {
	buf := make([]byte, bufSize)
	for {
		n, err := vnc.Read(buf)
		if n > 0 {
			// A viewer that takes this long for one read's worth of
			// display is gone; it only ever holds up its own session.
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			werr := ws.Write(wctx, websocket.MessageBinary, buf[:n])
			cancel()
			if werr != nil {
				return werr
			}
			opts.count("to_browser", n)
		}
		if errors.Is(err, io.EOF) {
			return errUpstreamClosed
		}
		if err != nil {
			return fmt.Errorf("read from VNC: %w", err)
		}
	}
}

// trim fits a close reason into the 123 bytes a close frame allows.
func trim(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
