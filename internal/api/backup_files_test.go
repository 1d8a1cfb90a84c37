package api

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

var _ BackupFiles = (*manager.BackupFiles)(nil)

func filesURL(id, sub, p string) string {
	u := "/api/v1/backups/" + id + "/files" + sub
	if p != "" {
		u += "?path=" + url.QueryEscape(p)
	}
	return u
}

// TestBackupFilesList: a path's details and a folder's entries, sorted,
// /home by default; a file lists nothing.
func TestBackupFilesList(t *testing.T) {
	e := newBackupEnv(t)
	code, body := e.do(t, e.alice, "GET", filesURL(e.done, "", ""), "")
	if code != 200 || body["path"] != "/home" || body["type"] != "dir" || len(body["entries"].([]any)) != 1 {
		t.Fatalf("default: %d %v", code, body)
	}
	code, body = e.do(t, e.alice, "GET", filesURL(e.done, "", "/home/agent/"), "")
	if code != 200 || body["path"] != "/home/agent" || body["mode"] != "0750" || body["backup_id"] != e.done {
		t.Fatalf("agent: %d %v", code, body)
	}
	var names []string
	for _, x := range body["entries"].([]any) {
		m := x.(map[string]any)
		names = append(names, m["name"].(string))
		if m["name"] == "latest" && (m["type"] != "symlink" || m["link_target"] != "notes.txt" || m["path"] != "/home/agent/latest") {
			t.Errorf("latest: %v", m)
		}
		if m["name"] == "notes.txt" && (m["type"] != "file" || m["size"] != 12.0 || m["mode"] != "0644" || m["modified"] != "2026-11-28T10:00:00Z") {
			t.Errorf("notes.txt: %v", m)
		}
		if m["name"] == "fifo" && m["type"] != "other" {
			t.Errorf("fifo: %v", m)
		}
	}
	if strings.Join(names, ",") != "fifo,latest,notes.txt,src" {
		t.Errorf("entries %v", names)
	}
	code, body = e.do(t, e.alice, "GET", filesURL(e.done, "", "/home/agent/notes.txt"), "")
	if code != 200 || body["type"] != "file" || len(body["entries"].([]any)) != 0 {
		t.Fatalf("file: %d %v", code, body)
	}
	if _, truncated := body["truncated"]; truncated {
		t.Error("a file says truncated")
	}
}

// TestBackupFilesPaths: paths outside /home, relative, with .., quotes or
// control characters are 400 invalid_path; a path the backup lacks 404.
func TestBackupFilesPaths(t *testing.T) {
	e := newBackupEnv(t)
	for _, p := range []string{"/home/../etc/passwd", "/etc/passwd", "agent/notes.txt", `/home/agent/"x`, "/home/agent/a\nb", "/home/agent/..", "/" + strings.Repeat("a", 4097)} {
		for _, sub := range []string{"", "/content"} {
			code, body := e.do(t, e.alice, "GET", filesURL(e.done, sub, p), "")
			if code != 400 || errCode(body) != "invalid_path" || errField(body) != "path" {
				t.Errorf("%s %q: %d %v", sub, p, code, body)
			}
		}
	}
	if code, body := e.do(t, e.alice, "GET", filesURL(e.done, "/content", ""), ""); code != 400 || errCode(body) != "invalid_path" {
		t.Errorf("content without a path: %d %v", code, body)
	}
	code, body := e.do(t, e.alice, "GET", filesURL(e.done, "", "/home/agent/nope"), "")
	if code != 404 || errCode(body) != "not_found" || !strings.Contains(body["error"].(map[string]any)["message"].(string), "/home/agent/nope") {
		t.Errorf("unknown path: %d %v", code, body)
	}
	if code, _ := e.do(t, e.alice, "GET", filesURL(e.done, "/content", "/home/agent/nope"), ""); code != 404 {
		t.Errorf("content of an unknown path: %d", code)
	}
}

