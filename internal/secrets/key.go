package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KeySize is the size of the key (AES-256).
const KeySize = 32

// LoadOrCreateKey reads the key at path, or makes one (on first start):
// random, written 0600 atomically. A key of the wrong size, or one others
// may read, is refused.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets key %s is readable by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets key %s holds %d bytes, want %d: it is not a key bureau made", path, len(key), KeySize)
	}
	return key, nil
}

func createKey(path string) ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".secrets-key-*")
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	// Link rather than rename: two bureaus starting at once keep one key.
	if err := os.Link(f.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return LoadOrCreateKey(path)
		}
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return key, nil
}

// AEAD is AES-256-GCM under a KeySize key: what bureau seals with.
func AEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: a key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return aead, nil
}
