package api

import (
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
)

// limiter keeps one token bucket per API token and class.
type limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter() *limiter {
	return &limiter{now: time.Now, buckets: map[string]*bucket{}}
}

// take spends one request of class for key; when the budget is empty it
// says how long until the next request is allowed.
func (l *limiter) take(key string, c rateClass) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[c.name+"/"+key]
	if !ok {
		b = &bucket{tokens: c.burst, at: now}
		l.buckets[c.name+"/"+key] = b
	}
	b.tokens = math.Min(c.burst, b.tokens+now.Sub(b.at).Seconds()*c.perSecond)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / c.perSecond * float64(time.Second))
}

// rateLimited wraps a handler with a per-token budget of class c; over it
// the answer is 429 with Retry-After.
func (s *server) rateLimited(c rateClass, h gin.HandlerFunc) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		if ok, wait := s.limits.take(caller(ctx).ID, c); !ok {
			secs := int(math.Ceil(wait.Seconds()))
			ctx.Header("Retry-After", strconv.Itoa(secs))
			ctx.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": errorBody{Code: "rate_limited",
				Message: fmt.Sprintf("too many %s requests for this token: at most %.0f at once and %.2g per second; retry in %d s",
					c.name, c.burst, c.perSecond, secs)}})
			return
		}
		h(ctx)
	}
}
