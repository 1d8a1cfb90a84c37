package api

import (
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/images"
	"github.com/bureau/bureau/internal/store"
)

// backedQcow2 is the start of a qcow2 image whose backing file is name:
// enough for bureau to refuse it.
func backedQcow2(name string) []byte {
	b := make([]byte, 4096)
	be := binary.BigEndian
	copy(b, "QFI\xfb")
	be.PutUint32(b[4:], 2)
	be.PutUint64(b[8:], 72) // backing file name right after the header
	be.PutUint32(b[16:], uint32(len(name)))
	be.PutUint32(b[20:], 16)
	be.PutUint64(b[24:], 1<<30)
	copy(b[72:], name)
	return b
}

func TestImportOfAHostileImageAnswers422(t *testing.T) {
	dir := t.TempDir()
	imagesDir := filepath.Join(dir, "images")
	e := newEnvImages(t, func(st *store.Store) Images {
		// qemu-img must never be reached: the header check refuses first.
		return &images.Service{Dir: imagesDir, Store: st, Log: slog.New(slog.DiscardHandler), QemuImg: "/nonexistent/qemu-img"}
	})
	hostile := filepath.Join(dir, "hostile.qcow2")
	if err := os.WriteFile(hostile, backedQcow2("/etc/shadow"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(backedQcow2("/var/lib/bureau/bureau.db"))
	}))
	defer srv.Close()
	for _, c := range []struct {
		req  images.ImportRequest
		want string
	}{
		{images.ImportRequest{Name: "by-path", Path: hostile}, `has a backing file ("/etc/shadow"); imported images must be self-contained`},
		{images.ImportRequest{Name: "by-url", URL: srv.URL + "/x.qcow2"}, `has a backing file ("/var/lib/bureau/bureau.db")`},
	} {
		body, _ := json.Marshal(c.req)
		code, out := e.do(t, e.admin, "POST", "/api/v1/images", string(body))
		msg, _ := out["error"].(map[string]any)["message"].(string)
		if code != 422 || errCode(out) != "invalid" || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %v, want 422 naming %q", c.req.Name, code, out, c.want)
		}
	}
	if _, out := e.do(t, e.admin, "GET", "/api/v1/images", ""); len(out["images"].([]any)) != 0 {
		t.Errorf("refused imports registered images: %v", out)
	}
	if left, _ := filepath.Glob(filepath.Join(imagesDir, "*")); len(left) != 0 {
		t.Errorf("refused imports left files: %v", left)
	}
	// Importing by path stays an admin's job.
	body, _ := json.Marshal(images.ImportRequest{Name: "mine", Path: hostile})
	if code, out := e.do(t, e.alice, "POST", "/api/v1/images", string(body)); code != 403 {
		t.Errorf("owner import: %d %v", code, out)
	}
}
