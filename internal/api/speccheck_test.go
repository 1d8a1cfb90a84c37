package api

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/api/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The spec as clients get it: the JSON that GET /api/v1/openapi.json
// serves, loaded and validated once per test binary.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	data, err := openapi.JSON()
	if err != nil {
		return nil, fmt.Errorf("convert the spec to JSON: %w", err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load the spec: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the spec is not valid OpenAPI: %w", err)
	}
	// Streams are validated as the list of their events or lines (see the
	// spec's LiveEventStream and ImportStream).
	openapi3filter.RegisterBodyDecoder("text/event-stream", decodeEventStream)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeNDJSON)
	return doc, nil
})

// specChecker serves requests with h and checks every response against the
// spec: an undocumented status, a body or header that does not match its
// schema, or an API request to a route the spec does not name is a
// failure. Failures are kept, never reported from a handler's goroutine
// (a stream may end after its test), and reported by the test's cleanup.
type specChecker struct {
	h        http.Handler
	router   routers.Router
	catchAll []*regexp.Regexp // routes ending in a catch-all {path}
	// requests: also check the requests the server accepted (2xx) against
	// the spec, so it is not stricter than the server.
	requests bool

	inFlight sync.WaitGroup
	mu       sync.Mutex
	failures []string
	checked  map[string]int // "METHOD /spec/path status" → responses checked
}

// withSpecCheck wraps an API handler in a specChecker whose failures fail t.
func withSpecCheck(t testing.TB, h http.Handler) *specChecker {
	t.Helper()
	s, err := newSpecChecker(h)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the server's own cleanup has
	// closed it.
	t.Cleanup(func() {
		for _, f := range s.Failures() {
			t.Errorf("response does not match the OpenAPI spec: %s", f)
		}
	})
	return s
}

func newSpecChecker(h http.Handler) (*specChecker, error) {
	doc, err := loadSpec()
	if err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	s := &specChecker{h: h, router: router, checked: map[string]int{}}
	for path := range doc.Paths.Map() {
		if prefix, ok := strings.CutSuffix(path, "/{path}"); ok {
			re := regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(prefix), `[^/]+`)
			s.catchAll = append(s.catchAll, regexp.MustCompile("^"+re+"/"))
		}
	}
	return s, nil
}

// Failures waits for requests in flight and returns what did not match.
func (s *specChecker) Failures() []string {
	s.inFlight.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failures)
}

// Checked waits for requests in flight and returns how many responses
// were checked per "METHOD /spec/path status".
func (s *specChecker) Checked() map[string]int {
	s.inFlight.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.checked))
	for k, v := range s.checked {
		out[k] = v
	}
	return out
}

func (s *specChecker) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, fmt.Sprintf(format, args...))
}

// maxChecked bounds the bytes of a body kept for checking; a longer body is
// checked for its status and headers only.
const maxChecked = 4 << 20

func (s *specChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Done()
	var reqBody []byte
	if s.requests && r.Body != nil {
		reqBody, _ = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(reqBody), r.Body))
	}
	// What the checker needs of the request, taken before the handler
	// changes it (the web routes rewrite its path).
	req := r.Clone(context.Background())
	rec := &recorder{ResponseWriter: w}
	s.h.ServeHTTP(rec, r)
	s.check(req, reqBody, rec)
}

