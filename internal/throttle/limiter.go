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
	"math"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxClients bounds the clients a Limiter remembers (about 100
// bytes each).
const DefaultMaxClients = 1 << 16

// sweepEvery is how often a Limiter drops the clients whose budget has
// refilled, which it would forget anyway.
const sweepEvery = time.Minute

// NetworkScale is how much larger the budget of an IPv6 /48 is than that
// of one of its /64s (burst and rate): a site's /48 holds 65,536 /64s, and
// without a budget of its own an attacker who owns one could spend 65,536
// budgets; with it, the /48 may be refused NetworkScale times as often as
// one client, so a few clients of a site that mistype keys at once are not
// slowed down.
const NetworkScale = 16

// evictTries is how many clients an insert into a full table looks at for
// one to forget (one that is not blocked), so an insert costs O(1) however
// the table is flooded.
const evictTries = 8

// Limiter is a token bucket of refusals per client: a client may be refused
// Burst times in a row, then Rate times a second. Requests that succeed
// spend nothing, so a client that does not fail is never limited.
//
// A client is an IPv4 address or an IPv6 /64 (one subscriber's network:
// an attacker who owns a /64 could otherwise rotate through 2^64
// addresses); an IPv6 client is also limited by the budget of its /48,
// NetworkScale times larger. Memory is bounded: a client whose budget is
// full again is forgotten, and past MaxClients a client that is not
// blocked is forgotten to make room (a blocked one never is: forgetting it
// would give it a new budget). When every client the table holds is
// blocked, a new client is not remembered, and its refusals are not
// limited until room is made.
//
// A nil *Limiter limits nothing.
type Limiter struct {
	burst [2]float64 // by tier: 0 the client, 1 its IPv6 /48
	rate  [2]float64
	max   int
	now   func() time.Time

	// size is len(clients), read without the lock: while no client has a
	// bucket (the usual state), Admit and Done cost one atomic load.
	size atomic.Int64

	mu        sync.Mutex
	clients   map[netip.Prefix]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
	tier   uint8
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
	burst := float64(max(cfg.Burst, 1))
	return &Limiter{
		burst: [2]float64{burst, NetworkScale * burst}, rate: [2]float64{cfg.Rate, NetworkScale * cfg.Rate},
		max: cfg.MaxClients, now: cfg.Now, clients: map[netip.Prefix]*bucket{}, lastSweep: cfg.Now(),
	}
}

// tiers are the budgets an address spends: its client's, and for IPv6 its
// /48's. n is how many there are.
func tiers(a netip.Addr) (keys [2]netip.Prefix, n int) {
	if a.Is6() {
		p64, _ := a.Prefix(64)
		p48, _ := a.Prefix(48)
		return [2]netip.Prefix{p64, p48}, 2
	}
	return [2]netip.Prefix{netip.PrefixFrom(a, a.BitLen())}, 1
}

// refill adds the tokens earned since b.at; it reports whether the budget
// is full again (the bucket then says nothing worth keeping).
func (l *Limiter) refill(b *bucket, now time.Time) bool {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst[b.tier], b.tokens+d.Seconds()*l.rate[b.tier])
		b.at = now
	}
	return b.tokens >= l.burst[b.tier]
}

func (l *Limiter) forget(k netip.Prefix) {
	delete(l.clients, k)
	l.size.Store(int64(len(l.clients)))
}

// Admission is Admit's answer, to be handed back to Done once the request
// is known to be refused or not.
type Admission struct {
	// Blocked says the client has spent its budget: answer 429 at once,
	// without the work a refusal would waste (a lookup). Otherwise the
	// request goes on.
	Blocked bool
	// Wait is how long until the client may be refused once more, when
	// Blocked.
	Wait time.Duration

	addr     netip.Addr
	reserved uint8 // bit i: Admit took a refusal of tier i in advance
}

