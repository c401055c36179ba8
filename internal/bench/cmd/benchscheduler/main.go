// Command benchscheduler measures the dialer: 10,000 scheduled attempts due
// at one instant, on one node on SQLite and on three nodes sharing one
// PostgreSQL database (real `switchboard serve` processes). It reports how
// many were dialed, lost or dialed twice, and the dial lateness (each
// call's creation time less its attempt's due time) at p50, p99 and max,
// and writes them to docs/benchmarks.md.
//
//	go run ./internal/bench/cmd/benchscheduler -postgres "$(./scripts/ensure-postgres.sh)" -out docs/benchmarks.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"switchboard/internal/bench"
	"switchboard/internal/nodetest"
)

func main() {
	attempts := flag.Int("attempts", 10000, "attempts due at one instant")
	lead := flag.Duration("lead", 20*time.Second, "time from scheduling to the due instant (all attempts exist before it)")
	pg := flag.String("postgres", "", "PostgreSQL URL to create the run's database on (empty: SQLite only)")
	nodes := flag.Int("nodes", 3, "nodes on PostgreSQL")
	out := flag.String("out", "", "markdown file whose \"## bench-scheduler\" section is written")
	flag.BoolVar(&skipSQLite, "skip-sqlite", false, "run the PostgreSQL nodes only (with -out, the SQLite row is then missing)")
	flag.StringVar(&profileDir, "profile", "", "directory to write each node's CPU profile of the first 5 s after the due time to (go tool pprof), and its goroutines 2.5 s after it")
	ring := flag.Duration("ring", 0, "run with this one ring time instead of 6 s and 1 s (with -out, the other rows are then missing)")
	flag.Parse()
	if *ring > 0 {
		rings = []time.Duration{*ring}
	}
	if err := run(*attempts, *lead, *pg, *nodes, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchscheduler:", err)
		os.Exit(1)
	}
}

// rings are the sandbox's ring times the bench runs with: 6 s, one North
// American ringback cycle (2 s on, 4 s off), about the quickest a person
// answers; and 1 s, the sandbox's default, where the calls answered and
// their conversations load the same CPUs while the burst is still being
// dialed.
var rings = []time.Duration{6 * time.Second, time.Second}

// scheduleExtra opens the calling hours to the whole day, so that the
// attempts are due when asked whatever the hour of the run.
var scheduleExtra = map[string]any{}

// profileDir, when set, receives a CPU profile of each node (-profile).
var profileDir string

// skipSQLite leaves the SQLite scenario out (-skip-sqlite).
var skipSQLite bool

type scenario struct {
	name  string
	nodes int
	db    func(ctx context.Context, dir string) (string, func(), error)
}

type result struct {
	scenario
	ring  time.Duration
	d     nodetest.Dialing
	all   time.Duration // due → last call created
	setup time.Duration
}

func run(attempts int, lead time.Duration, pg string, pgNodes int, outPath string) error {
	ctx := context.Background()
	mod, err := nodetest.ModuleDir()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "benchscheduler-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Println("building the server …")
	bin, err := nodetest.Build(ctx, mod, tmp)
	if err != nil {
		return err
	}
	scenarios := []scenario{{name: "SQLite", nodes: 1, db: func(_ context.Context, dir string) (string, func(), error) {
		return "sqlite:" + filepath.Join(dir, "sb.db"), func() {}, nil
	}}}
	if skipSQLite {
		scenarios = nil
	}
	if pg != "" {
		scenarios = append(scenarios, scenario{name: "PostgreSQL", nodes: pgNodes, db: func(ctx context.Context, _ string) (string, func(), error) {
			return nodetest.CreatePostgres(ctx, pg, "sbbench_")
		}})
	}
	var results []result
	for _, sc := range scenarios {
		for _, ring := range rings {
			dir := filepath.Join(tmp, fmt.Sprintf("%s-%v", sc.name, ring))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			dbURL, drop, err := sc.db(ctx, dir)
			if err != nil {
				return err
			}
			res, err := runOne(ctx, bin, dbURL, dir, sc, ring, attempts, lead)
			drop()
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", sc.name, err, nodetest.Logs(dir, 3000))
			}
			fmt.Printf("%s, %d node(s), ring %v: %s; all dialed %v after the due time\n", sc.name, sc.nodes, ring, res.d, res.all)
			results = append(results, res)
		}
	}
	if outPath == "" {
		return nil
	}
	return write(outPath, attempts, results)
}

