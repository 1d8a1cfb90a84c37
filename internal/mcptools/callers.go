package mcptools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BearerFromRequest is the token of the HTTP request that carried a tool
// call (streamable HTTP).
func BearerFromRequest(req *mcp.CallToolRequest) string {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ""
	}
	t, _ := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(t)
}

// Headers the MCP route sets (overwriting what a client sent) so that
// tools calling the API in process build URLs for the host the client
// reached.
const (
	HostHeader  = "X-Bureau-Mcp-Host"
	ProtoHeader = "X-Bureau-Mcp-Proto"
)

type originKey struct{}

type origin struct{ host, proto string }

// withOrigin carries the MCP request's host to an in-process call.
func withOrigin(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Extra == nil || req.Extra.Header == nil || req.Extra.Header.Get(HostHeader) == "" {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, origin{req.Extra.Header.Get(HostHeader), req.Extra.Header.Get(ProtoHeader)})
}

// InProcess calls a REST handler in this process.
type InProcess struct{ Handler http.Handler }

// Call serves the request through the handler, keeping at most limit
// bytes of the answer (0: all); past the limit it cancels the request.
func (p InProcess) Call(ctx context.Context, token, method, path string, body []byte, limit int) (Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.RequestURI = path
	if o, ok := ctx.Value(originKey{}).(origin); ok {
		// URLs in the answer are built from the host the MCP client used.
		req.Host = o.host
		if o.proto != "" {
			req.Header.Set("X-Forwarded-Proto", o.proto)
		}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &recorder{header: http.Header{}, limit: limit, cancel: cancel}
	p.Handler.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return Response{Status: w.status, Body: w.body.Bytes(), ContentType: w.header.Get("Content-Type"), Truncated: w.truncated}, nil
}

// recorder is a ResponseWriter that keeps a bounded answer.
type recorder struct {
	header    http.Header
	status    int
	body      bytes.Buffer
	limit     int
	truncated bool
	cancel    func()
}

var errTooLarge = errors.New("answer larger than the caller takes")

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.limit > 0 && r.body.Len()+len(b) > r.limit {
		r.truncated = true
		r.cancel()
		return 0, errTooLarge
	}
	return r.body.Write(b)
}
func (r *recorder) Flush() {}

// Remote calls a bureau server over HTTP (for `bureau mcp` on a machine
// other than the server).
type Remote struct {
	Base   string
	Client *http.Client
}

// Call sends the request to the server.
func (r Remote) Call(ctx context.Context, token, method, path string, body []byte, limit int) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(r.Base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.Client.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("bureau server: %w", err)
	}
	defer resp.Body.Close()
	rd := io.Reader(resp.Body)
	if limit > 0 {
		rd = io.LimitReader(resp.Body, int64(limit)+1)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return Response{}, fmt.Errorf("bureau server: %w", err)
	}
	out := Response{Status: resp.StatusCode, Body: b, ContentType: resp.Header.Get("Content-Type")}
	if limit > 0 && len(b) > limit {
		out.Body, out.Truncated = b[:limit], true
	}
	return out, nil
}
