package backup

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// chunkFormat is the first byte of every sealed chunk and manifest.
const chunkFormat = 1

const nonceSize = 12

// ErrCorrupt reports an object that fails to authenticate, decompress or
// match its name.
var ErrCorrupt = errors.New("corrupt backup object")

// The zstd coders are expensive to create; one of each serves every
// goroutine (EncodeAll and DecodeAll are safe for concurrent use).
var (
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
		if err != nil {
			panic(err)
		}
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// ChunkKey returns the object key of the chunk named id:
// "chunks/<first two hex digits>/<id>".
func ChunkKey(id string) string {
	if len(id) < 2 {
		return "chunks/" + id
	}
	return "chunks/" + id[:2] + "/" + id
}

// chunkID names a chunk by the keyed hash of its plaintext.
func (r *Repo) chunkID(plain []byte) string {
	m := hmac.New(sha256.New, r.idKey)
	m.Write(plain)
	return hex.EncodeToString(m.Sum(nil))
}

// validID reports whether id looks like a chunk id.
func validID(id string) bool {
	if len(id) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// seal compresses and encrypts plain into dst[:0]: format byte, nonce,
// AES-GCM of the zstd frame with aad as additional data.
func seal(aead cipher.AEAD, dst, plain, zbuf []byte, aad string) ([]byte, []byte) {
	zbuf = encoder().EncodeAll(plain, zbuf[:0])
	dst = append(dst[:0], chunkFormat)
	dst = append(dst, make([]byte, nonceSize)...)
	rand.Read(dst[1 : 1+nonceSize])
	dst = aead.Seal(dst, dst[1:1+nonceSize], zbuf, []byte(aad))
	return dst, zbuf
}

// unseal authenticates, decrypts and decompresses an object sealed with
// aad, appending the plaintext to dst.
func unseal(aead cipher.AEAD, dst, obj []byte, aad string) ([]byte, error) {
	if len(obj) < 1+nonceSize+aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(obj))
	}
	if obj[0] != chunkFormat {
		return nil, fmt.Errorf("%w: unknown format %d", ErrCorrupt, obj[0])
	}
	z, err := aead.Open(nil, obj[1:1+nonceSize], obj[1+nonceSize:], []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	plain, err := decoder().DecodeAll(z, dst)
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
	}
	return plain, nil
}

// openChunk checks a fetched chunk object and returns its plaintext
// appended to dst: it must decrypt under its id and hash back to it.
func (r *Repo) openChunk(id string, obj, dst []byte) ([]byte, error) {
	plain, err := unseal(r.chunkAEAD, dst, obj, id)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", id, err)
	}
	if got := r.chunkID(plain[len(dst):]); got != id {
		return nil, fmt.Errorf("chunk %s: %w: its content hashes to %s", id, ErrCorrupt, got)
	}
	return plain, nil
}

// Chunk returns the content of the chunk named id: fetched, authenticated,
// decompressed and its id checked. A missing chunk is ErrNotFound, a
// damaged one ErrCorrupt.
func (r *Repo) Chunk(ctx context.Context, id string) ([]byte, error) {
	if !validID(id) {
		return nil, fmt.Errorf("chunk %q: not a chunk id", id)
	}
	obj, err := r.t.Get(ctx, ChunkKey(id))
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", id, err)
	}
	return r.openChunk(id, obj, nil)
}
