package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/api/openapi"
	"github.com/gin-gonic/gin"
)

// nonAPIRoutes are the routes the spec leaves out on purpose: the web
// front end's pages and assets, which hold no data and are no contract.
// Everything else the router serves must be in the spec, and everything the
// spec names must be served.
var nonAPIRoutes = map[string]bool{
	"GET /":             true, // the web console
	"GET /static/*path": true, // its scripts, styles and vendored noVNC, xterm.js, Swagger UI
	"GET /console/:id":  true, // the console page (opens with a console token)
	"GET /docs":         true, // the API reference page, which renders the spec
}

// anyMethod are the methods gin's Any registers. A route served for every
// method is one path item in the spec, marked x-bureau-any-method, that
// documents the methods that matter.
var anyMethod = []string{"GET", "POST", "PUT", "PATCH", "HEAD", "OPTIONS", "DELETE", "CONNECT", "TRACE"}

// ginParam is a gin path parameter (:id) or catch-all (*path).
var ginParam = regexp.MustCompile(`[:*]([A-Za-z_]+)`)

// engineOf is the gin router behind an env's server.
func engineOf(t *testing.T, e *env) *gin.Engine {
	h := e.srv.Config.Handler
	if c, ok := h.(*specChecker); ok {
		h = c.h
	}
	g, ok := h.(*gin.Engine)
	if !ok {
		t.Fatalf("the env serves a %T, not a gin engine", h)
	}
	return g
}

// TestSpecCoversEveryRoute compares the router's routes with the spec's
// operations both ways. The env's router has every optional part (metrics,
// live URLs, the web front end), so every route is registered.
func TestSpecCoversEveryRoute(t *testing.T) {
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string][]string{} // spec-style path → methods
	for _, r := range engineOf(t, newEnv(t)).Routes() {
		if nonAPIRoutes[r.Method+" "+r.Path] {
			continue
		}
		p := ginParam.ReplaceAllString(r.Path, "{$1}")
		served[p] = append(served[p], r.Method)
	}
	var missing, extra []string
	operations := 0
	for path, methods := range served {
		item := doc.Paths.Value(path)
		if item == nil {
			for _, m := range methods {
				missing = append(missing, m+" "+path)
			}
			continue
		}
		documented := item.Operations()
		operations += len(documented)
		if item.Extensions["x-bureau-any-method"] == true {
			if !sameSet(methods, anyMethod) {
				extra = append(extra, fmt.Sprintf("%s: marked x-bureau-any-method but served for %v only", path, methods))
			}
			continue
		}
		for _, m := range methods {
			if documented[m] == nil {
				missing = append(missing, m+" "+path)
			}
		}
		for m := range documented {
			if !slices.Contains(methods, m) {
				extra = append(extra, m+" "+path)
			}
		}
		if len(methods) == len(anyMethod) {
			extra = append(extra, path+": served for every method; mark it x-bureau-any-method")
		}
	}
	for path, item := range doc.Paths.Map() {
		if served[path] == nil {
			for m := range item.Operations() {
				extra = append(extra, m+" "+path)
			}
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("routes served but not in the spec (add them to internal/api/openapi/openapi.yaml):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("spec operations no route serves:\n  %s", strings.Join(extra, "\n  "))
	}
	if operations < 80 {
		t.Errorf("only %d operations matched; is the env's router missing routes?", operations)
	}
	t.Logf("%d paths, %d operations, all covered", len(served), operations)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSpecIsServed: the spec loads and validates as OpenAPI 3.1 (loadSpec),
// and GET /api/v1/openapi.json serves it as JSON without a token.
func TestSpecIsServed(t *testing.T) {
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	e := newEnv(t)
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	want, _ := openapi.JSON()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(served, want) {
		t.Fatalf("GET /api/v1/openapi.json: %d %s, %d bytes (want %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(served), len(want))
	}
	var v map[string]any
	if err := json.Unmarshal(served, &v); err != nil || v["openapi"] != "3.1.0" {
		t.Errorf("served spec: %v", err)
	}
	resp, err = http.Get(e.srv.URL + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte("/api/v1/openapi.json")) {
		t.Errorf("GET /docs: %d %.200s", resp.StatusCode, page)
	}
}

// specCall is one request of TestResponsesMatchTheSpec.
type specCall struct {
	token, method, path string
	body                string // JSON unless contentType says otherwise
	contentType         string
	want                int
}

// call sends c (with a Content-Type, so the spec can check the request)
// and returns the status and the body parsed as JSON, when it is.
func (e *env) call(t *testing.T, c specCall) (int, map[string]any) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequestWithContext(context.Background(), c.method, e.srv.URL+c.path, body)
	if c.body != "" {
		req.Header.Set("Content-Type", cmp.Or(c.contentType, "application/json"))
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	if resp.StatusCode != c.want {
		t.Errorf("%s %s: %d, want %d: %.300s", c.method, c.path, resp.StatusCode, c.want, data)
	}
	return resp.StatusCode, out
}

// TestSpecCheckerCatchesMismatches: the checker itself fails what it should
// (an undocumented status or route, a body, an event or a line off schema)
// and passes what matches.
func TestSpecCheckerCatchesMismatches(t *testing.T) {
	answers := map[string]func(w http.ResponseWriter){
		"GET /api/v1/info": func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) },
		"GET /api/v1/desktops": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"desktops":[{"id":1}]}`)
		},
		"GET /api/v1/tokens": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"tokens":[],"secret":"leaked"}`)
		},
		"GET /api/v1/events/stream": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": hello\n\nevent: dropped\ndata: {\"count\":2}\n\nevent: bogus\ndata: {}\n\n")
		},
		"POST /api/v1/images": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"progress\":{\"phase\":\"download\",\"percent\":1}}\n{\"weird\":1}\n")
		},
		"GET /api/v1/nope": func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) },
		"GET /api/v1/quota": func(w http.ResponseWriter) { // matches
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"quota":{"owner":"a","plan":"free","max_desktops":2,"max_vcpus":2,"max_memory_mib":4096,"max_disk_gib":20,"max_snapshots":10},`+
				`"usage":{"desktops":0,"vcpus":0,"memory_mib":0,"disk_mib":0,"snapshots":0}}`)
		},
	}
	checker, err := newSpecChecker(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers[r.Method+" "+r.URL.Path](w)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for route := range answers {
		method, path, _ := strings.Cut(route, " ")
		checker.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
	}
	failures := strings.Join(checker.Failures(), "\n")
	for _, want := range []string{"GET /api/v1/info → 418", "GET /api/v1/desktops → 200", "GET /api/v1/tokens → 200",
		"GET /api/v1/events/stream → 200", "POST /api/v1/images → 200", "GET /api/v1/nope → 200: no such operation"} {
		if !strings.Contains(failures, want) {
			t.Errorf("no failure for %s in:\n%s", want, failures)
		}
	}
	if strings.Contains(failures, "/api/v1/quota") {
		t.Errorf("a matching response failed:\n%s", failures)
	}
}
