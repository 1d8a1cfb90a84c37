package api

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// raw sends body with a content type and returns the status, content type
// and body of the answer.
func (e *env) raw(t *testing.T, token, method, path, ctype string, body []byte) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

func TestClipboardCarriesTextAndImages(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	path := "/api/v1/desktops/" + id + "/clipboard"
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...)

	if code, _, body := e.raw(t, e.alice, "PUT", path, "image/png", png); code != 200 {
		t.Fatalf("put image: %d %s", code, body)
	}
	code, ctype, body := e.raw(t, e.alice, "GET", path+"?type=image/png", "", nil)
	if code != 200 || ctype != "image/png" || !bytes.Equal(body, png) {
		t.Errorf("get image: %d %s %d bytes", code, ctype, len(body))
	}
	if code, c := e.do(t, e.alice, "GET", path, ""); code != 200 || c["text"] != "clip" {
		t.Errorf("get text: %d %v", code, c)
	}
	if code, c := e.do(t, e.alice, "PUT", path, `{"text":"hello"}`); code != 200 || c["text"] != "hello" {
		t.Errorf("put text: %d %v", code, c)
	}
	// What the fake holds no image/jpeg of: 404; another owner: 404.
	if code, _ := e.do(t, e.alice, "GET", path+"?type=image/jpeg", ""); code != 404 {
		t.Errorf("absent type: %d", code)
	}
	if code, _, _ := e.raw(t, e.bob, "PUT", path, "image/png", png); code != 404 {
		t.Errorf("another owner's desktop: %d", code)
	}
	// More than 4 MiB is refused before it reaches the guest.
	if code, _, body := e.raw(t, e.alice, "PUT", path, "image/png", make([]byte, 5<<20)); code != 422 || !strings.Contains(string(body), "4 MiB") {
		t.Errorf("oversized: %d %s", code, body)
	}
}

func TestConsolePageClipboardTakesTheConsoleToken(t *testing.T) {
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	full := e.console(t, e.alice, id, false)["token"].(string)
	view := e.console(t, e.alice, id, true)["token"].(string)
	path := func(tok string) string {
		return "/api/v1/desktops/" + id + "/console/clipboard?token=" + url.QueryEscape(tok)
	}
	if code, c := e.do(t, "", "GET", path(full), ""); code != 200 || c["text"] != "clip" {
		t.Errorf("read with a console token: %d %v", code, c)
	}
	if code, c := e.do(t, "", "PUT", path(full), `{"text":"from the console"}`); code != 200 {
		t.Errorf("set with a console token: %d %v", code, c)
	}
	if code, c := e.do(t, "", "GET", path(view), ""); code != 200 {
		t.Errorf("read, view-only: %d %v", code, c)
	}
	if code, c := e.do(t, "", "PUT", path(view), `{"text":"x"}`); code != 403 || !strings.Contains(c["error"].(map[string]any)["message"].(string), "view-only") {
		t.Errorf("set, view-only: %d %v", code, c)
	}
	// An API token is not a console token.
	if code, _ := e.do(t, "", "GET", path(e.alice), ""); code != 401 {
		t.Errorf("API token as console token: %d", code)
	}
}
