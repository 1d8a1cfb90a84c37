package manager

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sections splits identityFiles' output as identityScript does.
func sections(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out, cur := map[string]string{}, ""
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if name, ok := strings.CutPrefix(l, "--- "); ok {
			cur = strings.TrimSuffix(name, "\n")
			if _, dup := out[cur]; dup {
				t.Fatalf("section %s twice", cur)
			}
			out[cur] = ""
			continue
		}
		if cur == "" && l != "" {
			t.Fatalf("line before any section: %q", l)
		}
		out[cur] += l
	}
	return out
}

func TestIdentityFiles(t *testing.T) {
	b, err := identityFiles("dev-1", "ssh-ed25519 AAAAC3Nza one@host\n\n  ssh-rsa AAAAB3Nza two@host  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		t.Error("the last line has no newline: the guest's read would drop it")
	}
	got := sections(t, b)
	if ak := got["authorized_keys"]; ak != "ssh-ed25519 AAAAC3Nza one@host\nssh-rsa AAAAB3Nza two@host\n" {
		t.Errorf("authorized_keys %q", ak)
	}
	for _, kind := range []string{"ed25519", "ecdsa"} {
		signer, err := ssh.ParsePrivateKey([]byte(got[kind]))
		if err != nil {
			t.Fatalf("%s host key: %v", kind, err)
		}
		pub, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(got[kind+".pub"]))
		if err != nil {
			t.Fatalf("%s.pub: %v", kind, err)
		}
		if !bytes.Equal(pub.Marshal(), signer.PublicKey().Marshal()) || comment != "root@dev-1" {
			t.Errorf("%s.pub does not match its private key (comment %q)", kind, comment)
		}
	}
	again, _ := identityFiles("dev-1", "")
	if sections(t, again)["ed25519"] == got["ed25519"] {
		t.Error("the same host key twice: every desktop needs its own")
	}
	if sections(t, again)["authorized_keys"] != "" {
		t.Errorf("no keys: authorized_keys %q", sections(t, again)["authorized_keys"])
	}
	if _, err := identityFiles("dev-1", "ssh-ed25519 AAAA x\n--- ed25519\n"); err == nil {
		t.Error("a key line that starts a section was accepted")
	}
}

// The guest runs the scripts with dash; a syntax error would only show
// in a desktop.
func TestGuestScriptsParse(t *testing.T) {
	for name, script := range map[string]string{"identity": identityScript, "grow": growHome, "layout": layoutScript} {
		if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s script: %v: %s", name, err, out)
		}
	}
}
