package access

import (
	"sync"
	"sync/atomic"
	"time"
)

// failLimiter limits failed authentication attempts per client address: a
// token bucket of failBurst attempts refilled at one per failRefill. While
// an address's bucket is empty, every request from it that presents
// credentials is refused (429, Retry-After) without checking them;
// requests without credentials (anonymous access, the OCI challenge) are
// not affected.
//
// Memory: at most failEntries addresses (about 100 bytes each, ~1 MiB).
// When the table is full, entries whose bucket has refilled are dropped;
// if none has, an arbitrary one is, so an attacker spread over more than
// failEntries addresses can make the limit forget some of them, never grow
// the table.
type failLimiter struct {
	mu sync.Mutex
	m  map[string]*failBucket
	// until is the latest time (Unix ns) any address is refused until:
	// while it is past, nobody is refused, and a request with credentials
	// skips the table (no lock, no address parsing).
	until atomic.Int64
}

type failBucket struct {
	tokens float64
	last   time.Time
	warned bool
}

const (
	failBurst   = 10              // failures allowed at once
	failRefill  = 6 * time.Second // one more failure allowed every 6 s (10 a minute)
	failEntries = 10000
)

func newFailLimiter() *failLimiter { return &failLimiter{m: map[string]*failBucket{}} }

func (b *failBucket) refill(now time.Time) {
	b.tokens += float64(now.Sub(b.last)) / float64(failRefill)
	if b.tokens > failBurst {
		b.tokens = failBurst
	}
	b.last = now
}

// anyBlocked reports whether some address may be refused at now.
func (l *failLimiter) anyBlocked(now time.Time) bool { return now.UnixNano() < l.until.Load() }

// wait returns how many seconds key must wait before its credentials are
// checked again (0: go ahead).
func (l *failLimiter) wait(key string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[key]
	if b == nil {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return int((1-b.tokens)*failRefill.Seconds()) + 1
}

// fail records a failure for key; it returns true when this one used up
// the bucket (the first time in a while: worth one log line).
func (l *failLimiter) fail(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[key]
	if b == nil {
		if len(l.m) >= failEntries {
			l.evict(now)
		}
		b = &failBucket{tokens: failBurst, last: now}
		l.m[key] = b
	}
	b.refill(now)
	b.tokens--
	if b.tokens < 1 {
		until := now.Add(time.Duration((1 - b.tokens) * float64(failRefill))).UnixNano()
		for cur := l.until.Load(); until > cur && !l.until.CompareAndSwap(cur, until); cur = l.until.Load() {
		}
	}
	if b.tokens < 1 && !b.warned {
		b.warned = true
		return true
	}
	if b.tokens >= failBurst-1 {
		b.warned = false
	}
	return false
}

// evict makes room for one entry (l.mu held).
func (l *failLimiter) evict(now time.Time) {
	for k, b := range l.m {
		b.refill(now)
		if b.tokens >= failBurst {
			delete(l.m, k)
		}
	}
	for k := range l.m {
		if len(l.m) < failEntries {
			return
		}
		delete(l.m, k)
	}
}
