// Package throttle keeps unauthenticated floods cheap: it tells which
// client sent a request (trusting X-Forwarded-For only from configured
// proxies), gives each client a budget of refused requests (failed API key
// checks, refused gateway handshakes) and, once it is spent, lets the REST
// API and the gateway answer 429 before they touch the database; and it
// logs refusals by sample and count instead of one line each. The REST API
// and the gateway share one Limiter, so a client that floods either is
// slowed on both.
package throttle

import (
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxClients bounds the clients a Limiter remembers (about 100
// bytes each).
const DefaultMaxClients = 1 << 16

// sweepEvery is how often a Limiter drops the clients whose budget has
// refilled, which it would forget anyway.
const sweepEvery = time.Minute

// Limiter is a token bucket of refusals per client: a client may be refused
// Burst times in a row, then Rate times a second. Requests that succeed
// spend nothing, so a client that does not fail is never limited.
//
// A client is an IPv4 address or an IPv6 /64 (one subscriber's network:
// an attacker who owns a /64 could otherwise rotate through 2^64
// addresses). Memory is bounded: a client whose budget is full again is
// forgotten, and past MaxClients a random client is forgotten to make room.
//
// A nil *Limiter limits nothing.
type Limiter struct {
	rate  float64
	burst float64
	max   int
	now   func() time.Time

	mu        sync.Mutex
	clients   map[netip.Prefix]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// LimiterConfig configures a Limiter.
type LimiterConfig struct {
	// Rate is refusals per second a client may add once its burst is spent.
	Rate float64
	// Burst is how many refusals in a row a client may have (at least 1).
	Burst int
	// MaxClients bounds memory (default DefaultMaxClients).
	MaxClients int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewLimiter returns a Limiter, or nil (no limit) when cfg.Rate <= 0.
func NewLimiter(cfg LimiterConfig) *Limiter {
	if cfg.Rate <= 0 {
		return nil
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{rate: cfg.Rate, burst: float64(max(cfg.Burst, 1)), max: cfg.MaxClients, now: cfg.Now,
		clients: map[netip.Prefix]*bucket{}, lastSweep: cfg.Now()}
}

// key is the client an address belongs to.
func key(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// refill adds the tokens earned since b.at; it reports whether the budget
// is full again (the bucket then says nothing worth keeping).
func (l *Limiter) refill(b *bucket, now time.Time) bool {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
	return b.tokens >= l.burst
}

// Blocked reports whether addr has spent its budget, and if so how long
// until it may be refused once more. It spends nothing: callers answer a
// blocked client 429 at once, without the lookup its request would cost.
func (l *Limiter) Blocked(addr netip.Addr) (time.Duration, bool) {
	if l == nil {
		return 0, false
	}
	k := key(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[k]
	if b == nil {
		return 0, false
	}
	if l.refill(b, l.now()) {
		delete(l.clients, k)
		return 0, false
	}
	if b.tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), true
}

// Refused spends one refusal of addr's budget.
func (l *Limiter) Refused(addr netip.Addr) {
	if l == nil {
		return
	}
	k := key(addr)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[k]
	if b == nil {
		l.makeRoom(now)
		b = &bucket{tokens: l.burst, at: now}
		l.clients[k] = b
	}
	l.refill(b, now)
	b.tokens = max(b.tokens-1, 0)
}

// makeRoom keeps the table under its bound before an insert. Once a
// minute (once a second while the table is full) it forgets every client
// whose budget has refilled; when the table is still full it forgets one
// client at random (map iteration starts at a random place), so an insert
// costs O(1) however the table is flooded.
func (l *Limiter) makeRoom(now time.Time) {
	full := len(l.clients) >= l.max
	if since := now.Sub(l.lastSweep); since >= sweepEvery || full && since >= time.Second {
		l.lastSweep = now
		for k, b := range l.clients {
			if l.refill(b, now) {
				delete(l.clients, k)
			}
		}
	}
	for k := range l.clients {
		if len(l.clients) < l.max {
			break
		}
		delete(l.clients, k)
	}
}

// Len is how many clients the Limiter remembers.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
