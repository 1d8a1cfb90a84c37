package prepare

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/sshlink"
)

func signer(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sshServer only shakes hands with its host key (enough to be scanned).
func sshServer(t *testing.T, hostKey ssh.Signer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	config := &ssh.ServerConfig{NoClientAuth: false, PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
		return nil, errors.New("no")
	}}
	config.AddHostKey(hostKey)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				ssh.NewServerConn(c, config)
			}()
		}
	}()
	return l.Addr().String()
}

func TestTargetSaysWhatToFix(t *testing.T) {
	p := New(signer(t), "/var/lib/bureau", nil, slog.New(slog.DiscardHandler))
	hostKey := signer(t)
	addr := sshServer(t, hostKey)
	ctx := context.Background()
	field := func(h hosts.Host, want, says string) {
		t.Helper()
		_, err := p.target(ctx, &h)
		var inv *hosts.InvalidError
		var nr *hosts.NotReadyError
		got, msg := "", ""
		switch {
		case errors.As(err, &inv):
			got, msg = inv.Field, inv.Message
		case errors.As(err, &nr):
			got, msg = nr.Field, nr.Message
		}
		if got != want || !strings.Contains(msg, says) {
			t.Errorf("%+v: %v, want field %q saying %q", h.SSH, err, want, says)
		}
	}
	field(hosts.Host{Name: "two"}, "ssh_address", "user@host")
	field(hosts.Host{Name: "two", SSH: hosts.SSH{Address: "root@[::1"}}, "ssh_address", "")
	// No key: the refusal shows the one the host offers.
	field(hosts.Host{Name: "two", SSH: hosts.SSH{Address: "root@" + addr}}, "ssh_host_key", sshlink.FormatKey(hostKey.PublicKey()))
	field(hosts.Host{Name: "two", SSH: hosts.SSH{Address: "root@" + addr, HostKey: "ssh-ed25519 not-base64"}}, "ssh_host_key", "")
	// Nothing listening: no key to show.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := l.Addr().String()
	l.Close()
	field(hosts.Host{Name: "two", SSH: hosts.SSH{Address: "root@" + gone}}, "ssh_address", "asking")

	h := hosts.Host{Name: "two", SSH: hosts.SSH{Address: addr, HostKey: "  " + sshlink.FormatKey(hostKey.PublicKey()) + " comment\n"}}
	tg, err := p.target(ctx, &h)
	if err != nil {
		t.Fatal(err)
	}
	if tg.User != "root" || tg.Addr != addr || h.SSH.Address != "root@"+addr || h.SSH.HostKey != sshlink.FormatKey(hostKey.PublicKey()) {
		t.Errorf("target %+v, host SSH %+v: the user defaults to root and the key is kept in one form", tg, h.SSH)
	}
}

func TestSSHErrorsPointAtTheirField(t *testing.T) {
	p := New(signer(t), "/d", nil, slog.New(slog.DiscardHandler))
	h := &hosts.Host{Name: "two"}
	for _, c := range []struct {
		err   error
		field string
	}{
		{sshlink.ErrHostKeyMismatch, "ssh_host_key"},
		{sshlink.ErrKeyRefused, "ssh_address"},
		{&sshlink.ExitError{Status: 3, Stderr: "nft is not installed on the host\n", Cmd: "for"}, ""},
		{errors.New("dial tcp: connection refused"), "ssh_address"},
	} {
		var nr *hosts.NotReadyError
		if err := p.sshError(h, c.err); !errors.As(err, &nr) || nr.Field != c.field {
			t.Errorf("%v: %v, want field %q", c.err, err, c.field)
		}
	}
}
