package auth

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// StreamTTL is how long a stream token may wait before it opens its stream.
const StreamTTL = 60 * time.Second

// maxStreamGrants bounds the memory unused stream tokens can take; the
// API's per-owner rate limit on issuing them keeps honest use far below.
const maxStreamGrants = 10000

const streamPrefix = "bstream_"

// StreamGrants issues stream tokens: short-lived, single-use secrets that
// open one live event stream on behalf of the API token that asked for one.
// Browsers' EventSource cannot send an Authorization header, and an API
// token in a URL ends up in logs, proxies and history; a stream token there
// is worth little: it opens one read-only stream, once, within a minute.
//
// Grants live in memory, keyed by the SHA-256 of the secret, rather than
// being HMAC-signed: single use needs server-side state anyway, a grant
// lost to a restart costs the browser one reconnect, and one bureau process
// serves each host's API, so no other process needs to check them. No
// signing key to generate, keep or rotate.
type StreamGrants struct {
	mu        sync.Mutex
	now       func() time.Time
	grants    map[string]streamGrant
	lastSweep time.Time
}

type streamGrant struct {
	maker   string // the API token's id, checked again when redeemed
	expires time.Time
}

// NewStreamGrants returns an empty set of stream grants.
func NewStreamGrants() *StreamGrants {
	return &StreamGrants{now: time.Now, grants: map[string]streamGrant{}}
}

// Issue makes a stream token for maker, valid for StreamTTL or until maker
// expires, whichever comes first.
func (g *StreamGrants) Issue(maker *desktop.Token) (string, time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Sub(g.lastSweep) >= StreamTTL || len(g.grants) >= maxStreamGrants {
		g.sweep(now)
	}
	if len(g.grants) >= maxStreamGrants {
		return "", time.Time{}, fmt.Errorf("too many unused stream tokens; retry in a minute: %w", desktop.ErrUnavailable)
	}
	expires := now.Add(StreamTTL)
	if maker.ExpiresAt != nil && maker.ExpiresAt.Before(expires) {
		expires = *maker.ExpiresAt
	}
	b := make([]byte, 32)
	rand.Read(b)
	secret := streamPrefix + base64.RawURLEncoding.EncodeToString(b)
	g.grants[Hash(secret)] = streamGrant{maker: maker.ID, expires: expires}
	return secret, expires, nil
}

// Redeem spends a stream token and returns the id of the API token that
// made it; the caller checks that token is still usable. A second use, an
// expired or an unknown secret is unauthorized.
func (g *StreamGrants) Redeem(secret string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := Hash(secret)
	gr, ok := g.grants[h]
	delete(g.grants, h)
	if !ok || !g.now().Before(gr.expires) {
		return "", fmt.Errorf("stream token unknown, used or expired; ask for a new one: %w", desktop.ErrUnauthorized)
	}
	return gr.maker, nil
}

// sweep forgets expired grants.
func (g *StreamGrants) sweep(now time.Time) {
	for h, gr := range g.grants {
		if !now.Before(gr.expires) {
			delete(g.grants, h)
		}
	}
	g.lastSweep = now
}
