package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBackupLs(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	var asked string
	f.routes["GET /api/v1/backups/b1/files"] = func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Query().Get("path")
		writeJSON(w, 200, map[string]any{"backup_id": "b1", "path": "/home/agent", "type": "dir", "size": 4096, "mode": "0755",
			"modified": backupBegan, "entries": []map[string]any{
				{"name": "latest", "path": "/home/agent/latest", "type": "symlink", "size": 9, "mode": "0777", "modified": backupBegan, "link_target": "notes.txt"},
				{"name": "notes.txt", "path": "/home/agent/notes.txt", "type": "file", "size": 12, "mode": "0644", "modified": backupBegan},
			}})
	}
	out, _, err := f.run("backup", "ls", "b1", "/home/agent")
	if err != nil {
		t.Fatal(err)
	}
	if asked != "/home/agent" || !strings.Contains(out, "TYPE") || !strings.Contains(out, "symlink  0777  9     2025-03-04 05:06  latest -> notes.txt") ||
		!strings.Contains(out, "file     0644  12    2025-03-04 05:06  notes.txt") {
		t.Errorf("asked %q, printed:\n%s", asked, out)
	}
	if _, _, err := f.run("backup", "ls", "b1"); err != nil || asked != "/home" {
		t.Errorf("default path %q: %v", asked, err)
	}
}

func TestBackupGet(t *testing.T) {
	f := newFakeBureau(t)
	f.routes["GET /api/v1/backups/b1/files/content"] = func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Query().Get("path"))
		if name == "src" {
			name += ".tar"
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.Write([]byte("bytes of " + name))
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/notes.txt"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("notes.txt"); string(b) != "bytes of notes.txt" {
		t.Errorf("notes.txt: %q", b)
	}
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/notes.txt"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("over an existing file: %v", err)
	}
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/notes.txt", "--force"); err != nil {
		t.Errorf("--force: %v", err)
	}
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/src"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("src.tar"); string(b) != "bytes of src.tar" {
		t.Errorf("src.tar: %q", b)
	}
	out, _, err := f.run("backup", "get", "b1", "/home/agent/notes.txt", "-o", "-")
	if err != nil || out != "bytes of notes.txt" {
		t.Errorf("stdout: %q %v", out, err)
	}
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/notes.txt", "-o", filepath.Join(dir, "x.txt")); err != nil {
		t.Errorf("-o: %v", err)
	}
	if _, _, err := f.run("backup", "get", "b1", "/home/agent/nope"); err != nil {
		// the fake answers every path; an error is the server's
		t.Log(err)
	}
}

func TestBackupRestoreFile(t *testing.T) {
	f := newFakeBureau(t)
	got := f.bodies("POST /api/v1/backups/b1/files/restore", 200, map[string]any{"backup_id": "b1", "desktop_id": "d1",
		"path": "/home/agent/src", "to": "/home/agent/old", "files": 3, "bytes": 10240})
	out, _, err := f.run("backup", "restore-file", "b1", "/home/agent/src", "--desktop", "agent-1", "--to", "/home/agent/old", "--overwrite")
	if err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0] != `{"path":"/home/agent/src","desktop":"agent-1","to":"/home/agent/old","overwrite":true}`+"\n" && (*got)[0] != `{"path":"/home/agent/src","desktop":"agent-1","to":"/home/agent/old","overwrite":true}` {
		t.Errorf("sent %q", *got)
	}
	if !strings.Contains(out, "3 files, 10240 bytes") {
		t.Errorf("printed %q", out)
	}
	if _, _, err := f.run("backup", "restore-file", "b1", "/home/agent/src"); err == nil {
		t.Error("no --desktop accepted")
	}
}
