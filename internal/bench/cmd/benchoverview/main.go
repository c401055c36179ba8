// Command benchoverview measures the dashboard's overview over 1,000,000
// calls spread over organizations, assistants and days as real use would
// spread them, on SQLite and PostgreSQL: Store.Overview (the two rollup
// reads) and the page itself (GET /ui/overview through ui.Server, signed
// in: assistants, rollups, charts, HTML). It writes the figures to
// docs/benchmarks.md (`make bench-overview`).
//
// The calls are written straight into the database, and their rollups
// (call_days, turn_latency) as FinishAnalysis leaves them: each call in
// its (day, assistant, outcome, reason) row with its analysis's success,
// and its replies' latency bucketed with store.LatencyBucket, under its
// assistant and under all assistants (”). The transcript turns and the
// analyses themselves are not written: the overview reads only the
// rollups.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/bench"
	"switchboard/internal/id"
	"switchboard/internal/nodetest"
	"switchboard/internal/operator"
	"switchboard/internal/store"
	"switchboard/internal/store/postgres"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/ui"
)

const makeArgs = "-calls 1000000 -postgres <ensure-postgres.sh> -out docs/benchmarks.md"

func main() {
	calls := flag.Int("calls", 1_000_000, "calls to seed, over all organizations")
	orgs := flag.Int("orgs", 40, "organizations (Zipf-sized: the largest has about a quarter of the calls)")
	days := flag.Int("days", 180, "days the calls are spread over, up to today")
	pg := flag.String("postgres", "", "PostgreSQL URL to create the run's database on (empty: SQLite only)")
	n := flag.Int("n", 400, "requests measured per case")
	out := flag.String("out", "", "write the section into this markdown file")
	flag.Parse()
	if err := run(*calls, *orgs, *days, *pg, *n, *out); err != nil {
		log.Fatal(err)
	}
}

// orgSpec is a seeded organization.
type orgSpec struct {
	id         string
	calls      int
	assistants []string
	email      string
}

// dataset is what was seeded, the same on each database.
type dataset struct {
	orgs     []orgSpec
	total    int
	callDays int // rollup rows written
	latency  int
	seeded   time.Duration
}

// caseResult is one measured case on one database.
type caseResult struct {
	name       string
	store, web []time.Duration
	rows       string
}

type dbResult struct {
	name  string
	data  dataset
	cases []caseResult
}

func run(calls, nOrgs, days int, pg string, n int, outPath string) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "benchoverview-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var results []dbResult

	sdb, err := sqlite.Open(ctx, filepath.Join(tmp, "sb.db"))
	if err != nil {
		return err
	}
	if err := sdb.Migrate(ctx); err != nil {
		return err
	}
	r, err := measure(ctx, "SQLite", sdb, sdb.Writer, false, calls, nOrgs, days, n)
	sdb.Close()
	if err != nil {
		return err
	}
	results = append(results, r)

	if pg != "" {
		u, drop, err := nodetest.CreatePostgres(ctx, pg, "sbbench_")
		if err != nil {
			return err
		}
		defer drop()
		pdb, err := postgres.Open(ctx, u)
		if err != nil {
			return err
		}
		if err := pdb.Migrate(ctx); err != nil {
			return err
		}
		w := stdlib.OpenDBFromPool(pdb.Pool)
		r, err := measure(ctx, "PostgreSQL", pdb, w, true, calls, nOrgs, days, n)
		w.Close()
		pdb.Close()
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	md := markdown(results, calls, nOrgs, days, n)
	fmt.Print(md)
	if outPath != "" {
		return bench.WriteSection(outPath, "## bench-overview", md)
	}
	return nil
}

