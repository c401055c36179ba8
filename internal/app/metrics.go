package app

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/gateway"
	"switchboard/internal/httpapi"
	"switchboard/internal/store"
	"switchboard/internal/throttle"
)

// callsCollector reports calls by status from the per-status totals.
type callsCollector struct {
	db   *Database
	desc *prometheus.Desc
}

func (c *callsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *callsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cc, ok := c.db.Store.(store.Counter)
	if !ok {
		return
	}
	counts, err := cc.CallCounts(ctx)
	if err != nil {
		return
	}
	for st := call.Queued; st <= call.Ended; st++ {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), st.Text())
	}
}

// MetricsURL is http://address of the metrics listener, or "" when there
// is none (Config.MetricsAddr empty).
func (m *Main) MetricsURL() string {
	if m.metrics == nil {
		return ""
	}
	return "http://" + m.metrics.ln.Addr().String()
}

// serveMetrics serves GET /metrics where the configuration says: on a
// listener of its own (MetricsAddr, bound now, served by the metrics
// server part; the public port does not serve it, and the listener also
// serves the Go profiler under /debug/pprof/), else on the public mux
// when a token guards it, else nowhere. The token,
// when set, is required wherever /metrics is served; wrong tokens spend
// the client's refusal budget like bad API keys.
func (m *Main) serveMetrics(ctx context.Context, public *http.ServeMux, h http.Handler, refusals *throttle.Limiter) error {
	if m.cfg.MetricsToken != "" {
		h = bearer(m.cfg.MetricsToken, h, refusals, m.cfg.TrustedProxies)
	}
	switch {
	case m.cfg.MetricsAddr != "":
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", m.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", h)
		// The Go profiler, on this listener only (never the public port),
		// behind the same token: CPU, heap, goroutines and mutex waits of
		// a running node, for `go tool pprof`.
		prof := http.NewServeMux()
		prof.HandleFunc("/debug/pprof/", pprof.Index)
		prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
		prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
		prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		var ph http.Handler = prof
		if m.cfg.MetricsToken != "" {
			ph = bearer(m.cfg.MetricsToken, prof, refusals, m.cfg.TrustedProxies)
		}
		mux.Handle("GET /debug/pprof/", ph)
		m.metrics = &server{Server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelWarn)}, name: "metrics", ln: ln, log: m.log}
		m.log.Info("serving metrics", "addr", ln.Addr().String(), "token", m.cfg.MetricsToken != "")
	case m.cfg.MetricsToken != "":
		public.Handle("GET /metrics", h)
		m.log.Info("serving metrics on the public port behind the token")
	default:
		m.log.Info("metrics are not served: set --metrics-addr (or --metrics-token to serve them on the public port)")
	}
	return nil
}

// bearer requires "Authorization: Bearer token" (compared in constant
// time). A wrong token is refused like a bad API key: the API's error
// body with a requestId, spending the client's refusal budget, and 429
// with Retry-After once it is spent.
func bearer(token string, h http.Handler, refusals *throttle.Limiter, proxies throttle.Proxies) http.Handler {
	want := sha256.Sum256([]byte(token))
	check := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			httpapi.WriteError(w, apperr.New(apperr.Unauthenticated, "metrics need Authorization: Bearer <the metrics token>"))
			return
		}
		h.ServeHTTP(w, r)
	})
	return throttle.Guard(refusals, proxies, check,
		func(status int) bool { return status == http.StatusUnauthorized },
		func(w http.ResponseWriter, wait time.Duration) {
			httpapi.WriteError(w, &apperr.Error{Kind: apperr.RateLimited, RetryAfter: wait,
				Message: "too many requests from this address failed authentication; retry later"})
		})
}

// gatewayCollector reports the gateway's counters.
type gatewayCollector struct {
	gw       *gateway.Server
	refusals *prometheus.Desc
}

func (c *gatewayCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.refusals }

func (c *gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range c.gw.Stats().Refusals {
		ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(n), reason)
	}
}