func runOne(ctx context.Context, bin, dbURL, dir string, sc scenario, ring time.Duration, attempts int, lead time.Duration) (result, error) {
	res := result{scenario: sc, ring: ring}
	var ns []*nodetest.Node
	defer func() {
		for _, n := range ns {
			_ = n.Stop()
		}
	}()
	var metrics []string
	for i := range sc.nodes {
		args := []string{"--sandbox-ring-time", ring.String()}
		if profileDir != "" {
			addr, err := freeAddr()
			if err != nil {
				return res, err
			}
			args = append(args, "--metrics-addr", addr)
			metrics = append(metrics, addr)
		}
		n, err := nodetest.Start(ctx, nodetest.Options{Name: fmt.Sprintf("n%d", i+1), Bin: bin, DB: dbURL, LogDir: dir,
			Args: args, FirstStart: i == 0})
		if err != nil {
			return res, err
		}
		ns = append(ns, n)
	}
	probe, err := nodetest.OpenProbe(dbURL)
	if err != nil {
		return res, err
	}
	defer probe.Close()
	t0 := time.Now()
	due := t0.Add(lead)
	c, err := nodetest.ScheduleBurst(ctx, ns[0].URL, ns[0].Key, attempts, due, scheduleExtra)
	if err != nil {
		return res, err
	}
	res.setup = time.Since(t0)
	if time.Now().After(due) {
		return res, fmt.Errorf("setting up took %v, past the due time: raise -lead", res.setup)
	}
	fmt.Printf("%s: %d attempts scheduled in %v, due in %v\n", sc.name, attempts, res.setup.Round(time.Millisecond), time.Until(due).Round(time.Millisecond))
	time.Sleep(time.Until(due))
	var profiles sync.WaitGroup
	for i, addr := range metrics {
		path := filepath.Join(profileDir, fmt.Sprintf("%s-%v-n%d", sc.name, ring, i+1))
		profiles.Go(func() {
			if err := profile(addr, "profile?seconds=5", path+".pprof"); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		})
		profiles.Go(func() {
			time.Sleep(2500 * time.Millisecond)
			if err := profile(addr, "goroutine?debug=1", path+"-goroutines.txt"); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		})
	}
	defer profiles.Wait()
	d, err := probe.WaitDialed(ctx, c, 5*time.Minute)
	if err != nil {
		return res, err
	}
	res.d = d
	res.all = nodetest.Quantile(d.Lateness, 1)
	return res, nil
}

func write(outPath string, attempts int, results []result) error {
	var rows []string
	for _, r := range results {
		lost := attempts - r.d.Dialed
		rows = append(rows, fmt.Sprintf("| %s | %d | %v | %d | %d | %d | %d | %s | %s | %s |", r.name, r.nodes, r.ring, attempts, r.d.Dialed, lost, r.d.Doubled,
			ms(nodetest.Quantile(r.d.Lateness, 0.5)), ms(nodetest.Quantile(r.d.Lateness, 0.99)), ms(nodetest.Quantile(r.d.Lateness, 1))))
	}
	section := fmt.Sprintf(`## bench-scheduler

The dialer under a burst (issue 12): %d attempts of one schedule due at
one instant, on real `+"`switchboard serve`"+` processes: one node on SQLite,
and three nodes sharing one PostgreSQL database, all on this machine's 2
CPUs. Lateness is each call's creation time (the dial's claim
transaction) less its attempt's due time, read from the database. The
sandbox rings each call for the ring time, then answers it; its assistant
says one message and ends it. With a 6 s ring (one North American ringback
cycle, about the quickest a person picks up) the burst is dialed before
the first answers; with the sandbox's default 1 s the answered calls'
conversations share the 2 CPUs with the rest of the burst.
Goal: every attempt dialed once, p99 lateness under 2 s on three nodes.

`+"```"+`
make bench-scheduler   # go run ./internal/bench/cmd/benchscheduler -postgres "$(./scripts/ensure-postgres.sh)" -out docs/benchmarks.md
`+"```"+`

Machine: %s, %s.

| database | nodes | ring time | attempts | dialed | lost | doubled | lateness p50 | p99 | max |
|---|---|---|---|---|---|---|---|---|---|
%s
`, attempts, bench.CPUModel(), time.Now().UTC().Format("2006-01-02"), strings.Join(rows, "\n"))
	return bench.WriteSection(outPath, "## bench-scheduler", section)
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// profile writes a node's profile (the /debug/pprof/ path and query) to path.
func profile(addr, what, path string) error {
	res, err := http.Get("http://" + addr + "/debug/pprof/" + what) //nolint:noctx // bounded by the profile's length
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", addr, res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