// measure seeds db, then times each case through the store and the page.
func measure(ctx context.Context, name string, st store.Store, w *sql.DB, dollar bool, calls, nOrgs, days, n int) (dbResult, error) {
	fmt.Printf("%s: seeding %d calls …\n", name, calls)
	data, err := seed(ctx, st, w, dollar, calls, nOrgs, days)
	if err != nil {
		return dbResult{}, err
	}
	fmt.Printf("%s: seeded in %s (%d call_days rows, %d turn_latency rows)\n", name, data.seeded.Round(time.Second), data.callDays, data.latency)
	if _, err := w.ExecContext(ctx, "ANALYZE"); err != nil {
		return dbResult{}, err
	}
	web, err := newWeb(ctx, st, data.orgs)
	if err != nil {
		return dbResult{}, err
	}
	defer web.close()

	today := time.Now().UTC().Truncate(24 * time.Hour)
	rng := rand.New(rand.NewPCG(7, 11))
	weights := make([]float64, len(data.orgs))
	for i, o := range data.orgs {
		weights[i] = float64(o.calls)
	}
	pick := func() int { // an organization, as likely as its share of the calls
		x := rng.Float64() * float64(data.total)
		for i, wgt := range weights {
			if x -= wgt; x < 0 {
				return i
			}
		}
		return len(weights) - 1
	}
	type query struct {
		org int
		f   store.OverviewFilter
	}
	cases := []struct {
		name string
		next func() query
	}{
		{"realistic: an organization as likely as its share of the calls; the last 30 days ending on a random day of the 180; one assistant in 4 requests", func() query {
			o := pick()
			to := today.AddDate(0, 0, -rng.IntN(days))
			f := store.OverviewFilter{From: to.AddDate(0, 0, -29), To: to}
			if rng.IntN(4) == 0 {
				f.AssistantID = data.orgs[o].assistants[rng.IntN(len(data.orgs[o].assistants))]
			}
			return query{o, f}
		}},
		{"worst: the largest organization, 92 days (the longest period), every assistant", func() query {
			return query{0, store.OverviewFilter{From: today.AddDate(0, 0, -91), To: today}}
		}},
		{"best: the smallest organization, the last 7 days", func() query {
			return query{len(data.orgs) - 1, store.OverviewFilter{From: today.AddDate(0, 0, -6), To: today}}
		}},
	}
	res := dbResult{name: name, data: data}
	for _, c := range cases {
		cr := caseResult{name: c.name}
		var days0 int
		for i := range n + n/10 {
			q := c.next()
			start := time.Now()
			ov, err := st.Overview(ctx, data.orgs[q.org].id, q.f)
			if err != nil {
				return res, err
			}
			if i >= n/10 { // the first tenth warms up
				cr.store = append(cr.store, time.Since(start))
			}
			days0 = max(days0, len(ov.Days))
		}
		for i := range n + n/10 {
			q := c.next()
			start := time.Now()
			if err := web.get(ctx, q.org, q.f); err != nil {
				return res, err
			}
			if i >= n/10 {
				cr.web = append(cr.web, time.Since(start))
			}
		}
		cr.rows = fmt.Sprintf("up to %d (day, outcome, reason) sums", days0)
		res.cases = append(res.cases, cr)
		fmt.Printf("%s: %s: store p95 %s, page p95 %s\n", name, c.name, bench.Ms(quantile(cr.store, 0.95)), bench.Ms(quantile(cr.web, 0.95)))
	}
	return res, nil
}

// The outcomes and reasons of ended calls, with their shares.
var endings = []struct {
	outcome, reason string
	share           float64
	talk            bool
}{
	{"completed", "customer-ended-call", 0.35, true}, {"completed", "assistant-ended-call", 0.20, true},
	{"completed", "silence-timed-out", 0.03, true}, {"completed", "exceeded-max-duration", 0.02, true},
	{"no-answer", "customer-did-not-answer", 0.15, false}, {"busy", "customer-busy", 0.08, false},
	{"voicemail", "voicemail", 0.07, true}, {"failed", "provider-failed", 0.03, false},
	{"failed", "sip-provider-failed", 0.02, false}, {"failed", "system-error", 0.01, false},
	{"failed", "node-lost", 0.02, false}, {"canceled", "api-ended-call", 0.02, false},
}

type dayKey struct {
	org       int
	day       int64
	assistant int
	ending    int
}

type dayVal struct{ calls, durMS, evaluated, succeeded int64 }

type latKey struct {
	org       int
	day       int64
	assistant int
	stage     int
	bucket    int
}

