// Package bench holds the load benchmarks of the REST API: a fast seeder that
// writes calls straight into the database, a bare net/http JSON handler to
// compare against, a closed- and open-loop load generator and the writer of
// docs/benchmarks.md. The entry point is ./cmd/benchapi (`make bench-api`).
//
// It also holds what the benches of calls (./cmd/benchsip, ./cmd/benchtwilio)
// measure with, so that their figures are comparable: the speech-like signal
// and the feeder that keeps the product's pacers ahead (pacing.go), each
// frame's lateness against its schedule (FrameSchedule, Lateness), the
// bare-pacer baseline, and CPU times from /proc with the wait for a quiet
// machine (cpu.go).
package bench

import (
	"context"
	"database/sql"
	"encoding/base32"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/store/sqlstore"
)

// callCols is the column list of the calls table (migrations/00001_core.sql).
const callCols = `id, org_id, type, status, assistant_id, purchase_id, from_number, to_number, provider, attempt_id, outcome, ended_reason, created_at, updated_at, started_at, ended_at`

const nCallCols = 16

// Statuses and values as the schema stores them (internal/call).
const (
	stQueued = iota
	stRinging
	stInProgress
	stEnded
)

// CountKey is one row of call_counts.
type CountKey struct {
	Org    string
	Type   string
	Status int
}

// SeedSpec says what to seed.
type SeedSpec struct {
	OrgID string
	Calls int
	// OtherOrgID/OtherCalls seed a second organization, interleaved in time,
	// so the org_id prefix of the listing index has to do its job.
	OtherOrgID string
	OtherCalls int
	// Dollar rewrites ? to $n (PostgreSQL).
	Dollar bool
	// Batch is rows per multi-row INSERT (default 500).
	Batch int
	// Now anchors created_at: the newest call is a little before Now.
	Now time.Time
	// Seed makes the rows reproducible (ids included).
	Seed uint64
}

// SeedResult is what was written.
type SeedResult struct {
	Rows   int
	Counts map[CountKey]int64
	Took   time.Duration
	// PhoneCalls is the org's phone calls (what type=phone totals).
	PhoneCalls int64
}

