package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A stand-in VNC server for the benchmarks: "stream" sends display bytes as
// fast as the reader takes them; "echo" answers each 10-byte update request
// with a 16-byte reply (one round trip).
func benchServer(b *testing.B, mode string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if mode == "stream" {
					buf := make([]byte, 64<<10)
					for {
						if _, err := c.Write(buf); err != nil {
							return
						}
					}
				}
				req, reply := make([]byte, 10), make([]byte, 16)
				for {
					if _, err := io.ReadFull(c, req); err != nil {
						return
					}
					c.Write(reply)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// via returns a client connection to addr: directly, or through a
// WebSocket and Pipe (bureau's console path), past the RFB handshake.
func via(b *testing.B, addr string, proxied bool) net.Conn {
	if !proxied {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			ws.CloseNow()
			return
		}
		// The handshake is the filter's, not the server's: prime it.
		Pipe(context.Background(), ws, &primed{Conn: up, skip: 14}, Options{Count: func(string, int) {}})
	}))
	b.Cleanup(srv.Close)
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		b.Fatal(err)
	}
	ws.SetReadLimit(-1)
	c := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	c.Write([]byte("RFB 003.008\n\x01\x01"))
	return c
}

// primed swallows the first skip bytes written (the client's handshake).
type primed struct {
	net.Conn
	skip int
}

func (p *primed) Write(b []byte) (int, error) {
	n := min(p.skip, len(b))
	p.skip -= n
	if len(b) == n {
		return n, nil
	}
	m, err := p.Conn.Write(b[n:])
	return n + m, err
}

// BenchmarkThroughput: display bytes per second from the VNC server to the
// viewer, directly and through the console proxy.
func BenchmarkThroughput(b *testing.B) {
	for _, proxied := range []bool{false, true} {
		b.Run(map[bool]string{false: "direct", true: "proxy"}[proxied], func(b *testing.B) {
			readStream(b, via(b, benchServer(b, "stream"), proxied))
		})
	}
}

// readStream reads b.N MiB of display stream from c, then closes it.
func readStream(b *testing.B, c net.Conn) {
	defer c.Close()
	buf := make([]byte, 1<<20)
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for range b.N {
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip: one update request and its reply, directly and
// through the console proxy; the difference is the latency it adds.
func BenchmarkRoundTrip(b *testing.B) {
	req := []byte{3, 1, 0, 0, 0, 0, 5, 0, 3, 32}
	for _, proxied := range []bool{false, true} {
		b.Run(map[bool]string{false: "direct", true: "proxy"}[proxied], func(b *testing.B) {
			c := via(b, benchServer(b, "echo"), proxied)
			defer c.Close()
			reply := make([]byte, 16)
			b.ResetTimer()
			for range b.N {
				c.Write(req)
				if _, err := io.ReadFull(c, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// paced reads no faster than rate bytes a second: the viewer's end of a
// network link of that speed (TCP's flow control carries the limit back
// to the sender, through the proxy when there is one).
type paced struct {
	net.Conn
	rate  float64
	start time.Time
	n     int64
}

func (p *paced) Read(b []byte) (int, error) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	if ahead := time.Duration(float64(p.n)/p.rate*float64(time.Second)) - time.Since(p.start); ahead > 0 {
		time.Sleep(ahead)
	}
	b = b[:min(len(b), 64<<10)]
	n, err := p.Conn.Read(b)
	p.n += int64(n)
	return n, err
}

// BenchmarkThroughputOnALink: display bytes per second to a viewer on a
// 1 Gbit/s and a 100 Mbit/s link, directly and through the console proxy.
func BenchmarkThroughputOnALink(b *testing.B) {
	for _, link := range []struct {
		name string
		rate float64 // bytes/s
	}{{"1Gbit", 125e6}, {"100Mbit", 12.5e6}} {
		for _, proxied := range []bool{false, true} {
			b.Run(link.name+"/"+map[bool]string{false: "direct", true: "proxy"}[proxied], func(b *testing.B) {
				readStream(b, &paced{Conn: via(b, benchServer(b, "stream"), proxied), rate: link.rate})
			})
		}
	}
}