// seed writes the organizations, their assistants and operators through
// the store, and the calls and their rollups through SQL.
func seed(ctx context.Context, st store.Store, w *sql.DB, dollar bool, calls, nOrgs, days int) (dataset, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.MinCost)
	if err != nil {
		return dataset{}, err
	}
	var d dataset
	var harmonic float64
	for k := 1; k <= nOrgs; k++ {
		harmonic += 1 / float64(k)
	}
	now := time.Now().UTC()
	for k := 1; k <= nOrgs; k++ {
		o := orgSpec{id: id.New(id.Org), calls: int(float64(calls) / harmonic / float64(k)), email: fmt.Sprintf("ops%d@bench.example", k)}
		if err := st.CreateOrg(ctx, auth.Org{ID: o.id, Name: fmt.Sprintf("Org %d", k), CreatedAt: now}); err != nil {
			return d, err
		}
		if err := st.CreateOperator(ctx, operator.Operator{ID: id.New(operator.IDPrefix), OrgID: o.id, Email: o.email, PasswordHash: hash, CreatedAt: now}); err != nil {
			return d, err
		}
		for j := range 2 + (k*7)%14 { // 2 to 15 assistants
			a := assistant.Defaults(assistant.DefaultProviders())
			a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), o.id, fmt.Sprintf("Assistant %d", j+1), now, now
			if err := st.CreateAssistant(ctx, a); err != nil {
				return d, err
			}
			o.assistants = append(o.assistants, a.ID)
		}
		d.orgs = append(d.orgs, o)
		d.total += o.calls
	}
	rollDays := map[dayKey]*dayVal{}
	rollLat := map[latKey]int64{}
	q := func(s string) string {
		if dollar {
			return rebind(s)
		}
		return s
	}
	const batch = 500
	cols := "id, org_id, type, status, assistant_id, purchase_id, from_number, to_number, provider, outcome, ended_reason, created_at, updated_at, started_at, ended_at, direction"
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", 16), ", ") + ")"
	insert := q("INSERT INTO calls (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", batch), ", "))
	// One transaction for the whole seed: commits per statement made it
	// take many minutes on a busy machine.
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return d, err
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return d, err
	}
	defer stmt.Close()
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		_, err := stmt.ExecContext(ctx, args...)
		args = args[:0]
		return err
	}
	today := now.Truncate(24 * time.Hour)
	for oi, o := range d.orgs {
		aw := zipfWeights(len(o.assistants))
		for range o.calls {
			cid := id.New(id.Call)
			// Days weigh by weekday (weekends a third) and grow toward today.
			var day int
			for {
				day = rng.IntN(days)
				wd := today.AddDate(0, 0, -day).Weekday()
				p := 0.6 + 0.4*float64(days-day)/float64(days)
				if wd == time.Saturday || wd == time.Sunday {
					p /= 3
				}
				if rng.Float64() < p {
					break
				}
			}
			created := today.AddDate(0, 0, -day).Add(time.Duration(8*3600+rng.IntN(11*3600)) * time.Second)
			ai := pickWeighted(rng, aw)
			ei := pickEnding(rng)
			e := endings[ei]
			var talk time.Duration
			if e.talk {
				talk = time.Duration(math.Exp(rng.NormFloat64()*0.8+math.Log(100)) * float64(time.Second))
				if e.outcome == "voicemail" {
					talk = time.Duration(20+rng.IntN(30)) * time.Second
				}
			}
			ring := time.Duration(3+rng.IntN(20)) * time.Second
			var startedMS, endedMS int64
			endedMS = created.Add(ring + talk).UnixMilli()
			if talk > 0 {
				startedMS = created.Add(ring).UnixMilli()
			}
			args = append(args, cid, o.id, "phone", 3, o.assistants[ai], "", "+14155550100", fmt.Sprintf("+1415%07d", rng.IntN(10_000_000)), "sandbox",
				e.outcome, e.reason, created.UnixMilli(), endedMS, startedMS, endedMS, "outbound")
			if len(args) == batch*16 {
				if err := flush(); err != nil {
					return d, err
				}
			}
			dayN := created.UnixMilli() / store.Day
			var add dayVal
			add.calls = 1
			if talk > 0 {
				add.durMS = endedMS - startedMS
			}
			if e.outcome == "completed" && rng.Float64() < 0.8 {
				add.evaluated = 1
				if rng.Float64() < 0.7 {
					add.succeeded = 1
				}
			}
			for _, a := range []int{ai, -1} { // its assistant's row and the organization's ('')
				dk := dayKey{oi, dayN, a, ei}
				v := rollDays[dk]
				if v == nil {
					v = &dayVal{}
					rollDays[dk] = v
				}
				v.calls += add.calls
				v.durMS += add.durMS
				v.evaluated += add.evaluated
				v.succeeded += add.succeeded
			}
			if e.outcome == "completed" {
				for range 2 + rng.IntN(6) { // the assistant's replies
					lat := turnLatency(rng)
					for si, us := range lat {
						b := store.LatencyBucket(us)
						rollLat[latKey{oi, dayN, ai, si, b}]++
						rollLat[latKey{oi, dayN, -1, si, b}]++
					}
				}
			}
		}
	}
	// The last partial batch, one row at a time.
	for len(args) > 0 {
		if _, err := tx.ExecContext(ctx, q("INSERT INTO calls ("+cols+") VALUES "+row), args[:16]...); err != nil {
			return d, err
		}
		args = args[16:]
	}
	// The rollups, and the totals the listing reads.
	var rows [][]any
	for k, v := range rollDays {
		e := endings[k.ending]
		a := ""
		if k.assistant >= 0 {
			a = d.orgs[k.org].assistants[k.assistant]
		}
		rows = append(rows, []any{d.orgs[k.org].id, k.day, a, e.outcome, e.reason, v.calls, v.durMS, v.evaluated, v.succeeded})
	}
	if err := insertRows(ctx, tx, q, "call_days (org_id, day, assistant_id, outcome, ended_reason, calls, duration_ms, evaluated, succeeded)", rows); err != nil {
		return d, err
	}
	d.callDays = len(rows)
	rows = rows[:0]
	for k, n := range rollLat {
		a := ""
		if k.assistant >= 0 {
			a = d.orgs[k.org].assistants[k.assistant]
		}
		rows = append(rows, []any{d.orgs[k.org].id, k.day, a, store.LatencyStages[k.stage], k.bucket, n})
	}
	if err := insertRows(ctx, tx, q, "turn_latency (org_id, day, assistant_id, stage, bucket, n)", rows); err != nil {
		return d, err
	}
	d.latency = len(rows)
	rows = rows[:0]
	for _, o := range d.orgs {
		rows = append(rows, []any{o.id, "phone", 3, 0, int64(o.calls), int64(o.calls)})
	}
	if err := insertRows(ctx, tx, q, "call_counts (org_id, type, status, shard, n, changes)", rows); err != nil {
		return d, err
	}
	if err := tx.Commit(); err != nil {
		return d, err
	}
	d.seeded = time.Since(start)
	return d, nil
}