// TestBackupFilesAuthz: another owner's backup is not found (as getBackup
// says); an admin reads anyone's; a desktop token none; a running backup
// cannot be opened.
func TestBackupFilesAuthz(t *testing.T) {
	e := newBackupEnv(t)
	bobs := e.bobsBackup(t)
	for _, sub := range []string{"", "/content"} {
		if code, body := e.do(t, e.alice, "GET", filesURL(bobs, sub, "/home/agent/notes.txt"), ""); code != 404 || errCode(body) != "not_found" {
			t.Errorf("alice reads bob's %s: %d %v", sub, code, body)
		}
		if code, _ := e.do(t, e.admin, "GET", filesURL(bobs, sub, "/home/agent/notes.txt"), ""); code != 200 {
			t.Errorf("admin reads bob's %s: %d", sub, code)
		}
		if code, _ := e.do(t, e.agent, "GET", filesURL(e.done, sub, "/home/agent/notes.txt"), ""); code != 403 {
			t.Errorf("desktop token %s: %d", sub, code)
		}
	}
	code, _ := e.do(t, e.alice, "POST", filesURL(bobs, "/restore", ""), `{"path":"/home/agent/notes.txt","desktop":"mine"}`)
	if code != 404 {
		t.Errorf("alice restores from bob's: %d", code)
	}
	if code, body := e.do(t, e.alice, "GET", filesURL(e.running, "", ""), ""); code != 409 {
		t.Errorf("a running backup opened: %d %v", code, body)
	}
	if code, _ := e.do(t, e.alice, "GET", filesURL("nope", "", ""), ""); code != 404 {
		t.Errorf("unknown backup: %d", code)
	}
}

func (e *backupEnv) bobsBackup(t *testing.T) string {
	t.Helper()
	list, _ := e.backups.List(t.Context(), manager.BackupFilter{DesktopID: e.bobs})
	if len(list) == 0 {
		t.Fatal("bob has no backup")
	}
	return list[0].ID
}

// TestBackupFileContent: a file's bytes with its name, a folder as a tar
// named by it, a symlink refused.
func TestBackupFileContent(t *testing.T) {
	e := newBackupEnv(t)
	code, ctype, data := e.raw(t, e.alice, "GET", filesURL(e.done, "/content", "/home/agent/notes.txt"), "", nil)
	if code != 200 || ctype != "application/octet-stream" || string(data) != "hello notes\n" {
		t.Fatalf("file: %d %s %q", code, ctype, data)
	}
	resp := e.get200(t, filesURL(e.done, "/content", "/home/agent/src"))
	if resp.Header.Get("Content-Type") != "application/x-tar" || resp.Header.Get("Content-Disposition") != `attachment; filename=src.tar` {
		t.Errorf("folder headers: %v", resp.Header)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(resp.body))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if strings.Join(names, ",") != "a.go,b c.md" {
		t.Errorf("tar members %v", names)
	}
	resp = e.get200(t, filesURL(e.done, "/content", "/home/agent/notes.txt"))
	if resp.Header.Get("Content-Length") != "12" || !strings.Contains(resp.Header.Get("Content-Disposition"), "notes.txt") {
		t.Errorf("file headers: %v", resp.Header)
	}
	for _, p := range []string{"/home/agent/latest", "/home/agent/fifo"} {
		if code, body := e.do(t, e.alice, "GET", filesURL(e.done, "/content", p), ""); code != 400 || errCode(body) != "invalid_path" {
			t.Errorf("%s: %d %v", p, code, body)
		}
	}
}

type gotResponse struct {
	Header http.Header
	body   []byte
}

func (e *backupEnv) get200(t *testing.T, u string) gotResponse {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+u, nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return gotResponse{Header: resp.Header, body: b}
}

