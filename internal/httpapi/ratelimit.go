package httpapi

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"switchboard/internal/id"
)

// Per-key rate limits. Each key (a secret key's per-second limit, a
// publishable key's per-minute one) has a token bucket on every node: a
// request takes a token or is refused 429 with the wait until the next
// one. That check touches no database, whatever the store.
//
// Several nodes on one PostgreSQL share a key's limit through the store
// (SyncLimits, every LimitSync): each node adds what it admitted since
// the last sync to the key's cluster-wide count (store.AddRateSpend), reads
// back the counts that changed lately (store.RateSpend), and takes what
// the other nodes admitted from its own bucket, which may go below zero:
// a node in debt refuses until the cluster is back under the rate. So over
// any interval of T seconds, N nodes admit at most
//
//	burst + rate·T + (N−1)·(burst + rate·D)
//
// requests of one key, where D is how late a node learns of another's
// admissions (at most two sync intervals plus a sync's own time: the
// other's push, then this node's read). The excess is the bursts the
// nodes spend before they hear of each other, and is paid back by debt:
// over a long interval the cluster's rate is the key's rate. A node that
// has not seen a key for a while (or has just started) starts its bucket
// full, which is what the (N−1)·burst term allows for. docs/api.md states
// it for users.
//
// On SQLite (one node) nothing is synced: the buckets are the limit.

// Sync of shared limits.
const (
	// DefaultLimitSync is how often a node syncs its buckets with the
	// others' (app.Config.RateLimitSync).
	DefaultLimitSync = 250 * time.Millisecond
	// limitHorizon is how far back a sync reads changed counts: longer
	// than any sync interval, with room for clocks a few seconds apart.
	limitHorizon = 10 * time.Second
	// limitForget is how long a full, unused bucket is kept.
	limitForget = time.Minute
	// limitPurgeAge is how long a key's count is kept unchanged in the
	// store before it is purged (a node seeing it again starts afresh).
	limitPurgeAge = time.Hour
	// limitPurgeEvery is how often a node purges old counts.
	limitPurgeEvery = time.Minute
)

// keyLimits is one kind of key's buckets: rate tokens a second, at most
// burst of them (a whole number, at least 1).
type keyLimits struct {
	rate, burst float64
	buckets     sync.Map // key id → *keyBucket
}

func newKeyLimits(rate, burst float64) *keyLimits {
	if rate <= 0 {
		return nil
	}
	return &keyLimits{rate: rate, burst: max(math.Floor(burst), 1)}
}

// keyBucket is one key's bucket on this node.
type keyBucket struct {
	mu     sync.Mutex
	tokens float64   // may be below zero: debt from other nodes
	at     time.Time // when tokens was last brought up to date
	// spent counts the requests admitted here since the last sync.
	spent int64
	// seen is the key's cluster-wide count as this node last knew it
	// (its own pushes included); -1 until a sync has read it.
	seen int64
	// used is when the bucket last changed (an admission or a debit).
	used time.Time
}

// bucket returns the bucket of key id, full when new.
func (l *keyLimits) bucket(kid string, now time.Time) *keyBucket {
	if v, ok := l.buckets.Load(kid); ok {
		return v.(*keyBucket)
	}
	v, _ := l.buckets.LoadOrStore(kid, &keyBucket{tokens: l.burst, at: now, seen: -1, used: now})
	return v.(*keyBucket)
}

// refill brings b's tokens up to now. The caller holds b.mu.
func (l *keyLimits) refill(b *keyBucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
}

// allow takes a token of key id, or says how long until there is one.
func (l *keyLimits) allow(kid string, now time.Time) (bool, time.Duration) {
	b := l.bucket(kid, now)
	b.mu.Lock()
	defer b.mu.Unlock()
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		b.spent++
		b.used = now
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, max(wait, time.Millisecond)
}

// rateLimits are the buckets of both kinds of keys and what SyncLimits
// keeps between runs.
type rateLimits struct {
	secret, public *keyLimits // nil when off

	mu        sync.Mutex // one SyncLimits at a time
	lastPurge time.Time
}

// of returns the limits that key id belongs to (nil when that kind is
// not limited).
func (r *rateLimits) of(kid string) *keyLimits {
	if strings.HasPrefix(kid, id.PublicKey+"_") {
		return r.public
	}
	return r.secret
}

// SyncLimits shares this node's rate-limit buckets with the other nodes
// on the same database: it adds what this node admitted since the last
// sync to each key's count in the store, reads the counts that changed
// lately and takes what other nodes admitted from this node's buckets.
// Main calls it every LimitSync when the database is PostgreSQL (on
// SQLite there is one node and nothing to share). On an error the counts
// not written are kept for the next sync.
func (s *Server) SyncLimits(ctx context.Context) error {
	rl := &s.keyLimiters
	rl.mu.Lock()
	defer rl.mu.Unlock()
	now := s.now()
	type pushed struct {
		b *keyBucket
		n int64
	}
	var taken []pushed
	batch := map[string]int64{}
	for _, l := range []*keyLimits{rl.secret, rl.public} {
		if l == nil {
			continue
		}
		l.buckets.Range(func(k, v any) bool {
			b := v.(*keyBucket)
			b.mu.Lock()
			n := b.spent
			b.spent = 0
			forget := n == 0 && now.Sub(b.used) > limitForget
			if forget {
				l.refill(b, now)
				forget = b.tokens >= l.burst
			}
			b.mu.Unlock()
			if n > 0 {
				batch[k.(string)] = n
				taken = append(taken, pushed{b, n})
			}
			if forget {
				l.buckets.CompareAndDelete(k, v)
			}
			return true
		})
	}
	if err := s.store.AddRateSpend(ctx, batch, now); err != nil {
		for _, p := range taken { // give them back for the next sync
			p.b.mu.Lock()
			p.b.spent += p.n
			p.b.mu.Unlock()
		}
		return err
	}
	for _, p := range taken {
		p.b.mu.Lock()
		if p.b.seen >= 0 {
			p.b.seen += p.n
		}
		p.b.mu.Unlock()
	}
	counts, err := s.store.RateSpend(ctx, now.Add(-limitHorizon))
	if err != nil {
		return err
	}
	for kid, total := range counts {
		l := rl.of(kid)
		if l == nil {
			continue
		}
		b := l.bucket(kid, now)
		b.mu.Lock()
		switch {
		case b.seen < 0 || total < b.seen:
			// First sight, or the count was purged and started again:
			// from here on.
			b.seen = total
		case total > b.seen:
			l.refill(b, now)
			b.tokens -= float64(total - b.seen)
			b.seen = total
			b.used = now
		}
		b.mu.Unlock()
	}
	var errs []error
	if now.Sub(rl.lastPurge) >= limitPurgeEvery {
		rl.lastPurge = now
		errs = append(errs, s.store.PurgeRateSpend(ctx, now.Add(-limitPurgeAge)))
	}
	return errors.Join(errs...)
}
