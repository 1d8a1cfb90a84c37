package api

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// streamURL asks for a stream token as tok and returns the URL it opens.
func (e *env) streamURL(t *testing.T, tok string) string {
	t.Helper()
	code, r := e.do(t, tok, "POST", "/api/v1/events/stream-token", "")
	u, _ := r["url"].(string)
	if code != 201 || !strings.HasPrefix(u, "/api/v1/events/stream?stream_token=") {
		t.Fatalf("stream token: %d %v", code, r)
	}
	return u
}

// get sends a GET without an Authorization header and returns the status.
func (e *env) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := http.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAPITokensAreRefusedInTheQuery: a full API token in a URL is refused
// everywhere, with or without a header, so a client leaking it notices.
func TestAPITokensAreRefusedInTheQuery(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/api/v1/events/stream", "/api/v1/desktops", "/api/v1/info"} {
		for _, param := range []string{"access_token", "token"} {
			u := path + "?" + param + "=" + url.QueryEscape(e.alice)
			if code := e.get(t, u); code != 401 {
				t.Errorf("GET %s: %d, want 401", u, code)
			}
			if code, body := e.do(t, e.alice, "GET", u, ""); code != 401 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "query string") {
				t.Errorf("GET %s with the header too: %d %v", u, code, body)
			}
		}
	}
}

func TestStreamTokens(t *testing.T) {
	e := newEnv(t)
	u := e.streamURL(t, e.alice)
	secret := strings.TrimPrefix(u, "/api/v1/events/stream?stream_token=")
	if code := e.get(t, u); code != 200 {
		t.Fatalf("first use: %d", code)
	}
	if code := e.get(t, u); code != 401 {
		t.Errorf("second use: %d, want 401", code)
	}

	u = e.streamURL(t, e.alice)
	secret, _ = url.QueryUnescape(strings.TrimPrefix(u, "/api/v1/events/stream?stream_token="))
	if code := e.get(t, "/api/v1/desktops?stream_token="+url.QueryEscape(secret)); code != 401 {
		t.Errorf("stream token on another route: %d", code)
	}
	if code, _ := e.do(t, secret, "GET", "/api/v1/desktops", ""); code != 401 {
		t.Errorf("stream token as a bearer token: %d", code)
	}
	if code, _ := e.do(t, secret, "GET", "/api/v1/events/stream", ""); code != 401 {
		t.Errorf("stream token as a bearer token on the stream: %d", code)
	}
	if code, _ := e.do(t, e.alice, "POST", u, ""); code != 405 && code != 401 {
		t.Errorf("stream token on POST: %d", code)
	}

	// A stream token lives no longer than its maker: here a second.
	_, short, _ := e.mint(t, e.alice, `{"ttl_seconds":1}`)
	u = e.streamURL(t, short)
	time.Sleep(1100 * time.Millisecond)
	if code := e.get(t, u); code != 401 {
		t.Errorf("stream token after it expired: %d", code)
	}

	// Revoking the maker voids its stream tokens.
	_, maker, info := e.mint(t, e.alice, `{}`)
	u = e.streamURL(t, maker)
	e.do(t, e.alice, "DELETE", "/api/v1/tokens/"+info["id"].(string), "")
	if code := e.get(t, u); code != 401 {
		t.Errorf("stream token of a revoked token: %d", code)
	}

	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`)
	_, agent, _ := e.mint(t, e.alice, `{"desktop_id":"`+d["id"].(string)+`"}`)
	if code, _ := e.do(t, agent, "POST", "/api/v1/events/stream-token", ""); code != 403 {
		t.Errorf("a desktop token asks for a stream token: %d", code)
	}
}

// TestStreamEndsWhenItsTokenIsRevoked: a stream open for a long time does
// not outlive the token it was opened with.
func TestStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	defer func(d time.Duration) { streamCheckEvery = d }(streamCheckEvery)
	streamCheckEvery = 20 * time.Millisecond
	e := newEnv(t)
	_, tok, info := e.mint(t, e.alice, `{}`)
	resp, err := http.Get(e.srv.URL + e.streamURL(t, tok))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	e.do(t, e.alice, "DELETE", "/api/v1/tokens/"+info["id"].(string), "")
	done := make(chan string, 1)
	go func() {
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil || strings.HasPrefix(line, "event: unauthorized") {
				done <- line
				return
			}
		}
	}()
	select {
	case line := <-done:
		if !strings.HasPrefix(line, "event: unauthorized") {
			t.Errorf("stream ended without saying why: %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of a revoked token is still open")
	}
}