// turnLatency is one voice reply's stages and total, in microseconds, in
// the order of store.LatencyStages.
func turnLatency(rng *rand.Rand) []int64 {
	logn := func(median, sigma float64) int64 {
		return int64(math.Exp(rng.NormFloat64()*sigma+math.Log(median)) * 1000)
	}
	st := []int64{logn(300, 0.3), logn(120, 0.5), logn(450, 0.6), logn(180, 0.4), logn(6, 0.5)}
	var total int64
	for _, v := range st {
		total += v
	}
	return append(st, total)
}

func insertRows(ctx context.Context, w *sql.Tx, q func(string) string, into string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	width := len(rows[0])
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for chunk := range slices.Chunk(rows, 1000) {
		var args []any
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := w.ExecContext(ctx, q("INSERT INTO "+into+" VALUES "+strings.TrimSuffix(strings.Repeat(row+", ", len(chunk)), ", ")), args...); err != nil {
			return err
		}
	}
	return nil
}

func zipfWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / float64(i+1)
	}
	return w
}

func pickWeighted(rng *rand.Rand, w []float64) int {
	var total float64
	for _, x := range w {
		total += x
	}
	x := rng.Float64() * total
	for i, v := range w {
		if x -= v; x < 0 {
			return i
		}
	}
	return len(w) - 1
}

func pickEnding(rng *rand.Rand) int {
	x := rng.Float64()
	for i, e := range endings {
		if x -= e.share; x < 0 {
			return i
		}
	}
	return 0
}

