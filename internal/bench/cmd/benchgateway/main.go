// Command benchgateway measures web calls: N concurrent text-mode calls on
// loopback through the real server (websocket gateway, conversation engine,
// a scripted booking flow, SQLite), recording turn latency, memory per live
// call and errors, and writes them to docs/benchmarks.md.
//
//	go run ./internal/bench/cmd/benchgateway -calls 1000 -out docs/benchmarks.md
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/app"
	"switchboard/internal/bench"
	"switchboard/internal/gateway/protocol"
)

const bookingFlow = `{"start":"greet","nodes":{
 "greet":{"type":"say","text":"Hi! I can book your appointment.","next":"ask_date"},
 "ask_date":{"type":"ask","text":"What day would suit you?","branches":[{"match":{"kind":"date"},"capture":"date","next":"confirm"}],
   "noMatch":{"text":"Sorry, which day?","maxRetries":2,"next":"fail"}},
 "confirm":{"type":"ask","text":"So {{date}}, is that right?","branches":[{"match":{"kind":"yesno","value":true},"next":"bye"},{"match":{"kind":"yesno","value":false},"next":"ask_date"}]},
 "bye":{"type":"end","text":"You're booked for {{date}}. Goodbye!","success":true},
 "fail":{"type":"end","text":"Sorry. Goodbye.","success":false}}}`

func main() {
	calls := flag.Int("calls", 1000, "concurrent web calls")
	out := flag.String("out", "", "markdown file whose \"## bench-gateway\" section is written")
	flag.Parse()
	if err := run(*calls, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchgateway:", err)
		os.Exit(1)
	}
}

type result struct {
	turnLatency []time.Duration // user.text sent → first delta of the reply
	turnTotal   []time.Duration // user.text sent → turn.done
	errors      int
	firstErr    string
}

func run(n int, outPath string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "benchgateway")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DB, cfg.RateLimit = "127.0.0.1:0", "sqlite:"+filepath.Join(dir, "gw.db"), 0
	m, err := app.Start(ctx, cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	key := m.BootstrapKey
	api := func(method, path string, body any) (map[string]any, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, m.URL()+path, bytes.NewReader(b))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode >= 300 {
			return nil, fmt.Errorf("%s %s = %d: %v %v", method, path, res.StatusCode, out, err)
		}
		return out, nil
	}
	var flow any
	_ = json.Unmarshal([]byte(bookingFlow), &flow)
	a, err := api("POST", "/v1/assistants", map[string]any{"name": "Bench", "model": map[string]any{"provider": "flow"}, "flow": flow, "maxDurationSeconds": 600})
	if err != nil {
		return err
	}
	asst := a["data"].(map[string]any)["id"].(string)

	// Create the calls first, then connect them all and hold them open at
	// the greeting, so memory is measured with every call live at once.
	urls := make([]string, n)
	for i := range urls {
		r, err := api("POST", "/v1/calls/initiate", map[string]any{"assistantId": asst, "type": "web"})
		if err != nil {
			return err
		}
		urls[i] = r["gateway"].(map[string]any)["url"].(string)
	}
	fmt.Printf("created %d web calls\n", n)
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()

	var res result
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.errors++
		if res.firstErr == "" {
			res.firstErr = err.Error()
		}
	}
	var connected, ready sync.WaitGroup
	connected.Add(n)
	ready.Add(1)
	var wg sync.WaitGroup
	var live atomic.Int64
	start := time.Now()
	for _, u := range urls {
		wg.Go(func() {
			lat, tot, err := oneCall(u, &connected, &ready, &live)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			res.turnLatency = append(res.turnLatency, lat...)
			res.turnTotal = append(res.turnTotal, tot...)
			mu.Unlock()
		})
	}
	connected.Wait()
	connectTook := time.Since(start)
	runtime.GC()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	g1 := runtime.NumGoroutine()
	liveAtPeak := live.Load()
	ready.Done()
	wg.Wait()
	took := time.Since(start)

	// The process holds both ends (clients and server); the figures per call
	// include both and so overstate the server's share.
	perCall := float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / float64(max(liveAtPeak, 1))
	gPerCall := float64(g1-g0) / float64(max(liveAtPeak, 1))
	q := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	fmt.Printf("%d calls live at once (connected in %s); %d turns; errors %d %s\n", liveAtPeak, connectTook.Round(time.Millisecond), len(res.turnLatency), res.errors, res.firstErr)
	fmt.Printf("turn latency (user.text → first delta): p50 %s p99 %s; to turn.done p50 %s p99 %s\n",
		bench.Ms(q(res.turnLatency, .5)), bench.Ms(q(res.turnLatency, .99)), bench.Ms(q(res.turnTotal, .5)), bench.Ms(q(res.turnTotal, .99)))
	fmt.Printf("memory per live call (heap in use, clients + server): %.1f KiB; goroutines per call %.1f\n", perCall/1024, gPerCall)
	if outPath == "" {
		return nil
	}
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	p("## bench-gateway\n\n")
	p("%d concurrent text-mode web calls on loopback through the real server (`app.Start`: websocket gateway, conversation engine, a scripted booking flow, SQLite), each: connect, greeting, a date, a confirmation, goodbye.\n\n", n)
	p("- **Date:** %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	p("- **Machine:** %d CPUs, GOMAXPROCS %d, %s %s/%s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	p("- **Command:** `make bench-gateway` (`go run ./internal/bench/cmd/benchgateway -calls %d -out docs/benchmarks.md`)\n", n)
	p("- **Result:** %d calls live at once (all connected in %s), %d caller turns answered in %s, %d errors%s\n\n", liveAtPeak, connectTook.Round(time.Millisecond), len(res.turnLatency), took.Round(time.Millisecond), res.errors, map[bool]string{true: " (first: " + res.firstErr + ")", false: ""}[res.errors > 0])
	p("| measure | p50 | p99 |\n|---|---:|---:|\n")
	p("| turn latency: user.text sent → first delta of the reply | %s | %s |\n", bench.Ms(q(res.turnLatency, .5)), bench.Ms(q(res.turnLatency, .99)))
	p("| user.text sent → turn.done | %s | %s |\n\n", bench.Ms(q(res.turnTotal, .5)), bench.Ms(q(res.turnTotal, .99)))
	p("Memory per live call: **%.1f KiB** of Go heap in use and %.1f goroutines, measured with every call connected and idle at its greeting; the load generator's websocket clients run in the same process, so both figures include the client side of each call too.\n\n", perCall/1024, gPerCall)
	p("The turns are all sent at once, when every call is connected: the latency is that of %d callers speaking in the same instant on 2 CPUs (each turn persists two transcript rows through SQLite's single writer), so its p99 measures queueing more than the platform's per-turn work.\n", n)
	return bench.WriteSection(outPath, "## bench-gateway", b.String())
}