// Seed writes the calls and the matching call_counts rows in one transaction
// through db, the database's writer, using a prepared multi-row INSERT.
func Seed(ctx context.Context, db *sql.DB, sp SeedSpec) (SeedResult, error) {
	start := time.Now()
	if sp.Batch <= 0 {
		sp.Batch = 500
	}
	if sp.Now.IsZero() {
		sp.Now = time.Now()
	}
	total := sp.Calls + sp.OtherCalls
	res := SeedResult{Counts: map[CountKey]int64{}}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return res, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit

	if sp.OtherOrgID != "" {
		if _, err := tx.ExecContext(ctx, rebind(sp.Dollar, `INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)`),
			sp.OtherOrgID, "bench-other", sp.Now.Add(-400*24*time.Hour).UnixMilli()); err != nil {
			return res, fmt.Errorf("insert other org: %w", err)
		}
	}

	full, err := tx.PrepareContext(ctx, insertSQL(sp.Dollar, sp.Batch))
	if err != nil {
		return res, fmt.Errorf("prepare insert: %w", err)
	}
	defer full.Close()

	g := newGen(sp)
	args := make([]any, 0, sp.Batch*nCallCols)
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		var err error
		if rows == sp.Batch {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertSQL(sp.Dollar, rows), args...)
		}
		args, rows = args[:0], 0
		return err
	}
	// Every otherEvery-th row belongs to the other organization.
	otherEvery := 0
	if sp.OtherCalls > 0 {
		otherEvery = max(1, total/sp.OtherCalls)
	}
	orgLeft, otherLeft := sp.Calls, sp.OtherCalls
	for i := 0; i < total; i++ {
		org := sp.OrgID
		if otherLeft > 0 && (orgLeft == 0 || otherEvery > 0 && i%otherEvery == otherEvery/2) {
			org = sp.OtherOrgID
			otherLeft--
		} else {
			orgLeft--
		}
		r := g.next(org, total-i)
		res.Counts[CountKey{org, r.typ, r.status}]++
		if org == sp.OrgID && r.typ == "phone" {
			res.PhoneCalls++
		}
		args = append(args, r.id, org, r.typ, r.status, r.assistant, r.purchase, r.from, r.to, r.provider, r.attempt,
			r.outcome, r.reason, r.created, r.updated, r.started, r.ended)
		rows++
		res.Rows++
		if rows == sp.Batch {
			if err := flush(); err != nil {
				return res, fmt.Errorf("insert calls (row %d): %w", i, err)
			}
		}
	}
	if err := flush(); err != nil {
		return res, fmt.Errorf("insert calls: %w", err)
	}

	// call_counts: one row per (org, type, status), in shard 0, holding
	// the exact total.
	up := rebind(sp.Dollar, `INSERT INTO call_counts (org_id, type, status, shard, n) VALUES (?, ?, ?, 0, ?)
		ON CONFLICT (org_id, type, status, shard) DO UPDATE SET n = excluded.n`)
	for k, n := range res.Counts {
		if _, err := tx.ExecContext(ctx, up, k.Org, k.Type, k.Status, n); err != nil {
			return res, fmt.Errorf("set call_counts: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("commit seed: %w", err)
	}
	res.Took = time.Since(start)
	return res, nil
}

func insertSQL(dollar bool, rows int) string {
	var b strings.Builder
	b.Grow(64 + rows*(nCallCols*4+4))
	b.WriteString("INSERT INTO calls (" + callCols + ") VALUES ")
	n := 0
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := 0; c < nCallCols; c++ {
			if c > 0 {
				b.WriteString(", ")
			}
			n++
			if dollar {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(n))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// rebind turns ? into $1, $2, … for PostgreSQL.
func rebind(dollar bool, q string) string {
	if !dollar {
		return q
	}
	return sqlstore.Rebind(q)
}

// row is one generated call, in schema types.
type row struct {
	id, typ                                 string
	status                                  int
	assistant, purchase, from, to, provider string
	attempt, outcome, reason                string
	created, updated, started, ended        int64
}

// gen makes realistic calls: 60% phone, mostly ended with a mix of
// outcomes, the newest few still live; created_at strictly increasing,
// ~30 s apart on average, ending just before Now.
type gen struct {
	rng        *rand.Rand
	enc        *base32.Encoding
	created    int64
	assistants []string
	purchases  []string
	froms      []string
	live       int // the newest `live` rows are not ended
}

func newGen(sp SeedSpec) *gen {
	g := &gen{
		rng: rand.New(rand.NewPCG(sp.Seed, 0x5eed)),
		enc: base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding),
	}
	total := sp.Calls + sp.OtherCalls
	// Start so that total rows at an average step of 30 s end ~1 min before Now.
	g.created = sp.Now.Add(-time.Minute).UnixMilli() - int64(total)*30_000
	for range 12 {
		g.assistants = append(g.assistants, g.id("asst"))
	}
	for range 4 {
		g.purchases = append(g.purchases, g.id("pn"))
		g.froms = append(g.froms, fmt.Sprintf("+1415555%04d", g.rng.IntN(10000)))
	}
	g.live = max(20, total/50_000)
	return g
}

// id is prefix + "_" + 26 lowercase base32 characters, like internal/id.
func (g *gen) id(prefix string) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return prefix + "_" + g.enc.EncodeToString(b[:])
}

func (g *gen) pick(p []string) string { return p[g.rng.IntN(len(p))] }

// next makes the next call; left counts this row and the ones after it.
func (g *gen) next(org string, left int) row {
	g.created += 1 + g.rng.Int64N(59_999)
	r := row{id: g.id("call"), assistant: g.pick(g.assistants), created: g.created}
	phone := g.rng.IntN(100) < 60
	if phone {
		r.typ = "phone"
		r.purchase, r.from, r.provider = g.pick(g.purchases), g.pick(g.froms), "sandbox"
		r.to = fmt.Sprintf("+1%03d555%04d", 200+g.rng.IntN(800), g.rng.IntN(10000))
		if g.rng.IntN(100) < 40 {
			r.attempt = g.id("att")
		}
	} else {
		r.typ = "web"
	}
	ring := int64(0)
	if phone {
		ring = 2_000 + g.rng.Int64N(18_000)
	}
	if left <= g.live {
		// Live calls, updated recently so housekeeping leaves them alone.
		switch p := g.rng.IntN(100); {
		case p < 15:
			r.status, r.updated = stQueued, r.created
		case p < 35 && phone:
			r.status, r.updated = stRinging, r.created+500
		default:
			r.status = stInProgress
			r.started = r.created + ring
			r.updated = r.started
		}
		return r
	}
	r.status = stEnded
	talk := func() {
		r.started = r.created + ring
		r.ended = r.started + 15_000 + g.rng.Int64N(585_000)
	}
	p := g.rng.IntN(100)
	switch {
	case phone && p < 55, !phone && p < 85:
		r.outcome = "completed"
		talk()
		r.reason = "customer-ended-call"
		if g.rng.IntN(100) < 35 {
			r.reason = "assistant-ended-call"
		}
	case phone && p < 70:
		r.outcome, r.reason, r.ended = "no-answer", "customer-did-not-answer", r.created+30_000
	case phone && p < 78:
		r.outcome, r.reason, r.ended = "busy", "customer-busy", r.created+ring
	case phone && p < 88:
		r.outcome, r.reason = "voicemail", "customer-voicemail"
		talk()
	case p < 95:
		r.outcome, r.reason, r.ended = "failed", "provider-failed", r.created+1_000
		if !phone {
			r.reason, r.ended = "client-never-connected", r.created+60_000
		}
	default:
		r.outcome, r.reason, r.ended = "canceled", "schedule-canceled", r.created+500
		if !phone || r.attempt == "" {
			r.reason = "system-shutdown"
		}
	}
	r.updated = r.ended
	return r
}