// Admit decides, before the lookup a refused request would cost, whether
// addr may be refused once more, and if so takes that refusal from its
// budget at once (atomically with the check), so concurrent requests of
// one client cannot all pass the check before any is counted: Done gives
// it back if the request is not refused.
//
// Only budgets that exist are taken from. A client with none (every client
// that has not been refused lately) is admitted without taking anything,
// and without any lock while no client at all has a budget; its refusals
// are counted by Done. So the requests such a client has in flight when
// its first refusal is counted were all admitted: a concurrent flood from
// a new client gets Burst lookups plus those in flight at its start (each
// of which still spends one refusal, so the budget is spent at once).
func (l *Limiter) Admit(addr netip.Addr) Admission {
	if l == nil || l.size.Load() == 0 {
		return Admission{addr: addr} // the hot path, inlined
	}
	return l.admit(addr)
}

func (l *Limiter) admit(addr netip.Addr) Admission {
	a := Admission{addr: addr}
	keys, n := tiers(addr)
	var found [2]*bucket
	l.mu.Lock()
	found[0] = l.clients[keys[0]]
	if n == 2 {
		found[1] = l.clients[keys[1]]
	}
	if found[0] == nil && found[1] == nil {
		l.mu.Unlock()
		return a // a good client while others have budgets
	}
	now := l.now()
	for i, b := range found {
		if b == nil {
			continue
		}
		if l.refill(b, now) {
			l.forget(keys[i])
			found[i] = nil
			continue
		}
		if b.tokens < 1 {
			a.Blocked = true
			a.Wait = max(a.Wait, time.Duration((1-b.tokens)/l.rate[b.tier]*float64(time.Second)))
		}
	}
	if !a.Blocked {
		for i, b := range found {
			if b != nil {
				b.tokens--
				a.reserved |= 1 << i
			}
		}
	}
	l.mu.Unlock()
	return a
}

// Done reports how a request Admit answered ended. A refused request
// (refused true) spends one refusal of every budget Admit did not take one
// from in advance, and starts the client's budget if it had none; a
// request that was not refused gives back what Admit took. Done must be
// called once per Admit that did not block (and may be for one that did:
// a client whose budget is spent but whose request went on anyway, as an
// API key that passed before, spends on refusal like any other).
func (l *Limiter) Done(a Admission, refused bool) {
	if l == nil || !refused && a.reserved == 0 {
		return // the hot path, inlined: a good request that took nothing
	}
	l.done(a, refused)
}

func (l *Limiter) done(a Admission, refused bool) {
	keys, n := tiers(a.addr)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		b := l.clients[keys[i]]
		took := a.reserved&(1<<i) != 0
		switch {
		case !refused:
			if took && b != nil {
				b.tokens++
				if l.refill(b, now) {
					l.forget(keys[i])
				}
			}
		case took:
			// Spent by Admit (if the bucket was forgotten since, it was
			// not blocked: nothing is lost that would have mattered).
		default:
			if b == nil {
				if !l.makeRoom(now) {
					continue
				}
				b = &bucket{tokens: l.burst[i], at: now, tier: uint8(i)}
				l.clients[keys[i]] = b
				l.size.Store(int64(len(l.clients)))
			}
			l.refill(b, now)
			b.tokens = max(b.tokens-1, 0)
		}
	}
}

// makeRoom keeps the table under its bound before an insert and reports
// whether there is room. Once a minute (once a second while the table is
// full) it forgets every client whose budget has refilled; when the table
// is still full it forgets one client that is not blocked among the few
// it looks at (map iteration starts at a random place), so an insert
// costs O(1) however the table is flooded. A blocked client is never
// forgotten: when none of those looked at can go, there is no room.
func (l *Limiter) makeRoom(now time.Time) bool {
	full := len(l.clients) >= l.max
	if since := now.Sub(l.lastSweep); since >= sweepEvery || full && since >= time.Second {
		l.lastSweep = now
		for k, b := range l.clients {
			if l.refill(b, now) {
				delete(l.clients, k)
			}
		}
		l.size.Store(int64(len(l.clients)))
	}
	if len(l.clients) < l.max {
		return true
	}
	tries := 0
	for k, b := range l.clients {
		if l.refill(b, now) || b.tokens >= 1 {
			l.forget(k)
			return true
		}
		if tries++; tries == evictTries {
			break
		}
	}
	return false
}

// Len is how many budgets the Limiter remembers (clients, and IPv6 /48s).
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// RetryAfter is the Retry-After header's value for a wait: whole seconds,
// rounded up, at least 1 (a client told 0 would retry at once).
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(max(int(math.Ceil(wait.Seconds())), 1))
}
