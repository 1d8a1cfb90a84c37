package sshlink

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAddr(t *testing.T) {
	for _, c := range []struct{ in, user, addr, err string }{
		{"root@10.0.0.5", "root", "10.0.0.5:22", ""},
		{"10.0.0.5", "root", "10.0.0.5:22", ""},
		{"admin@host2.example:2222", "admin", "host2.example:2222", ""},
		{"host2:22", "root", "host2:22", ""},
		{" bureau@h ", "bureau", "h:22", ""},
		{"root@[2001:db8::1]:2222", "root", "[2001:db8::1]:2222", ""},
		{"[2001:db8::1]", "root", "[2001:db8::1]:22", ""},
		{"[fe80::1%eth0]:22", "root", "[fe80::1%eth0]:22", ""},
		{"", "", "", "empty"},
		{"root@", "", "", "no host"},
		{"@host", "", "", "empty user"},
		{"a@b@host", "", "", "may not contain @"},
		{"2001:db8::1", "", "", "in brackets"},
		{"root@[2001:db8::1", "", "", "unclosed ["},
		{"[2001:db8::1]x", "", "", "after ]"},
		{"[host]:22", "", "", "IPv6 addresses only"},
		{"host:", "", "", "port \"\""},
		{"host:0", "", "", "port \"0\""},
		{"host:65536", "", "", "port"},
		{"host:ssh", "", "", "port \"ssh\""},
		{"host:022", "", "", "port"},
		{":22", "", "", "no host"},
		{"ssh://root@host", "", "", "not a plain address"},
		{"root@host name", "", "", "not a plain address"},
	} {
		user, addr, err := ParseAddr(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "user@host[:port]") {
				t.Errorf("ParseAddr(%q) = %q %q %v, want an error with %q", c.in, user, addr, err, c.err)
			}
			continue
		}
		if err != nil || user != c.user || addr != c.addr {
			t.Errorf("ParseAddr(%q) = %q %q %v, want %q %q", c.in, user, addr, err, c.user, c.addr)
		}
	}
}

func TestParseHostKey(t *testing.T) {
	key := newSigner(t).PublicKey()
	line := FormatKey(key) // "ssh-ed25519 AAAA…"
	if !strings.HasPrefix(line, "ssh-ed25519 AAAA") || strings.HasSuffix(line, "\n") {
		t.Fatalf("FormatKey %q", line)
	}
	b64 := strings.Fields(line)[1]
	for _, c := range []struct{ name, in, err string }{
		{"authorized_keys", line, ""},
		{"with comment", line + " root@host2\n", ""},
		{"keyscan", "10.0.0.5 " + line, ""},
		{"keyscan port", "[10.0.0.5]:2222 " + line, ""},
		{"keyscan output", "# 10.0.0.5:22 SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\n10.0.0.5 " + line + "\n\n", ""},
		{"known_hosts hashed", "|1|c2FsdA==|aGFzaA== " + line, ""},
		{"host named like a type", "ssh-gateway " + line, ""},
		{"CRLF", line + "\r\n", ""},
		{"empty", "  \n", "empty"},
		{"two keys", line + "\n" + FormatKey(newSigner(t).PublicKey()), "2 keys given"},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", "private key"},
		{"garbage", "hello world", "want \"ssh-ed25519"},
		{"type only", "ssh-ed25519", "want"},
		{"bad base64", "ssh-ed25519 !!!!", "not base64"},
		{"wrong type", "ssh-rsa " + b64, "holds a ssh-ed25519 key"},
		{"cert-authority marker", "@cert-authority *.example " + line, "not a host key"},
	} {
		k, err := ParseHostKey(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: ParseHostKey(%q) = %v, want an error with %q", c.name, c.in, err, c.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(k.Marshal(), key.Marshal()) {
			t.Errorf("%s: ParseHostKey(%q) = %v, want the key", c.name, c.in, err)
		}
	}
	if FormatKey(nil) != "" {
		t.Error("FormatKey(nil) not empty")
	}
}

func TestClientKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ssh", "id_ed25519")
	s, err := ClientKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.PublicKey().Type() != "ssh-ed25519" {
		t.Errorf("new key is %s", s.PublicKey().Type())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want 0600", fi.Mode(), err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("key folder: %v %v, want 0700", di.Mode(), err)
	}
	again, err := ClientKey(path)
	if err != nil || !bytes.Equal(again.PublicKey().Marshal(), s.PublicKey().Marshal()) {
		t.Errorf("reloaded key differs: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("folder holds %d files, want the key only", len(entries))
	}
	// OpenSSH reads it too.
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		out, err := exec.Command("ssh-keygen", "-y", "-f", path).Output()
		if err != nil || strings.Fields(string(out))[1] != strings.Fields(FormatKey(s.PublicKey()))[1] {
			t.Errorf("ssh-keygen -y: %q %v", out, err)
		}
	}
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientKey(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("broken key file: %v", err)
	}
}
