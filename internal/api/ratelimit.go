package api

import (
	"container/list"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// rateClass is a budget for a kind of expensive request: burst requests at
// once, refilled at perSecond.
type rateClass struct {
	name      string
	burst     float64
	perSecond float64
}

var (
	// heavy requests make disks or VMs: creates, snapshots, reimages, imports.
	rateHeavy = rateClass{"heavy", 10, 10.0 / 60}
	// screen requests grab or drive the screen.
	rateScreen = rateClass{"screen", 50, 20}
	// stream requests ask for stream tokens: a browser needs one per
	// (re)connect, so this only stops floods of them.
	rateStream = rateClass{"stream", 20, 1}
)

// Bounds on the limiter's memory: a bucket that has refilled to full is
// the same as no bucket, so sweeps drop those, and past maxRateKeys the
// least recently used bucket (the one that has had longest to refill) is
// dropped to make room. Dropping one that is not full yet hands its owner
// a fresh burst early; with a bucket per owner and class, that takes
// thousands of owners busy at once, and beats refusing newcomers.
const (
	maxRateKeys    = 10000
	rateSweepEvery = time.Minute
)

// limiter keeps one token bucket per key (an owner) and class, in
// least-recently-used order.
type limiter struct {
	mu        sync.Mutex
	now       func() time.Time
	maxKeys   int
	buckets   map[string]*list.Element // of *bucket
	lru       *list.List               // front: most recently used
	lastSweep time.Time
}

type bucket struct {
	key    string
	class  rateClass
	tokens float64
	at     time.Time
}

// level is how full the bucket is at now.
func (b *bucket) level(now time.Time) float64 {
	return math.Min(b.class.burst, b.tokens+now.Sub(b.at).Seconds()*b.class.perSecond)
}

func newLimiter() *limiter {
	return &limiter{now: time.Now, maxKeys: maxRateKeys, buckets: map[string]*list.Element{}, lru: list.New()}
}

// take spends one request of class for key; when the budget is empty it
// says how long until the next request is allowed.
func (l *limiter) take(key string, c rateClass) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.lastSweep) >= rateSweepEvery {
		l.sweep(now)
	}
	k := c.name + "/" + key
	el, ok := l.buckets[k]
	if ok {
		l.lru.MoveToFront(el)
	} else {
		for len(l.buckets) >= l.maxKeys {
			l.drop(l.lru.Back())
		}
		el = l.lru.PushFront(&bucket{key: k, class: c, tokens: c.burst, at: now})
		l.buckets[k] = el
	}
	b := el.Value.(*bucket)
	b.tokens, b.at = b.level(now), now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / c.perSecond * float64(time.Second))
}

// sweep drops the buckets that are full again.
func (l *limiter) sweep(now time.Time) {
	for el := l.lru.Back(); el != nil; {
		prev := el.Prev()
		if b := el.Value.(*bucket); b.level(now) >= b.class.burst {
			l.drop(el)
		}
		el = prev
	}
	l.lastSweep = now
}

func (l *limiter) drop(el *list.Element) {
	delete(l.buckets, el.Value.(*bucket).key)
	l.lru.Remove(el)
}

// rateLimited wraps a handler with a budget of class c per owner: per
// token, minting more tokens would multiply it. Admins are limited too
// (under their own owner name); they have no quota, but a runaway script
// should still not flood the host. Over budget the answer is 429 with
// Retry-After.
func (s *core) rateLimited(c rateClass, h gin.HandlerFunc) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		if ok, wait := s.limits.take(caller(ctx).Owner, c); !ok {
			secs := int(math.Ceil(wait.Seconds()))
			ctx.Header("Retry-After", strconv.Itoa(secs))
			ctx.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": errorBody{Code: "rate_limited",
				Message: fmt.Sprintf("too many %s requests for this owner: at most %.0f at once and %.2g per second; retry in %d s",
					c.name, c.burst, c.perSecond, secs)}})
			return
		}
		h(ctx)
	}
}
