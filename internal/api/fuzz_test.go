package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies and query strings to every
// route that reads them: the API answers 2xx or 4xx, never 5xx or a panic.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{`{"name":"a"}`, `{"name":"x","vcpus":-1}`, `{"name":"x","from":{"desktop":"d1","snapshot":""}}`,
		`{"size_gib":1e309}`, `{"idle_timeout_seconds":"x"}`, `[]`, `{"name":"s","scope":"data","memory":true}`, "\x00", `{"plan":"custom","max_vcpus":-5}`} {
		f.Add(seed, "force=true&timeout=5")
	}
	for _, seed := range [][2]string{{`{"action":"left_click","coordinate":[1,2]}`, ""}, {`{"cmd":"true","user":"../x"}`, "stream=true"},
		{"data", "path=../../etc/passwd&user=root"}, {"", "path=a%0Ab&user=x%00"}, {`{"width":0,"height":-1}`, ""},
		{`{"ttl_seconds":1e9,"view_only":"yes"}`, ""}, {"", "format=jpeg&quality=0&width=-5"}, {`{"text":1}`, "limit=0"},
		{`{"ttl_seconds":9223372036854775807,"scope":"desktop","desktop_id":""}`, "access_token=x"}, {"", "stream_token=bstream_x&token="}} {
		f.Add(seed[0], seed[1])
	}
	e := newEnvF(f)
	_, d := e.doF(f, e.alice, "POST", "/api/v1/desktops", `{"name":"target"}`)
	id, _ := d["id"].(string)
	routes := [][2]string{
		{"POST", "/api/v1/desktops"}, {"PATCH", "/api/v1/desktops/" + id}, {"POST", "/api/v1/desktops/" + id + "/snapshots"},
		{"POST", "/api/v1/desktops/" + id + "/reimage"}, {"POST", "/api/v1/desktops/" + id + "/data-disk"},
		{"POST", "/api/v1/desktops/" + id + "/stop"}, {"POST", "/api/v1/tokens"}, {"PUT", "/api/v1/quotas/alice"},
		{"POST", "/api/v1/images"}, {"GET", "/api/v1/events"}, {"POST", "/api/v1/templates"},
		{"POST", "/api/v1/desktops/" + id + "/computer"}, {"POST", "/api/v1/desktops/" + id + "/exec"},
		{"PUT", "/api/v1/desktops/" + id + "/files"}, {"GET", "/api/v1/desktops/" + id + "/files"},
		{"DELETE", "/api/v1/desktops/" + id + "/files"}, {"PUT", "/api/v1/desktops/" + id + "/clipboard"},
		{"POST", "/api/v1/desktops/" + id + "/resolution"}, {"POST", "/api/v1/desktops/" + id + "/console"},
		{"GET", "/api/v1/desktops/" + id + "/events"}, {"GET", "/api/v1/desktops/" + id + "/screenshot"},
		{"POST", "/api/v1/events/stream-token"},
	}
	f.Fuzz(func(t *testing.T, body, query string) {
		if strings.ContainsAny(query, "# \x00\n\r") {
			return
		}
		for _, r := range routes {
			for _, tok := range []string{e.alice, e.admin} {
				req, err := http.NewRequest(r[0], e.srv.URL+r[1]+"?"+query, strings.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Fatalf("%s %s?%s with body %q: %d", r[0], r[1], query, body, resp.StatusCode)
				}
			}
		}
	})
}