// TestBackupFilesRestore: a file and a folder put back into a running
// desktop named by name or id; an existing target is 409 exists unless
// overwrite; a desktop not running is 409 invalid_state; the event is
// recorded.
func TestBackupFilesRestore(t *testing.T) {
	e := newBackupEnv(t)
	u := filesURL(e.done, "/restore", "")
	code, body := e.do(t, e.alice, "POST", u, `{"path":"/home/agent/notes.txt","desktop":"other","to":"/home/agent/old/notes.txt"}`)
	if code != 200 || body["files"] != 1.0 || body["bytes"] != 12.0 || body["desktop_id"] != e.other || body["to"] != "/home/agent/old/notes.txt" || body["backup_id"] != e.done {
		t.Fatalf("restore a file: %d %v", code, body)
	}
	if got := string(e.guest.files["/home/agent/old/notes.txt"]); got != "hello notes\n" {
		t.Errorf("written %q", got)
	}
	code, body = e.do(t, e.alice, "POST", u, `{"path":"/home/agent/notes.txt","desktop":"`+e.other+`","to":"/home/agent/old/notes.txt"}`)
	if code != 409 || errCode(body) != "exists" {
		t.Errorf("over an existing file: %d %v", code, body)
	}
	code, body = e.do(t, e.alice, "POST", u, `{"path":"/home/agent/notes.txt","desktop":"other","to":"/home/agent/old/notes.txt","overwrite":true}`)
	if code != 200 {
		t.Errorf("overwrite: %d %v", code, body)
	}
	code, body = e.do(t, e.alice, "POST", u, `{"path":"/home/agent/src","desktop":"mine"}`)
	if code != 200 || body["files"] != 2.0 || body["bytes"] != 13.0 || body["to"] != "/home/agent/src" {
		t.Errorf("restore a folder: %d %v", code, body)
	}
	e.backups.mu.Lock()
	n := len(e.backups.filesRestored)
	last := e.backups.filesRestored[n-1]
	e.backups.mu.Unlock()
	if n != 3 || last.DesktopID != e.mine || last.Path != "/home/agent/src" || last.Files != 2 || !strings.HasPrefix(last.Actor, "alice/") {
		t.Errorf("restores noted: %d %+v", n, last)
	}
	for _, c := range []struct {
		body, code, field string
		status            int
	}{
		{`{"path":"/etc/passwd","desktop":"mine"}`, "invalid_path", "path", 400},
		{`{"path":"/home/agent/notes.txt","desktop":"mine","to":"/home/../root/x"}`, "invalid_path", "to", 400},
		{`{"path":"/home/agent/notes.txt","desktop":"mine","to":"relative"}`, "invalid_path", "to", 400},
		{`{"path":"/home/agent/nope","desktop":"mine"}`, "not_found", "", 404},
		{`{"path":"/home/agent/notes.txt"}`, "invalid", "desktop", 422},
		{`{"path":"/home/agent/latest","desktop":"mine","to":"/home/agent/l2"}`, "invalid_path", "path", 400},
		{`{"path":"/home/agent/notes.txt","desktop":"mine","bogus":1}`, "bad_request", "", 400},
	} {
		// An admin's calls, as alice's heavy calls are few a second.
		code, body := e.do(t, e.admin, "POST", u, strings.ReplaceAll(c.body, `"mine"`, `"`+e.mine+`"`))
		if code != c.status || errCode(body) != c.code || errField(body) != c.field {
			t.Errorf("%s: %d %v", c.body, code, body)
		}
	}
	e.desktops.mu.Lock()
	e.desktops.desktops[e.mine].State = desktop.StateStopped
	e.desktops.mu.Unlock()
	for _, d := range []string{"bobs", e.bobs} {
		if code, body := e.do(t, e.alice, "POST", u, `{"path":"/home/agent/notes.txt","desktop":"`+d+`"}`); code != 404 {
			t.Errorf("into bob's desktop %s: %d %v", d, code, body)
		}
	}
	code, body = e.do(t, e.admin, "POST", u, `{"path":"/home/agent/notes.txt","desktop":"`+e.mine+`","to":"/home/agent/n2"}`)
	if code != 409 || errCode(body) != "invalid_state" {
		t.Errorf("into a stopped desktop: %d %v", code, body)
	}
}
