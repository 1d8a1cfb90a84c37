package sshlink

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// ParseAddr parses "user@host[:port]" into the user (default "root") and
// "host:port" (port 22 when missing). An IPv6 address goes in brackets:
// "root@[2001:db8::1]:2222" or "[2001:db8::1]".
func ParseAddr(s string) (user, addr string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("ssh address %q: %s (want user@host[:port])", s, why)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return bad("empty")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/ \t\r\n") {
		return bad("not a plain address (no scheme, path or spaces)")
	}
	user, hostport := "root", s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, hostport = s[:i], s[i+1:]
		if user == "" {
			return bad("empty user before @")
		}
		if strings.ContainsAny(user, "@:") {
			return bad("the user may not contain @ or :")
		}
	}
	if hostport == "" {
		return bad("no host")
	}
	host, port := hostport, "22"
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.Index(hostport, "]")
		if end < 0 {
			return bad("unclosed [")
		}
		host = hostport[1:end]
		switch rest := hostport[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			port = rest[1:]
		default:
			return bad("unexpected " + strconv.Quote(rest) + " after ]")
		}
		if host == "" {
			return bad("empty host in []")
		}
		if !strings.Contains(host, ":") {
			return bad("brackets are for IPv6 addresses only")
		}
		if net.ParseIP(strings.SplitN(host, "%", 2)[0]) == nil {
			return bad("not an IPv6 address in []")
		}
	case strings.Count(hostport, ":") > 1:
		return bad("an IPv6 address goes in brackets, as [2001:db8::1]:22")
	case strings.Contains(hostport, ":"):
		host, port, _ = strings.Cut(hostport, ":")
		if host == "" {
			return bad("no host")
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return bad("port " + strconv.Quote(port) + " is not a number from 1 to 65535")
	}
	return user, net.JoinHostPort(host, port), nil
}

// ParseHostKey parses one public key given as an authorized_keys line
// ("ssh-ed25519 AAAA… [comment]"), a known_hosts line, or a line of
// ssh-keyscan output ("host ssh-ed25519 AAAA…", "[host]:port ssh-ed25519
// AAAA…"). Blank lines and # comments are skipped; more than one key is
// refused, since the one key is what gets pinned.
func ParseHostKey(s string) (ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "-----BEGIN") {
			return nil, errors.New("host key: this is a private key; give the host's public key (e.g. from ssh-keyscan -t ed25519 HOST, or /etc/ssh/ssh_host_ed25519_key.pub)")
		}
		k, err := parseKeyLine(line)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	switch len(keys) {
	case 0:
		return nil, errors.New(`host key: empty; want "ssh-ed25519 AAAA…" (the host's /etc/ssh/ssh_host_ed25519_key.pub, or a line of ssh-keyscan -t ed25519 HOST)`)
	case 1:
		return keys[0], nil
	}
	return nil, fmt.Errorf("host key: %d keys given, want one (e.g. only the ssh-ed25519 line: ssh-keyscan -t ed25519 HOST)", len(keys))
}

// parseKeyLine parses "TYPE BASE64 [comment]" or, in known_hosts and
// ssh-keyscan form, "HOSTS TYPE BASE64 [comment]".
func parseKeyLine(line string) (ssh.PublicKey, error) {
	f := strings.Fields(line)
	if strings.HasPrefix(f[0], "@") {
		return nil, fmt.Errorf("host key: %s lines are not a host key", f[0])
	}
	if len(f) >= 3 && keyType(f[1]) {
		f = f[1:] // known_hosts / ssh-keyscan: the host pattern first (base64 never starts like a type)
	}
	if !keyType(f[0]) || len(f) < 2 {
		return nil, fmt.Errorf(`host key %q: want "ssh-ed25519 AAAA… [comment]" or ssh-keyscan's "host ssh-ed25519 AAAA…"`, abbrev(line))
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return nil, fmt.Errorf("host key %q: the key is not base64: %w", abbrev(line), err)
	}
	k, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, fmt.Errorf("host key %q: %w", abbrev(line), err)
	}
	if k.Type() != f[0] {
		return nil, fmt.Errorf("host key %q: says %s but holds a %s key", abbrev(line), f[0], k.Type())
	}
	return k, nil
}

// keyType reports whether s looks like an SSH public key type name.
func keyType(s string) bool {
	for _, p := range []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "rsa-sha2-"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:57] + "…"
	}
	return s
}

// FormatKey is the one-line authorized_keys form of k ("ssh-ed25519
// AAAA…"), without a trailing newline; "" for nil.
func FormatKey(k ssh.PublicKey) string {
	if k == nil {
		return ""
	}
	return string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(k)))
}
