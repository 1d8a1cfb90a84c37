package backup

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/hkdf"
)

// CellSize is the size of the cells a disk is cut into; a chunk is one
// cell's content.
const CellSize = 1 << 20

// formatVersion is the repository format this package writes and reads.
const formatVersion = 1

// configKey is the object holding the repository's config.
const configKey = "config"

// keyCheckText is what the config's key check is the HMAC of.
const keyCheckText = "bureau backup repository key check"

// ErrWrongKey reports a target whose backups were written with another
// backup key.
var ErrWrongKey = errors.New("the target's backups were written with another key")

// config is the plain-text "config" object of a repository.
type config struct {
	Version  int    `json:"version"`
	ID       string `json:"id"`
	KeyCheck string `json:"key_check"`
}

// Repo is a backup repository in a Target, opened with the install's
// backup key. It is safe for concurrent use.
type Repo struct {
	t  Target
	id string

	idKey        []byte // HMAC key naming chunks
	chunkAEAD    cipher.AEAD
	manifestAEAD cipher.AEAD
}

// subkey derives a 32-byte key for one purpose from the backup key.
func subkey(key []byte, purpose string) []byte {
	k := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, key, nil, []byte("bureau backup v1 "+purpose)), k); err != nil {
		panic(err) // hkdf yields far more than 32 bytes
	}
	return k
}

func newGCM(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // the key is 32 bytes
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

func keyCheck(key []byte) string {
	m := hmac.New(sha256.New, subkey(key, "key check"))
	m.Write([]byte(keyCheckText))
	return hex.EncodeToString(m.Sum(nil))
}

// Open opens the repository in t with the install's 32-byte backup key. An
// empty target gets a config (format version, a random repository id and
// a key check); otherwise the key check must match (else ErrWrongKey) and
// the format version be one this package reads.
func Open(ctx context.Context, t Target, key []byte) (*Repo, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("backup key: %d bytes, want 32", len(key))
	}
	cfg, err := readConfig(ctx, t)
	if errors.Is(err, ErrNotFound) {
		cfg, err = initConfig(ctx, t, key)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Version != formatVersion {
		return nil, fmt.Errorf("backup repository %s in %s: format version %d, this bureau reads version %d", cfg.ID, describe(t), cfg.Version, formatVersion)
	}
	if !hmac.Equal([]byte(cfg.KeyCheck), []byte(keyCheck(key))) {
		return nil, fmt.Errorf("backup repository %s in %s: %w", cfg.ID, describe(t), ErrWrongKey)
	}
	return &Repo{
		t: t, id: cfg.ID,
		idKey:        subkey(key, "chunk id"),
		chunkAEAD:    newGCM(subkey(key, "chunk encryption")),
		manifestAEAD: newGCM(subkey(key, "manifest encryption")),
	}, nil
}

func readConfig(ctx context.Context, t Target) (*config, error) {
	b, err := t.Get(ctx, configKey)
	if err != nil {
		return nil, fmt.Errorf("backup repository config: %w", err)
	}
	var cfg config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("backup repository config in %s: %w", describe(t), err)
	}
	return &cfg, nil
}

// initConfig writes the config of a new repository. A target that already
// holds backups but no config is refused rather than adopted.
func initConfig(ctx context.Context, t Target, key []byte) (*config, error) {
	if keys, err := t.List(ctx, "backups/"); err != nil {
		return nil, err
	} else if len(keys) > 0 {
		return nil, fmt.Errorf("backup target %s has backups but no config object: not a bureau repository, or a damaged one", describe(t))
	}
	id := make([]byte, 16)
	rand.Read(id)
	cfg := &config{Version: formatVersion, ID: hex.EncodeToString(id), KeyCheck: keyCheck(key)}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := t.Put(ctx, configKey, append(b, '\n')); err != nil {
		return nil, fmt.Errorf("initialise the backup repository: %w", err)
	}
	// Two installs may have raced to write it: the one stored wins.
	return readConfig(ctx, t)
}

// ID returns the repository's random id.
func (r *Repo) ID() string { return r.id }