func rebind(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

const benchPassword = "a long bench password"

// web is the dashboard over the store, with a signed-in client per
// organization.
type web struct {
	srv     *httptest.Server
	dash    *ui.Server
	clients []*http.Client
}

func newWeb(ctx context.Context, st store.Store, orgs []orgSpec) (*web, error) {
	dash, err := ui.New(ui.Config{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	wb := &web{srv: httptest.NewServer(dash), dash: dash}
	for _, o := range orgs {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		rq, _ := http.NewRequestWithContext(ctx, http.MethodPost, wb.srv.URL+"/ui/login",
			strings.NewReader(url.Values{"email": {o.email}, "password": {benchPassword}}.Encode()))
		rq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rq.Header.Set("Origin", wb.srv.URL)
		res, err := c.Do(rq)
		if err != nil {
			wb.close()
			return nil, err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			wb.close()
			return nil, fmt.Errorf("sign in as %s: %d", o.email, res.StatusCode)
		}
		wb.clients = append(wb.clients, c)
	}
	return wb, nil
}

func (wb *web) get(ctx context.Context, org int, f store.OverviewFilter) error {
	v := url.Values{"from": {f.From.Format(time.DateOnly)}, "to": {f.To.Format(time.DateOnly)}}
	if f.AssistantID != "" {
		v.Set("assistant", f.AssistantID)
	}
	rq, err := http.NewRequestWithContext(ctx, http.MethodGet, wb.srv.URL+"/ui/overview?"+v.Encode(), nil)
	if err != nil {
		return err
	}
	res, err := wb.clients[org].Do(rq)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `id="overview-stats"`) {
		return fmt.Errorf("GET /ui/overview?%s: %d", v.Encode(), res.StatusCode)
	}
	return nil
}

func (wb *web) close() {
	wb.dash.Close()
	wb.srv.Close()
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)]
}

func markdown(rs []dbResult, calls, nOrgs, days, n int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	args := strings.Join(os.Args[1:], " ")
	cmd := "`go run ./internal/bench/cmd/benchoverview " + args + "`"
	if strings.Contains(args, "-postgres") && strings.Contains(args, "-calls 1000000") {
		cmd = "`make bench-overview` (" + strings.Replace(cmd, args, makeArgs, 1) + ")"
	}
	p("## bench-overview\n\n")
	p("The dashboard's overview (`/ui/overview`) over %s calls: `Store.Overview` (the two rollup reads) and the whole page\n", commas(calls))
	p("(`GET /ui/overview` through `ui.Server` on loopback, signed in: the assistants, the rollups, the charts, the HTML).\n\n")
	p("- **Date:** %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	p("- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; 1-minute load average %s after\n", runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, bench.LoadAvg())
	p("- **Command:** %s\n", cmd)
	if len(rs) > 0 {
		o := rs[0].data.orgs
		p("- **Data:** %s ended phone calls in %d organizations sized by Zipf (the largest %s calls, the smallest %s), 2 to 15 assistants each (Zipf-used), over %d days (weekends a third, growing toward today), 12 outcome/reason pairs in real shares; rollups as `FinishAnalysis` leaves them, a completed call's 2 to 7 replies in the latency histograms; seeded through SQL\n",
			commas(rs[0].data.total), nOrgs, commas(o[0].calls), commas(o[len(o)-1].calls), days)
	}
	p("- **Load:** one client, sequential; %d requests per case after %d of warm-up\n\n", n, n/10)
	p("| database | case | store p50 | store p95 | store p99 | page p50 | page p95 | page p99 |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		for _, c := range r.cases {
			short, _, _ := strings.Cut(c.name, ":")
			p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, short, bench.Ms(quantile(c.store, 0.5)), bench.Ms(quantile(c.store, 0.95)), bench.Ms(quantile(c.store, 0.99)),
				bench.Ms(quantile(c.web, 0.5)), bench.Ms(quantile(c.web, 0.95)), bench.Ms(quantile(c.web, 0.99)))
		}
	}
	var names []string
	for _, c := range rs[0].cases {
		names = append(names, c.name)
	}
	p("\nCases: %s.\n\n", strings.Join(names, "; "))
	goal := "met"
	for _, r := range rs {
		for _, c := range r.cases[:1] {
			if quantile(c.web, 0.95) >= 200*time.Millisecond {
				goal = "NOT met"
			}
		}
	}
	p("| goal | result | |\n|---|---|---|\n")
	for _, r := range rs {
		p("| the overview over 1,000,000 calls in < 200 ms p95 (%s, realistic, whole page) | **%s** (store %s; worst case %s) | %s |\n", r.name,
			bench.Ms(quantile(r.cases[0].web, 0.95)), bench.Ms(quantile(r.cases[0].store, 0.95)), bench.Ms(quantile(r.cases[1].web, 0.95)), goal)
	}
	p("\nRollup rows: ")
	for i, r := range rs {
		if i > 0 {
			p("; ")
		}
		p("%s %s in `call_days`, %s in `turn_latency` (seeded in %s)", r.name, commas(r.data.callDays), commas(r.data.latency), r.data.seeded.Round(time.Second))
	}
	p(".\n")
	return b.String()
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
