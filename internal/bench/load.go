package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Target is what a load phase requests.
type Target struct {
	Name string
	// Base is http://host:port.
	Base string
	// Key is sent as X-API-Key.
	Key string
	// Pages: requests spread uniformly over pages 1..Pages (pageSize 20).
	Pages int
	// PhoneShare of the requests add type=phone.
	PhoneShare float64
}

// url picks a request URL the way the load mix says.
func (t Target) url(rng *rand.Rand) string {
	u := t.Base + "/v1/calls?page=" + strconv.Itoa(1+rng.IntN(max(1, t.Pages))) + "&pageSize=20"
	if rng.Float64() < t.PhoneShare {
		u += "&type=phone"
	}
	return u
}

// NewClient is a keep-alive client with conns idle connections per host.
func NewClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Result is one load phase.
type Result struct {
	Name    string
	Mode    string // "closed" or "open"
	OK      int
	Errors  int
	Dropped int // open loop: sends skipped because too many were in flight
	Elapsed time.Duration
	Bytes   int64
	Lat     Latencies
	// LoaderLag (open loop): p99 of how late sends left versus their schedule.
	LoaderLag time.Duration
	// FirstErr is the first error seen, for the log.
	FirstErr string
	// CPU is the CPU time the whole process (servers and loader) used
	// during the phase, when the caller measured it.
	CPU time.Duration
}

// CPUPerRequest is CPU divided by the requests answered.
func (r Result) CPUPerRequest() time.Duration {
	if n := r.OK + r.Errors; n > 0 {
		return r.CPU / time.Duration(n)
	}
	return 0
}

// Rate is successful requests per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Latencies is a sorted sample of request latencies.
type Latencies []time.Duration

// Q is the q-quantile (0..1) by nearest rank; 0 for an empty sample.
func (l Latencies) Q(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(q*float64(len(l))+0.999999999) - 1
	return l[min(max(i, 0), len(l)-1)]
}

type worker struct {
	ok, errs int
	bytes    int64
	lat      []time.Duration
	firstErr string
}

func (w *worker) do(ctx context.Context, c *http.Client, t Target, u string) (time.Duration, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		w.fail(err.Error())
		return 0, false
	}
	if t.Key != "" {
		req.Header.Set("X-API-Key", t.Key)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			w.fail(err.Error())
		}
		return 0, false
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		if ctx.Err() == nil {
			w.fail(err.Error())
		}
		return 0, false
	}
	if resp.StatusCode != http.StatusOK {
		w.fail(fmt.Sprintf("%s: HTTP %d", u, resp.StatusCode))
		return d, false
	}
	w.ok++
	w.bytes += n
	return d, true
}

func (w *worker) fail(msg string) {
	w.errs++
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

func merge(name, mode string, ws []*worker, elapsed time.Duration) Result {
	r := Result{Name: name, Mode: mode, Elapsed: elapsed}
	n := 0
	for _, w := range ws {
		n += len(w.lat)
	}
	r.Lat = make(Latencies, 0, n)
	for _, w := range ws {
		r.OK += w.ok
		r.Errors += w.errs
		r.Bytes += w.bytes
		r.Lat = append(r.Lat, w.lat...)
		if r.FirstErr == "" {
			r.FirstErr = w.firstErr
		}
	}
	slices.Sort(r.Lat)
	return r
}

// ClosedLoop runs conc goroutines that each send the next request as soon as
// the previous one is answered, for d: the maximum rate the target sustains.
//
// Requests in flight at the deadline are let finish (and counted), rather
// than cancelled, so the server sees no aborted requests.
func ClosedLoop(ctx context.Context, c *http.Client, t Target, conc int, d time.Duration) Result {
	ws := make([]*worker, conc)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range ws {
		w := &worker{lat: make([]time.Duration, 0, 1<<14)}
		ws[i] = w
		rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if lat, ok := w.do(ctx, c, t, t.url(rng)); ok {
					w.lat = append(w.lat, lat)
				}
			}
		})
	}
	wg.Wait()
	return merge(t.Name, "closed", ws, time.Since(start))
}

// OpenLoop sends at a constant rate for d regardless of how fast answers
// come (no coordinated omission): each send is scheduled at start+i/rate and
// its latency is measured from when it was actually sent; how late the
// loader itself was is reported as LoaderLag. At most maxInflight requests
// are outstanding; sends beyond that are counted as Dropped.
func OpenLoop(ctx context.Context, c *http.Client, t Target, rate float64, d time.Duration, maxInflight int) Result {
	var (
		ws      []*worker
		lags    []time.Duration
		dropped int
		wg      sync.WaitGroup
	)
	free := make(chan *worker, maxInflight)
	for range maxInflight {
		w := &worker{}
		ws = append(ws, w)
		free <- w
	}
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) * float64(time.Second) / rate))
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		var w *worker
		select {
		case w = <-free:
		default:
			dropped++
			continue
		}
		lag := time.Since(due)
		lags = append(lags, lag)
		u := t.url(rng)
		wg.Go(func() {
			defer func() { free <- w }()
			if lat, ok := w.do(ctx, c, t, u); ok {
				w.lat = append(w.lat, lat)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := merge(t.Name, "open", ws, elapsed)
	r.Dropped = dropped
	slices.Sort(lags)
	r.LoaderLag = Latencies(lags).Q(0.99)
	return r
}
