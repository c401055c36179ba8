// Command benchapi is `make bench-api`: it starts the real server on a fresh
// database, seeds it with N calls straight through SQL, and loads
// GET /v1/calls and, in the same run, a bare net/http JSON handler of the
// same response shape; then it holds the API at half its maximum rate to
// measure p99 latency. It prints a table and writes the "## bench-api"
// section of docs/benchmarks.md.
//
//	go run ./internal/bench/cmd/benchapi -calls 1000000 -out docs/benchmarks.md
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"switchboard/internal/app"
	"switchboard/internal/bench"
	"switchboard/internal/id"
	"switchboard/internal/secret"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/store/sqlstore"
)

// makeArgs are the Makefile's bench-api arguments, to name the command.
const makeArgs = "-calls 1000000 -out docs/benchmarks.md"

type options struct {
	calls       int
	db          string
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	concurrency int
	out         string
	rateLimit   float64
	pages       int
	phoneShare  float64
	halfLoad    float64
	cpuProfile  string
	keep        bool
}

func main() {
	var o options
	flag.IntVar(&o.calls, "calls", 1_000_000, "calls to seed for the benchmarked organization")
	flag.StringVar(&o.db, "db", "", "database: sqlite:PATH or postgres://… (must be fresh); default a temporary SQLite file")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each measured phase")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up of each server before measuring")
	flag.IntVar(&o.rounds, "rounds", 2, "bare/API rounds at maximum load (medians are reported)")
	flag.IntVar(&o.concurrency, "concurrency", 32, "closed-loop client goroutines (and idle keep-alive connections)")
	flag.StringVar(&o.out, "out", "", "markdown file whose \"## bench-api\" section is written (created if missing)")
	flag.Float64Var(&o.rateLimit, "rate-limit", 0, "the server's per-key rate limit; 0 disables it")
	flag.IntVar(&o.pages, "pages", 50, "requests spread over pages 1..N of 20 calls")
	flag.Float64Var(&o.phoneShare, "phone-share", 0.25, "share of requests filtered with type=phone")
	flag.Float64Var(&o.halfLoad, "half-load", 0.5, "open-loop phase rate as a fraction of the API's maximum rate")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the last API round at maximum load to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary SQLite database")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchapi:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.calls < 1 || o.concurrency < 1 || o.rounds < 1 || o.duration <= 0 {
		return errors.New("-calls, -concurrency, -rounds and -duration must be positive")
	}
	dbURL, kind := o.db, "postgres"
	switch {
	case dbURL == "":
		dir, err := os.MkdirTemp("", "benchapi-")
		if err != nil {
			return err
		}
		if o.keep {
			fmt.Println("keeping database in", dir)
		} else {
			defer os.RemoveAll(dir)
		}
		dbURL, kind = "sqlite:"+filepath.Join(dir, "bench.db"), "sqlite"
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
	case strings.HasPrefix(dbURL, "sqlite:"):
		kind = "sqlite"
	default:
		dbURL, kind = "sqlite:"+dbURL, "sqlite"
	}

	log := slog.New(newServerLog())
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DB, cfg.RateLimit = "127.0.0.1:0", dbURL, o.rateLimit
	cfg.SecretKey = secret.NewKey() // PostgreSQL has no default key

	// 1. First start: migrations and the bootstrap organization and key.
	// Its log is dropped: the job queue, stopped right after starting,
	// complains about its cancelled first transaction.
	m, err := app.Start(ctx, cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	key, orgID := m.BootstrapKey, m.OrgID
	if err := m.Close(context.Background()); err != nil {
		return fmt.Errorf("stop server: %w", err)
	}
	if key == "" {
		return fmt.Errorf("%s is not a fresh database (no bootstrap key was created); give an empty one", redact(dbURL))
	}

	// 2. Seed through the store's own writer pool while the server is down
	// (on SQLite that pool is the only writer; holding it for the whole
	// seeding transaction would stall the job queue of a running server).
	fmt.Printf("seeding %d calls for %s (+1000 for a second org) into %s …\n", o.calls, orgID, kind)
	seed, err := seedDB(ctx, dbURL, orgID, o.calls)
	if err != nil {
		return err
	}
	fmt.Printf("seeded %d rows in %s (%.0f rows/s)\n", seed.Rows, seed.Took.Round(time.Millisecond), float64(seed.Rows)/seed.Took.Seconds())

	// 3. Second start: the real server over the seeded database.
	m, err = app.Start(ctx, cfg, log, io.Discard)
	if err != nil {
		return fmt.Errorf("restart server: %w", err)
	}
	defer m.Close(context.Background())

	client := bench.NewClient(o.concurrency)
	page1, err := get(ctx, client, m.URL()+"/v1/calls?page=1&pageSize=20", key)
	if err != nil {
		return err
	}
	page, err := bench.ParsePage(page1)
	if err != nil {
		return err
	}
	if page.Pagination.Total != o.calls || len(page.Data) != 20 && o.calls >= 20 {
		return fmt.Errorf("API lists total %d and %d items; seeded %d", page.Pagination.Total, len(page.Data), o.calls)
	}
	phone, err := get(ctx, client, m.URL()+"/v1/calls?pageSize=1&type=phone", key)
	if err != nil {
		return err
	}
	if pp, err := bench.ParsePage(phone); err != nil || int64(pp.Pagination.Total) != seed.PhoneCalls {
		return fmt.Errorf("type=phone total does not match the seed (%d): %v %.200s", seed.PhoneCalls, err, phone)
	}

	bare, err := bench.StartBare(ctx, bench.BareHandler(page))
	if err != nil {
		return err
	}
	defer bare.Close()
	bareBody, err := get(ctx, client, bare.URL+"/v1/calls?page=1&pageSize=20", "")
	if err != nil {
		return err
	}
	fmt.Printf("response size: API %d bytes, bare %d bytes\n", len(page1), len(bareBody))

	apiT := bench.Target{Name: "api", Base: m.URL(), Key: key, Pages: o.pages, PhoneShare: o.phoneShare}
	bareT := bench.Target{Name: "bare", Base: bare.URL, Key: key, Pages: o.pages, PhoneShare: o.phoneShare}
	apiC, bareC := bench.NewClient(o.concurrency), bench.NewClient(o.concurrency)

	// 4. Maximum load, alternating so that noise hits both.
	var shares []float64
	load0 := bench.LoadAvg()
	phase := func(c *http.Client, t bench.Target, d time.Duration, label string) bench.Result {
		cpu0 := bench.CPUTime()
		r := bench.ClosedLoop(ctx, c, t, o.concurrency, d)
		r.CPU = bench.CPUTime() - cpu0
		share := float64(r.CPU) / float64(r.Elapsed) / float64(runtime.NumCPU())
		fmt.Printf("  %-14s %9.0f req/s  p50 %-9s p99 %-9s errors %d  CPU %4.0f µs/req, process used %3.0f%% of %d CPUs, load avg %s %s\n", label, r.Rate(),
			bench.Ms(r.Lat.Q(.5)), bench.Ms(r.Lat.Q(.99)), r.Errors, us(r.CPUPerRequest()), 100*share, runtime.NumCPU(), bench.LoadAvg(), r.FirstErr)
		if strings.HasPrefix(label, "bare") || strings.HasPrefix(label, "api") {
			shares = append(shares, share)
		}
		return r
	}
	fmt.Printf("warm-up %s each, then %d rounds of %s per server at concurrency %d\n", o.warmup, o.rounds, o.duration, o.concurrency)
	phase(bareC, bareT, o.warmup, "warm-up bare")
	phase(apiC, apiT, o.warmup, "warm-up api")
	var bareRs, apiRs []bench.Result
	for i := 1; i <= o.rounds && ctx.Err() == nil; i++ {
		bareRs = append(bareRs, phase(bareC, bareT, o.duration, fmt.Sprintf("bare #%d", i)))
		var prof *os.File
		if o.cpuProfile != "" && i == o.rounds {
			if prof, err = os.Create(o.cpuProfile); err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		apiRs = append(apiRs, phase(apiC, apiT, o.duration, fmt.Sprintf("api #%d", i)))
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			fmt.Println("  CPU profile of this API round:", o.cpuProfile)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	bareSum, apiSum := summarize(bareRs), summarize(apiRs)

	// 5. Half load: open loop at a fraction of the API's maximum.
	halfRate := apiSum.rate * o.halfLoad
	fmt.Printf("open loop at %.0f req/s (%.0f%% of the API maximum) for %s\n", halfRate, o.halfLoad*100, o.duration)
	half := bench.OpenLoop(ctx, apiC, apiT, halfRate, o.duration, max(256, 8*o.concurrency))
	fmt.Printf("  %-14s %9.0f req/s  p50 %-9s p99 %-9s errors %d dropped %d loader lag p99 %s %s\n", "api half", half.Rate(),
		bench.Ms(half.Lat.Q(.5)), bench.Ms(half.Lat.Q(.99)), half.Errors, half.Dropped, bench.Ms(half.LoaderLag), half.FirstErr)

	// 6. The same listing with the store's page cache off: every request
	// reads its page from the database (what a workload of always-changing
	// calls sees).
	var uncached summary
	if pc, ok := m.DB().Store.(interface{ SetPageCache(int) }); ok {
		pc.SetPageCache(0)
		uncached = summarize([]bench.Result{phase(apiC, apiT, o.duration, "api, no cache")})
		pc.SetPageCache(sqlstore.DefaultPageCache)
	}

	rep := report{o: o, kind: kind, seed: seed, bare: bareSum, api: apiSum, uncached: uncached, half: half, halfRate: halfRate,
		apiBytes: len(page1), bareBytes: len(bareBody), cpuShare: bench.Median(shares), load0: load0, load1: bench.LoadAvg()}
	fmt.Println()
	rep.table(os.Stdout)
	if o.out != "" {
		if err := bench.WriteSection(o.out, "## bench-api", rep.markdown()); err != nil {
			return err
		}
		fmt.Println("wrote the bench-api section of", o.out)
	}
	return nil
}

// seedDB opens the database with the server's own code and seeds it through
// the store's writer pool.
func seedDB(ctx context.Context, dbURL, orgID string, calls int) (bench.SeedResult, error) {
	db, err := app.OpenMigrated(ctx, dbURL)
	if err != nil {
		return bench.SeedResult{}, err
	}
	defer db.Close()
	var w *sql.DB
	dollar := false
	switch s := db.Store.(type) {
	case *sqlite.DB:
		w = s.Writer
		// Only connection of the writer pool: a big page cache speeds up the
		// random-order primary-key inserts. Closed again after seeding.
		if _, err := w.ExecContext(ctx, "PRAGMA cache_size = -262144"); err != nil {
			return bench.SeedResult{}, err
		}
	case interface{ Writer() *sql.DB }:
		w, dollar = s.Writer(), true
	default:
		return bench.SeedResult{}, fmt.Errorf("no writer pool on %T", db.Store)
	}
	return bench.Seed(ctx, w, bench.SeedSpec{
		OrgID: orgID, Calls: calls, OtherOrgID: id.New(id.Org), OtherCalls: 1000,
		Dollar: dollar, Batch: 500, Now: time.Now(), Seed: 1,
	})
}

func get(ctx context.Context, c *http.Client, url, key string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d: %.300s", url, resp.StatusCode, b)
	}
	return b, err
}

// summary is the medians over the rounds of one server.
type summary struct {
	rate          float64
	rates         []float64
	p50, p99      time.Duration
	errors, total int
	// cpu is the median process CPU time per request (server + loader).
	cpu time.Duration
}

func summarize(rs []bench.Result) summary {
	var s summary
	var p50, p99, cpu []time.Duration
	for _, r := range rs {
		cpu = append(cpu, r.CPUPerRequest())
		s.rates = append(s.rates, r.Rate())
		p50, p99 = append(p50, r.Lat.Q(.5)), append(p99, r.Lat.Q(.99))
		s.errors += r.Errors
		s.total += r.OK + r.Errors
	}
	s.rate, s.p50, s.p99, s.cpu = bench.Median(s.rates), bench.MedianDur(p50), bench.MedianDur(p99), bench.MedianDur(cpu)
	return s
}

type report struct {
	o                   options
	kind                string
	seed                bench.SeedResult
	bare, api           summary
	uncached            summary // the API with the page cache off
	half                bench.Result
	halfRate            float64
	apiBytes, bareBytes int
	// cpuShare is the median share of all CPUs this process used in the
	// measured phases; load0/load1 the load average before and after.
	cpuShare     float64
	load0, load1 string
}

func (r report) ratio() float64 {
	if r.bare.rate == 0 {
		return 0
	}
	return r.api.rate / r.bare.rate
}

// cpuRatio is bare CPU per request over API CPU per request: the rate
// ratio the CPUs would allow if both had them to themselves.
func (r report) cpuRatio() float64 {
	if r.api.cpu == 0 {
		return 0
	}
	return float64(r.bare.cpu) / float64(r.api.cpu)
}

// contended reports whether other processes competed for the CPUs.
func (r report) contended() bool {
	var l0, l1 float64
	// A load that does not parse counts as none: the CPU share still says.
	_, _ = fmt.Sscan(r.load0, &l0)
	_, _ = fmt.Sscan(r.load1, &l1)
	limit := float64(runtime.NumCPU()) + 0.5
	return l0 > limit || l1 > limit || r.cpuShare < 0.75
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func (r report) table(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tbare\tGET /v1/calls\t\n")
	fmt.Fprintf(tw, "rate (median of %d)\t%.0f req/s\t%.0f req/s\t\n", len(r.api.rates), r.bare.rate, r.api.rate)
	fmt.Fprintf(tw, "rounds\t%s\t%s\t\n", rates(r.bare.rates), rates(r.api.rates))
	fmt.Fprintf(tw, "p50 at max load\t%s\t%s\t\n", bench.Ms(r.bare.p50), bench.Ms(r.api.p50))
	fmt.Fprintf(tw, "p99 at max load\t%s\t%s\t\n", bench.Ms(r.bare.p99), bench.Ms(r.api.p99))
	fmt.Fprintf(tw, "CPU per request\t%.0f µs\t%.0f µs\t\n", us(r.bare.cpu), us(r.api.cpu))
	fmt.Fprintf(tw, "errors\t%d\t%d\t\n", r.bare.errors, r.api.errors)
	tw.Flush()
	fmt.Fprintf(w, "API/bare = %.1f%% (goal ≥ 40%%: %s); by CPU per request %.1f%%\n", 100*r.ratio(), verdict(r.ratio() >= 0.40), 100*r.cpuRatio())
	fmt.Fprintf(w, "half load %.0f req/s: p50 %s, p99 %s (goal < 10 ms: %s)\n", r.halfRate, bench.Ms(r.half.Lat.Q(.5)),
		bench.Ms(r.half.Lat.Q(.99)), verdict(r.half.Lat.Q(.99) < 10*time.Millisecond))
}

func rates(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func (r report) command() string {
	args := strings.Join(os.Args[1:], " ")
	cmd := "`go run ./internal/bench/cmd/benchapi " + args + "`"
	if args == makeArgs {
		cmd = "`make bench-api` (" + cmd + ")"
	}
	return cmd
}

func (r report) markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	o := r.o
	db := "SQLite (temporary file, WAL, modernc.org/sqlite)"
	if r.kind == "postgres" {
		db = "PostgreSQL"
	} else if o.db != "" {
		db = "SQLite (" + o.db + ")"
	}
	halfP99 := r.half.Lat.Q(.99)
	p("## bench-api\n\n")
	p("`GET /v1/calls` on the real server (`app.Start`, rate limit %g) versus a bare `net/http` handler that encodes a same-shaped\n", o.rateLimit)
	p("20-item page with `encoding/json` per request, loaded in the same run by the same client.\n\n")
	p("- **Date:** %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	p("- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s\n", runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	p("- **Command:** %s\n", r.command())
	p("- **Data:** %s calls in the benchmarked organization + %s in a second one, %s; seeded directly through SQL in %s\n",
		thousands(o.calls), thousands(r.seed.Rows-o.calls), db, r.seed.Took.Round(100*time.Millisecond))
	p("- **Load:** closed loop, %d keep-alive connections; pages 1–%d of 20 (random), %.0f%% with `type=phone`; warm-up %s per server, then bare/API alternated %d× for %s each (medians below)\n",
		o.concurrency, o.pages, 100*o.phoneShare, o.warmup, o.rounds, o.duration)
	p("- **Response:** API %d bytes, bare %d bytes (page 1)\n", r.apiBytes, r.bareBytes)
	p("- **Contention:** this process used a median %.0f%% of the %d CPUs during the measured phases; 1-minute load average %s before, %s after (anything above ~%d means other processes competed for the CPUs)\n\n",
		100*r.cpuShare, runtime.NumCPU(), r.load0, r.load1, runtime.NumCPU())
	p("| at maximum load | bare handler | GET /v1/calls |\n|---|---:|---:|\n")
	p("| requests/s (median) | %.0f | %.0f |\n", r.bare.rate, r.api.rate)
	p("| requests/s per round | %s | %s |\n", rates(r.bare.rates), rates(r.api.rates))
	p("| p50 latency | %s | %s |\n", bench.Ms(r.bare.p50), bench.Ms(r.api.p50))
	p("| p99 latency | %s | %s |\n", bench.Ms(r.bare.p99), bench.Ms(r.api.p99))
	cpuNote := "servers + loader"
	if r.kind == "postgres" {
		cpuNote += "; not PostgreSQL's own processes"
	}
	p("| process CPU per request (%s, median) | %.0f µs | %.0f µs |\n", cpuNote, us(r.bare.cpu), us(r.api.cpu))
	p("| errors / requests | %d / %d | %d / %d |\n\n", r.bare.errors, r.bare.total, r.api.errors, r.api.total)
	if r.uncached.rate > 0 {
		p("With the store's page cache off (one %s round, every page read from the database): **%.0f req/s**, %.1f%% of the bare rate; p50 %s, p99 %s, %.0f µs CPU per request.\n\n",
			o.duration, r.uncached.rate, 100*r.uncached.rate/r.bare.rate, bench.Ms(r.uncached.p50), bench.Ms(r.uncached.p99), us(r.uncached.cpu))
	}
	p("| goal | result | |\n|---|---:|---|\n")
	p("| API ≥ 40%% of the bare handler's rate | **%.1f%%** (by CPU per request: %.1f%%) | %s |\n", 100*r.ratio(), 100*r.cpuRatio(), verdict(r.ratio() >= .40))
	p("| p99 < 10 ms at half load (open loop, %.0f req/s = %.0f%% of the API maximum, %s) | **%s** (p50 %s) | %s |\n\n",
		r.halfRate, 100*o.halfLoad, o.duration, bench.Ms(halfP99), bench.Ms(r.half.Lat.Q(.5)), verdict(halfP99 < 10*time.Millisecond))
	p("Half-load phase: %d requests, %d errors, %d not sent (too many in flight); the loader's own lateness (p99) was %s.\n\n",
		r.half.OK+r.half.Errors, r.half.Errors, r.half.Dropped, bench.Ms(r.half.LoaderLag))

	p("**Reading.** ")
	p("The load generator, the real server and the bare server all run in one process on %d CPUs, so the client's own work per request "+
		"(the same in both phases) takes CPU from the servers: absolute rates are lower than on a dedicated server, and because that fixed client cost "+
		"is added to both sides the ratio is flattered (closer to 1 than server-only costs would give). ", runtime.NumCPU())
	p("The bare handler is the floor of `net/http` + `encoding/json` here; on top of it each API request looks up and SHA-256-checks the API key in the database, "+
		"reads the organization's per-(type, status) totals from `call_counts` (which also version its calls), serves the page from the store's page cache "+
		"when that version is unchanged (here: always, since nothing changes calls during the run) or else reads the page's ids with `LIMIT/OFFSET` (offsets up to %d) "+
		"from the covering `calls_list` index over %s rows and then the rows by id, "+
		"renders the views, writes a JSON request log line (to a discarding writer here) and updates Prometheus metrics. ", (o.pages-1)*20, thousands(r.seed.Rows))
	if r.contended() {
		p("This run was disturbed by other work on the machine: the 1-minute load average was %s before and %s after on %d CPUs, and this process "+
			"got a median %.0f%% of the CPUs (a closed loop on an otherwise idle machine takes ~100%%). Rates and, above all, latency percentiles therefore vary "+
			"from round to round (see the per-round rates) and overstate what the server needs; the CPU time per request "+
			"(bare %.0f µs, API %.0f µs) is much less sensitive to that, and its ratio (%.0f%%) is the better estimate of the listing's efficiency "+
			"relative to the bare handler. ", r.load0, r.load1, runtime.NumCPU(), 100*r.cpuShare, us(r.bare.cpu), us(r.api.cpu), 100*r.cpuRatio())
	}
	goal := "misses"
	if r.ratio() >= .40 {
		goal = "meets"
	}
	p("At %.0f%% of the bare rate (%.0f%% by CPU per request) the listing %s the 40%% goal", 100*r.ratio(), 100*r.cpuRatio(), goal)
	if halfP99 < 10*time.Millisecond {
		p(", and at half of its maximum rate its p99 (%s) is within the 10 ms goal", bench.Ms(halfP99))
	} else {
		p(", and at half of its maximum rate its p99 (%s) exceeds the 10 ms goal", bench.Ms(halfP99))
	}
	if r.half.LoaderLag > 2*time.Millisecond {
		p(" — but the loader itself sent late by %s at p99, i.e. the process was starved of CPU, so that p99 measures the machine as much as the server", bench.Ms(r.half.LoaderLag))
	}
	p(". Max-load p99 is dominated by queueing behind %d concurrent connections on %d CPUs and says little about service time; "+
		"the half-load figure is the one to hold the product goal against.\n", o.concurrency, runtime.NumCPU())
	return b.String()
}

// redact hides a password in a database URL.
func redact(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.LastIndex(u, "@"); at > i {
			return u[:i+3] + "…" + u[at:]
		}
	}
	return u
}

// serverLog renders every record as JSON into io.Discard, so the server pays
// for its request log as in production (minus the I/O), and shows warnings
// and errors on stderr.
type serverLog struct {
	json, text slog.Handler
}

func newServerLog() slog.Handler {
	return serverLog{
		json: slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}),
		text: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
	}
}

func (h serverLog) Enabled(ctx context.Context, l slog.Level) bool { return h.json.Enabled(ctx, l) }

func (h serverLog) Handle(ctx context.Context, r slog.Record) error {
	err := h.json.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		err = errors.Join(err, h.text.Handle(ctx, r.Clone()))
	}
	return err
}

func (h serverLog) WithAttrs(as []slog.Attr) slog.Handler {
	return serverLog{json: h.json.WithAttrs(as), text: h.text.WithAttrs(as)}
}

func (h serverLog) WithGroup(name string) slog.Handler {
	return serverLog{json: h.json.WithGroup(name), text: h.text.WithGroup(name)}
}