// oneCall runs one web call: connect, wait for the greeting, hold until
// every call is connected, then two caller turns, then the end.
func oneCall(url string, connected, ready *sync.WaitGroup, live *atomic.Int64) (lat, tot []time.Duration, err error) {
	didConnect := false
	defer func() {
		if !didConnect {
			connected.Done()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, nil, err
	}
	defer conn.CloseNow()
	read := func() (protocol.ServerEvent, error) {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.DecodeServer(data)
	}
	waitTurn := func() (first, done time.Time, text string, err error) {
		for {
			ev, err := read()
			if err != nil {
				return first, done, "", err
			}
			switch e := ev.(type) {
			case protocol.TextDelta:
				if first.IsZero() {
					first = time.Now()
				}
			case protocol.TurnDone:
				return first, time.Now(), e.Text, nil
			case protocol.CallEnded:
				return first, time.Now(), "", errors.New("call ended early: " + e.EndedReason)
			}
		}
	}
	if _, _, _, err := waitTurn(); err != nil {
		return nil, nil, err
	}
	live.Add(1)
	didConnect = true
	connected.Done()
	ready.Wait()
	for _, say := range []string{"next tuesday please", "yes"} {
		msg, _ := protocol.EncodeClient(protocol.UserText{Text: say})
		sent := time.Now()
		if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
			return nil, nil, err
		}
		first, done, _, err := waitTurn()
		if err != nil {
			return nil, nil, err
		}
		lat = append(lat, first.Sub(sent))
		tot = append(tot, done.Sub(sent))
	}
	for {
		ev, err := read()
		if err != nil {
			return nil, nil, err
		}
		if e, ok := ev.(protocol.CallEnded); ok {
			if e.EndedReason != "assistant-ended-call" {
				return nil, nil, errors.New("call ended " + e.EndedReason)
			}
			return lat, tot, nil
		}
	}
}
