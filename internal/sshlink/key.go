package sshlink

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
)

// ClientKey loads bureau's SSH client key from path (an OpenSSH private
// key, unencrypted), creating an ed25519 one when the file is missing:
// mode 0600, its folder made 0700 when it does not exist. Two processes
// creating it at once end up with the same key.
func ClientKey(path string) (ssh.Signer, error) {
	if s, err := loadKey(path); !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	comment := "bureau"
	if h, err := os.Hostname(); err == nil {
		comment += "@" + h
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	// Written whole to a temporary file (0600 from the start), then
	// linked into place: never a half-written key, never clobbering one
	// another process made meanwhile.
	tmp, err := os.CreateTemp(dir, ".bureau-key-*")
	if err != nil {
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(pem.EncodeToMemory(block)); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("ssh client key: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("ssh client key: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("ssh client key: write %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	return loadKey(path)
}

func loadKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("ssh client key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	var pass *ssh.PassphraseMissingError
	if errors.As(err, &pass) {
		return nil, fmt.Errorf("ssh client key %s: protected by a passphrase; bureau needs an unencrypted key: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh client key %s: %w", path, err)
	}
	return s, nil
}