func (s *specChecker) check(r *http.Request, reqBody []byte, rec *recorder) {
	status := rec.statusCode()
	if previewHost.MatchString(strings.ToLower(r.Host)) {
		return // a live URL by its host: the app's answer, not the API's
	}
	route, params, err := s.findRoute(r)
	if err != nil {
		switch {
		case nonAPIPath(r.URL.Path):
		case status == http.StatusNotFound && bytes.Contains(rec.body.Bytes(), []byte(errNoRoute.Error())):
		case status == http.StatusMethodNotAllowed:
		case status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect || status == http.StatusPermanentRedirect:
		default:
			s.fail("%s %s → %d: no such operation in the spec (%v)", r.Method, r.URL.Path, status, err)
		}
		return
	}
	input := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if s.requests && status >= 200 && status < 300 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if rb := route.Operation.RequestBody; len(reqBody) > 0 && r.Header.Get("Content-Type") == "" &&
			rb != nil && rb.Value.Content.Get("application/json") != nil {
			r.Header.Set("Content-Type", "application/json") // bureau reads a body with no type as JSON
		}
		if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
			s.fail("%s %s was accepted (%d) but the spec refuses the request: %v", r.Method, r.URL.RequestURI(), status, err)
		}
	}
	header := rec.Header().Clone()
	if header.Get("Content-Type") == "" && rec.body.Len() > 0 {
		// What net/http sends for a body written without a type.
		header.Set("Content-Type", http.DetectContentType(rec.body.Bytes()))
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	if rec.hijacked || rec.overflow {
		opts.ExcludeResponseBody = true
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), Options: opts})
	if err != nil {
		s.fail("%s %s → %d %s: %v", r.Method, r.URL.RequestURI(), status, abbreviate(rec.body.String()), err)
	}
	s.mu.Lock()
	s.checked[fmt.Sprintf("%s %s %d", r.Method, route.Path, status)]++
	s.mu.Unlock()
}

// findRoute finds the request's operation; a path under a catch-all
// route is matched with its tail made one segment, as gorilla/mux (and
// OpenAPI) path parameters cannot hold a slash.
func (s *specChecker) findRoute(r *http.Request) (*routers.Route, map[string]string, error) {
	probe := r
	for _, re := range s.catchAll {
		if m := re.FindString(r.URL.Path); m != "" {
			probe = r.Clone(context.Background())
			probe.URL = &url.URL{Path: m + "rest"}
			break
		}
	}
	route, params, err := s.router.FindRoute(probe)
	if errors.Is(err, routers.ErrMethodNotAllowed) {
		// A route served for every method documents the ones that matter
		// (x-bureau-any-method); another method is checked against them.
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			other := probe.Clone(context.Background())
			other.Method = m
			if rt, ps, err2 := s.router.FindRoute(other); err2 == nil && rt.PathItem.Extensions["x-bureau-any-method"] == true {
				route, params, err = rt, ps, nil
				break
			}
		}
	}
	if err == nil && probe != r {
		// An empty tail is the app's root: gin's catch-all holds "/" then.
		params["path"] = cmp.Or(strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(probe.URL.Path, "rest")), "/")
	}
	return route, params, err
}

// nonAPIPath: the web pages and their assets, which the spec leaves out
// (see nonAPIRoutes).
func nonAPIPath(p string) bool {
	return p == "/" || p == "/docs" || strings.HasPrefix(p, "/static/") || strings.HasPrefix(p, "/console/")
}

func abbreviate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// recorder passes a response through and keeps a copy of it. It flushes
// and hijacks (streams, WebSockets and the port proxy need both).
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	overflow bool
	hijacked bool
}

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 || r.status < 200 && code >= 200 && !r.hijacked {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if !r.overflow {
		if r.body.Len()+len(p) > maxChecked {
			r.overflow = true
		} else {
			r.body.Write(p)
		}
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// decodeEventStream reads server-sent events as a list of {event, data}
// with data parsed as JSON; comments and an event cut short are skipped.
func decodeEventStream(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	events := []any{}
	var name string
	var data []string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, maxChecked)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" || data != nil {
				var v any
				if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &v); err != nil {
					return nil, fmt.Errorf("event %q: data is not JSON: %w", name, err)
				}
				events = append(events, map[string]any{"event": name, "data": v})
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			return nil, fmt.Errorf("not a server-sent event line: %q", line)
		}
	}
	return events, sc.Err()
}

// decodeNDJSON reads newline-delimited JSON as a list; a line cut short is
// skipped.
func decodeNDJSON(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	lines := []any{}
	for rest := data; len(rest) > 0; {
		line, after, complete := bytes.Cut(rest, []byte("\n"))
		if !complete {
			break
		}
		rest = after
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d is not JSON: %w", len(lines)+1, err)
		}
		lines = append(lines, v)
	}
	return lines, nil
}
