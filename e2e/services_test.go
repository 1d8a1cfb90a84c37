//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// Registered after reimage (file order): a reimage starts the OS disk, and
// with it the desktop's services, afresh.
// servicePort is where testServices leaves a service running; the
// lifecycle test finds it again after the desktop boots.
const servicePort = "8124"

// serviceCreated says the services check left its service behind.
var serviceCreated bool

// serviceKey is the secret the service is given.
const serviceKey = "sk_e2e_4f1c9b7a2d"

// serviceApp answers with a digest of its secret (never the secret) and
// prints the secret to its log, which bureau must scrub.
const serviceApp = `import hashlib, http.server, os
key = os.environ["APP_KEY"]
print("starting with key", key, flush=True)
digest = hashlib.sha256(key.encode()).hexdigest()[:16]
filed = open(os.environ["BUREAU_SECRETS_DIR"] + "/APP_KEY").read() == key
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("app key-digest=%s file=%s\n" % (digest, filed)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", ` + servicePort + `), H).serve_forever()
`

func keyDigest() string {
	sum := sha256.Sum256([]byte(serviceKey))
	return hex.EncodeToString(sum[:])[:16]
}

type serviceInfo struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	PID      int    `json:"pid"`
	Restarts int    `json:"restarts"`
	URL      string `json:"url"`
}

// serviceServes waits until the app answers through bureau with the
// digest of its secret.
func (s *server) serviceServes(token string, d *apiv1.Desktop, within time.Duration) {
	s.t.Helper()
	want := fmt.Sprintf("app key-digest=%s file=True\n", keyDigest())
	deadline := time.Now().Add(within)
	for {
		code, body := s.getPort(token, d, servicePort, "/")
		if code == 200 && body == want {
			return
		}
		if time.Now().After(deadline) {
			var sv serviceInfo
			s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/services/app", nil, &sv)
			s.t.Fatalf("the service does not serve with its secret: %d %.300q; service %+v", code, body, sv)
		}
		time.Sleep(time.Second)
	}
}

// testServices: a secret set by its owner reaches a service as a variable
// and a file without ever being shown; the service serves through
// bureau, is restarted when it dies, and its log is scrubbed.
func testServices(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	s.agentUp(token, d, 3*time.Minute)
	if code := s.call(token, "PUT", "/api/v1/secrets/APP_KEY", map[string]string{"value": serviceKey}, nil); code != 200 {
		t.Fatalf("set secret: %d", code)
	}
	var secrets map[string][]map[string]any
	s.call(token, "GET", "/api/v1/secrets", nil, &secrets)
	if list := secrets["secrets"]; len(list) != 1 || list[0]["name"] != "APP_KEY" || list[0]["value"] != nil {
		t.Errorf("secrets list: %v", secrets)
	}
	if code := s.putRaw(token, base+"/files?path=app/app.py", "text/x-python", []byte(serviceApp)); code != 201 {
		t.Fatalf("upload the app: %d", code)
	}
	var sv serviceInfo
	req := map[string]any{"name": "app", "cmd": "exec python3 app.py", "cwd": "app", "port": 8124, "secrets": []string{"APP_KEY"}}
	if code := s.call(token, "POST", base+"/services", req, &sv); code != 201 || sv.URL != base+"/ports/"+servicePort+"/" {
		t.Fatalf("create service: %d %+v", code, sv)
	}
	serviceCreated = true
	s.serviceServes(token, d, time.Minute)
	var logText []byte
	s.call(token, "GET", base+"/services/app/logs?tail=4096", nil, &logText)
	if strings.Contains(string(logText), serviceKey) || !strings.Contains(string(logText), "starting with key [secret APP_KEY]") {
		t.Errorf("service log is not scrubbed: %q", logText)
	}
	// Exec names a secret too, and its output is scrubbed.
	var res struct{ Stdout string }
	if s.call(token, "POST", base+"/exec", map[string]any{"cmd": "echo $APP_KEY | wc -c; echo $APP_KEY", "secrets": []string{"APP_KEY"}}, &res); res.Stdout != fmt.Sprintf("%d\n[secret APP_KEY]\n", len(serviceKey)+1) {
		t.Errorf("exec with a secret: %q", res.Stdout)
	}
	// Killed, it is started again.
	s.call(token, "GET", base+"/services/app", nil, &sv)
	if out, code := s.guest(d, fmt.Sprintf("kill -9 %d", sv.PID)); code != 0 {
		t.Fatalf("kill the service: %q", out)
	}
	deadline := time.Now().Add(time.Minute)
	for sv.Restarts < 1 || sv.State != "running" {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted after kill -9: %+v", sv)
		}
		time.Sleep(time.Second)
		s.call(token, "GET", base+"/services/app", nil, &sv)
	}
	s.serviceServes(token, d, time.Minute)
	// A stopped service stays stopped; started, it serves again.
	if s.call(token, "POST", base+"/services/app/stop", nil, &sv); sv.State != "stopped" {
		t.Errorf("stop: %+v", sv)
	}
	if code, _ := s.getPort(token, d, servicePort, "/"); code != 502 {
		t.Errorf("a stopped service still answers: %d", code)
	}
	s.call(token, "POST", base+"/services/app/start", nil, &sv)
	s.serviceServes(token, d, time.Minute)

	// The web console's Services tab shows it running, and its log
	// (scrubbed) in a real browser.
	shot := filepath.Join(os.TempDir(), "bureau-e2e-services.png")
	cmd := exec.Command("node", "services.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "TOKEN="+token, "DESKTOP="+d.ID, "NAME=app",
		"LOG_EXPECT=starting with key [secret APP_KEY]", "SCREENSHOT="+shot, "PORT="+servicePort, "PAGE_EXPECT=app key-digest="+keyDigest())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser: %v\n%s", err, stderr.String())
	}
	var r struct {
		State  string   `json:"state"`
		Log    string   `json:"log"`
		Errors []string `json:"errors"`
		Access string   `json:"access"`
		Opened string   `json:"opened"`
		Page   string   `json:"page"`
	}
	json.Unmarshal(stdout.Bytes(), &r)
	if r.State != "running" || !strings.Contains(r.Log, "starting with key [secret APP_KEY]") || strings.Contains(r.Log, serviceKey) || len(r.Errors) > 0 {
		t.Errorf("the console's Services tab (see %s): %+v", shot, r)
	}
	// Its Live URLs list opens the service's private URL in a new tab,
	// signed in by a one-time link that is gone from the address.
	if r.Access != "private" || !strings.HasPrefix(r.Opened, "http://"+servicePort+"-"+d.ID+".localhost:") || strings.Contains(r.Opened, "bureau_login") ||
		strings.TrimSpace(r.Page) != fmt.Sprintf("app key-digest=%s file=True", keyDigest()) {
		t.Errorf("Open in the console's Live URLs (see %s): access %q, tab %q showing %q", shot, r.Access, r.Opened, r.Page)
	}
}

// servicesBackAfterBoot: the service runs again after the desktop booted,
// with its secret (handed over again: the agent keeps values in memory
// only).
func (s *server) servicesBackAfterBoot(token string, d *apiv1.Desktop) {
	s.t.Helper()
	if !serviceCreated {
		return // the services check did not run (-run picked others)
	}
	s.agentUp(token, d, 3*time.Minute)
	s.serviceServes(token, d, 3*time.Minute)
}
