package sshlink

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// testServer is an in-process SSH server on 127.0.0.1: exec sessions run
// `sh -c` here, direct-streamlocal dials a local unix socket, and
// keepalive@openssh.com is answered unless silent is set.
type testServer struct {
	addr    string
	hostKey ssh.Signer
	client  ssh.Signer // the one client key it accepts

	silent     atomic.Bool  // stop answering keepalives
	keepalives atomic.Int64 // keepalives answered
	handshakes atomic.Int64 // successful handshakes

	mu    sync.Mutex
	conns []net.Conn // every accepted conn, from before its handshake
}

func newSigner(t *testing.T) ssh.Signer {
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

func newServer(t *testing.T) *testServer {
	t.Helper()
	s := &testServer{hostKey: newSigner(t), client: newSigner(t)}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), s.client.PublicKey().Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	config.AddHostKey(s.hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	t.Cleanup(func() { ln.Close(); s.drop() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go s.serve(c, config)
		}
	}()
	return s
}

// target is a Target for s with its host key pinned and its client key.
func (s *testServer) target() Target {
	return Target{Addr: s.addr, User: "root", HostKey: s.hostKey.PublicKey(), Signer: s.client}
}

// drop closes every connection, as a host going away would.
func (s *testServer) drop() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (s *testServer) serve(c net.Conn, config *ssh.ServerConfig) {
	sc, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		c.Close()
		return
	}
	s.handshakes.Add(1)
	defer sc.Close()
	go func() {
		for r := range reqs {
			switch {
			case r.Type != "keepalive@openssh.com":
				r.Reply(false, nil)
			case !s.silent.Load():
				s.keepalives.Add(1)
				r.Reply(true, nil)
			} // silent: never answered
		}
	}()
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			go s.session(nc)
		case "direct-streamlocal@openssh.com":
			go s.streamlocal(nc)
		default:
			nc.Reject(ssh.UnknownChannelType, "unknown channel type")
		}
	}
}

// session runs one exec request with `sh -c`; the process is killed when
// the client closes the channel or sends a signal.
func (s *testServer) session(nc ssh.NewChannel) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	for r := range reqs {
		switch r.Type {
		case "exec":
			var p struct{ Command string }
			if err := ssh.Unmarshal(r.Payload, &p); err != nil {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			go run(ctx, ch, p.Command)
		case "signal":
			kill()
		default:
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
	}
}

func run(ctx context.Context, ch ssh.Channel, command string) {
	defer ch.Close()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill sh's children too
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{127}))
		return
	}
	go func() { io.Copy(in, ch); in.Close() }()
	cmd.Wait()
	status := cmd.ProcessState.ExitCode()
	if status < 0 {
		status = 137
	}
	ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
}

func (s *testServer) streamlocal(nc ssh.NewChannel) {
	var p struct {
		SocketPath string
		Reserved0  string
		Reserved1  uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(ssh.Prohibited, "bad payload")
		return
	}
	u, err := net.Dial("unix", p.SocketPath)
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, "open failed")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		u.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	go func() { io.Copy(u, ch); u.(*net.UnixConn).CloseWrite() }()
	io.Copy(ch, u)
	ch.Close()
	u.Close()
}
