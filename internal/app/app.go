// Package app wires Switchboard together: database, cluster, dialer, telephony
// providers, services and the HTTP server. Main is what `switchboard serve`
// runs and what end-to-end tests start on a :0 port.
package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"switchboard/internal/analysis"
	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/callrun"
	"switchboard/internal/cluster"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway"
	"switchboard/internal/httpapi"
	"switchboard/internal/id"
	"switchboard/internal/numbers"
	"switchboard/internal/recording"
	"switchboard/internal/scheduling"
	"switchboard/internal/sip"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/sandbox"
	"switchboard/internal/throttle"
	"switchboard/internal/twilio"
	"switchboard/internal/ui"
	"switchboard/internal/webhook"
	"switchboard/internal/widget"
)

// Version is set at build time.
var Version = "dev"

// Config is everything `serve` can be told.
type Config struct {
	Addr      string
	DB        string
	PublicURL string
	RateLimit float64
	// PublicKeyRateLimit is how many requests a minute one publishable
	// key may make (burst as many); 0 disables.
	PublicKeyRateLimit float64
	// PublicKeyAddressRateLimit is how many requests a minute a client
	// address may make with publishable keys, all keys together (burst as
	// many); 0 disables.
	PublicKeyAddressRateLimit float64
	// RateLimitSync is how often a node on PostgreSQL shares its per-key
	// rate-limit counts with the other nodes (httpapi.SyncLimits);
	// default httpapi.DefaultLimitSync. Not used on SQLite (one node).
	RateLimitSync time.Duration
	// RefusalLimit is how many refusals per second a client address may
	// add once RefusalBurst are spent: requests whose API key check fails
	// (401) and gateway handshakes that are refused. Past it the client is
	// answered 429 before any lookup. 0 disables.
	RefusalLimit float64
	// RefusalBurst is how many refusals in a row a client address may have.
	RefusalBurst int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client; from anyone else the TCP peer is the client.
	TrustedProxies throttle.Proxies
	// MetricsAddr, when set, is a listener of its own for GET /metrics,
	// which the public port then does not serve.
	MetricsAddr string
	// MetricsToken, when set, is required as "Authorization: Bearer …" on
	// GET /metrics; with no MetricsAddr, /metrics is then served on the
	// public port behind it. With neither, /metrics is not served.
	MetricsToken string
	Sandbox      sandbox.Config
	// SIP, when set, serves SIP calls (outbound through organizations'
	// SIP connections, inbound to their numbers); nil disables SIP.
	SIP *sip.Config
	// Twilio tunes the Twilio provider (organizations' own Twilio
	// accounts): APIBaseURL (--twilio-api-base-url; a fake in tests) and
	// timeouts. The app sets PublicURL (from PublicURL), Accounts,
	// TokenKey and Log, and starts it with call control.
	Twilio twilio.Config
	// LostCallGrace is how long a queued or ringing call may go without any
	// progress, and a conversation may outlive its maximum duration, before
	// housekeeping ends it as lost (its owner died).
	LostCallGrace time.Duration
	// JobPoll is how often a node's dialer looks for attempts the promoter
	// handed out (default 100 ms; a promotion on the same node wakes it).
	JobPoll time.Duration
	// PromoteEvery is how often the leader hands out due scheduled attempts.
	PromoteEvery time.Duration
	// Scheduling tunes dial leases (zero: scheduling's defaults).
	Scheduling scheduling.Config
	// HousekeepingEvery is the housekeeping interval.
	HousekeepingEvery time.Duration
	// ShutdownTimeout bounds graceful shutdown; Close gives each of its
	// stages its own share (stopGatewayBy…).
	ShutdownTimeout time.Duration
	// WebhookAllowPrivate lets webhook endpoints resolve to loopback and
	// private addresses (tests, trusted networks).
	WebhookAllowPrivate bool
	// WebhookEvery is the webhook dispatcher's polling interval.
	WebhookEvery time.Duration
	// Model providers. OpenAI-compatible servers (OpenAI, Ollama, vLLM,
	// llama.cpp) are enabled by a key or an explicit base URL; Anthropic by a key.
	OpenAIBaseURL    string
	OpenAIKey        string
	AnthropicBaseURL string
	AnthropicKey     string
	// Speech providers (speech.go): the local engines when present, cloud
	// ones by key or base URL.
	Speech SpeechConfig
	// SandboxVoice makes sandbox calls audio calls when the local speech
	// engines are present: the persona speaks and listens at 8 kHz μ-law.
	SandboxVoice bool
	// SandboxVoiceCalls bounds the sandbox calls spoken at once (default
	// 4, what the local engines carry in real time on 2 CPUs with their
	// default decoders); more run as text.
	SandboxVoiceCalls int
	// PersonaThink is how long a sandbox persona pauses before answering.
	PersonaThink time.Duration
	// JoinTimeout is how long a web call waits for its client (default 60 s).
	JoinTimeout time.Duration
	// AnalysisEvery is the analysis worker's polling interval (default 500 ms).
	AnalysisEvery time.Duration
	// SecretKey (32 bytes) seals phone connection passwords; when empty,
	// SecretKeyFile is read, else (SQLite only) switchboard.key next to
	// the database, created when missing (secretkey.go).
	SecretKey     []byte
	SecretKeyFile string
	// DataDir holds the call recordings; default: the SQLite database's
	// directory, or ./data with PostgreSQL (recording.go).
	DataDir string
	// NodeLease is how long after its last heartbeat this node counts as
	// dead (its calls then end node-lost); NodeHeartbeat how often it
	// renews (zero: cluster's defaults, 10 s and 1 s).
	NodeLease, NodeHeartbeat time.Duration
	// SweepEvery is how often the leader ends the calls of dead nodes and
	// the web calls nobody joined (default 1 s).
	SweepEvery time.Duration
}

// Default base URLs of the model providers.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// DefaultConfig is the configuration of `switchboard serve` with no flags.
func DefaultConfig() Config {
	return Config{
		Addr:              "127.0.0.1:8080",
		DB:                "sqlite:./data/switchboard.db",
		RateLimit:         100,
		RefusalLimit:      1,
		RefusalBurst:      20,
		LostCallGrace:     5 * time.Minute,
		JobPoll:           200 * time.Millisecond,
		HousekeepingEvery: 10 * time.Second,
		ShutdownTimeout:   20 * time.Second,
		PersonaThink:      300 * time.Millisecond,
		SandboxVoice:      true,
		JoinTimeout:       60 * time.Second,

		// A publishable key starts web calls from anyone's browser, and
		// each costs a conversation: far below RateLimit.
		PublicKeyRateLimit:        60,
		PublicKeyAddressRateLimit: 10,
	}
}

// Main is a running server.
type Main struct {
	cfg     Config
	log     *slog.Logger
	out     io.Writer
	db      *Database
	dialer  *scheduling.Dialer
	sandbox *sandbox.Network
	sip     *sip.Provider // nil when SIP is off
	twilio  *twilio.Provider
	api     *httpapi.Server
	http    *http.Server
	ln      net.Listener
	// metricsLn is the metrics listener (Config.MetricsAddr), if any.
	metricsLn net.Listener
	runtime   *callrun.Runtime
	gateway   *gateway.Server
	calls     *callctl.Service
	// node is this process in the cluster: its heartbeat, the leader
	// lease, live control routed to the node that holds a call's line.
	node   *cluster.Node
	speech *SpeechEngines
	// workers are the background loops Main owns (startWorker);
	// stopWorkers cancels their context, and Close waits for them.
	stopWorkers context.CancelFunc
	workers     sync.WaitGroup
	// BootstrapKey is the key printed on the first start, for tests.
	BootstrapKey string
	OrgID        string
}

// sandboxConfig is the sandbox network of cfg: its personas answer over
// lines the call runtime runs, audio lines when the sandbox speaks
// (cfg.SandboxVoice and the local engines are here).
func (m *Main) sandboxConfig(cfg Config) sandbox.Config {
	sc := cfg.Sandbox
	lines := &sandbox.Lines{Think: cfg.PersonaThink}
	if cfg.SandboxVoice {
		ear, ok1 := m.speech.Transcriber("local")
		mouth, ok2 := m.speech.Synthesizer("local")
		if ok1 && ok2 {
			lines.Ear, lines.Mouth, lines.VoiceCalls = ear, mouth, max(cmp.Or(cfg.SandboxVoiceCalls, 4), 1)
		}
	}
	sc.Lines = lines
	return sc
}

// Start opens and migrates the database, bootstraps the first organization,
// joins the cluster, starts the dialer and begins serving. out receives the
// one-time key banner.
func Start(ctx context.Context, cfg Config, log *slog.Logger, out io.Writer) (*Main, error) {
	m := &Main{cfg: cfg, log: log, out: out}
	workerCtx, stopWorkers := context.WithCancel(context.Background())
	m.stopWorkers = stopWorkers
	ok := false
	defer func() {
		if !ok {
			m.Close(context.Background())
		}
	}()
	db, err := OpenMigrated(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	m.db = db
	if err := m.bootstrap(ctx); err != nil {
		return nil, err
	}
	sealer, err := openSealer(cfg, log)
	if err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(&callsCollector{db: db, desc: prometheus.NewDesc("switchboard_calls", "Calls by status.", []string{"status"}, nil)})

	// Listen first so that a :0 port is known for the default public URL.
	m.ln, err = new(net.ListenConfig).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + m.ln.Addr().String()
	}
	nodeID := cluster.NewID()
	guard := webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}
	providers := assistant.DefaultProviders()
	models, modelNames := newModels(cfg, log.With("component", "conversation"))
	providers.Model = modelNames
	m.speech, err = NewSpeechEngines(cfg.Speech.inheritOpenAI(cfg.OpenAIBaseURL, cfg.OpenAIKey), log.With("component", "speech"))
	if err != nil {
		return nil, err
	}
	providers.Transcriber, providers.Voice = m.speech.assistantProviders()
	m.sandbox = sandbox.New(m.sandboxConfig(cfg), log.With("provider", "sandbox"))
	nets := []telephony.Provider{m.sandbox}
	if cfg.SIP != nil {
		if m.sip, err = sip.New(*cfg.SIP, log); err != nil {
			return nil, err
		}
		nets = append(nets, m.sip)
		reg.MustRegister(m.sip.Collector())
	}
	if m.twilio, err = newTwilio(cfg, db, sealer, log.With("provider", "twilio")); err != nil {
		return nil, err
	}
	nets = append(nets, m.twilio)
	reg.MustRegister(m.twilio.Collector())
	calls := callctl.New(callctl.Config{Store: db, Providers: nets, Node: nodeID, Secrets: sealer, PublicURL: cfg.PublicURL, Log: log})
	m.calls = calls
	sched := scheduling.New(db, calls, cfg.Scheduling, log.With("component", "scheduling"))
	if err := m.sandbox.Start(ctx, calls); err != nil {
		return nil, err
	}
	if m.sip != nil {
		if err := m.sip.Start(ctx, calls); err != nil {
			return nil, fmt.Errorf("%w (--sip-addr HOST:PORT serves SIP elsewhere; --sip-addr off disables it)", err)
		}
		log.Info("serving SIP", "addr", m.sip.Addr().String())
	}
	if err := m.twilio.Start(ctx, calls); err != nil {
		return nil, err
	}
	brains := &conversation.Brains{Models: models, Tools: toolsFor(guard), Log: log.With("component", "conversation")}
	// One budget of refusals per client address, shared by the REST API
	// and the gateway: a client that floods either is slowed on both.
	refusals := throttle.NewLimiter(throttle.LimiterConfig{Rate: cfg.RefusalLimit, Burst: cfg.RefusalBurst})
	vm := newVoiceMetrics(reg)
	recordings := recording.NewArchive(dataDir(cfg), db, log.With("component", "recording"))
	m.runtime = callrun.New(callrun.Config{Store: db, Ender: calls, Brains: brains, Voices: voices{m.speech, log.With("component", "speech")},
		Observer: vm, Recordings: recordings, Log: log.With("component", "conversation")})
	m.node = cluster.New(cluster.Config{ID: nodeID, Store: db, Bus: db.bus(), Addr: m.ln.Addr().String(), Lease: cfg.NodeLease, Renew: cfg.NodeHeartbeat,
		Local: m.runtime, Calls: calls, Log: log.With("component", "cluster")})
	reg.MustRegister(newClusterCollector(m.node))
	m.api = httpapi.New(httpapi.Config{PublicURL: cfg.PublicURL, RateLimit: cfg.RateLimit,
		PublicKeyRate: cfg.PublicKeyRateLimit, PublicAddressRate: cfg.PublicKeyAddressRateLimit, Providers: providers, Webhooks: guard,
		Refusals: refusals, Proxies: cfg.TrustedProxies, Secrets: sealer, Live: m.node, Recordings: recordings,
		Twilio: twilio.NewAccounts(m.twilio, sealer)},
		db, calls, sched, log, reg)
	if db.Kind == "postgres" && (cfg.RateLimit > 0 || cfg.PublicKeyRateLimit > 0) {
		m.startWorker(workerCtx, m.syncLimits)
	}
	m.startWorker(workerCtx, func(ctx context.Context) {
		(&analysis.Worker{Store: db, Log: log.With("component", "analysis"), EventType: callctl.EventAnalysisReady, Every: cfg.AnalysisEvery}).Run(ctx)
	})
	m.gateway = gateway.New(gateway.Config{Store: db, Calls: calls, Runtime: m.runtime,
		Log: log.With("component", "gateway"), Refusals: refusals, Proxies: cfg.TrustedProxies})
	reg.MustRegister(&gatewayCollector{gw: m.gateway, refusals: prometheus.NewDesc("switchboard_gateway_refusals_total",
		"Gateway handshakes answered with plain HTTP instead of an upgrade, by error code.", []string{"reason"}, nil)})
	// A call that ends anywhere stops here if it runs here, and its owner
	// hears of it if another node holds its line.
	if err := calls.Start(ctx, callEvents{runtime: m.runtime, node: m.node}); err != nil {
		return nil, err
	}
	if err := m.node.Start(ctx); err != nil {
		return nil, err
	}
	// The leader's sweeps: the calls of dead nodes (node-lost), the web
	// calls nobody joined, and the schedules whose attempts are all final
	// (schedule.completed).
	m.onLeader(workerCtx, cmpOrDur(cfg.SweepEvery, time.Second), func(ctx context.Context) {
		if n, err := calls.EndOrphaned(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Warn("ending the calls of dead nodes failed", "err", err)
		} else if n > 0 {
			log.Warn("ended the live calls of dead nodes (node-lost)", "count", n)
		}
		if _, err := calls.EndUnjoined(ctx, cmpOrDur(cfg.JoinTimeout, 60*time.Second)); err != nil && ctx.Err() == nil {
			log.Warn("ending unjoined web calls failed", "err", err)
		}
		if _, err := sched.Complete(ctx); err != nil && ctx.Err() == nil {
			log.Warn("marking finished schedules completed failed", "err", err)
		}
	})
	m.startWorker(workerCtx, func(ctx context.Context) {
		(&webhook.Dispatcher{Store: db, Sender: &webhook.Sender{Client: &http.Client{Transport: guard.Transport()}},
			Log: log.With("component", "webhooks"), Every: cfg.WebhookEvery}).Run(ctx)
	})

	// Every node dials what the leader's promoter hands out (a draining
	// node takes nothing: the others do).
	m.dialer = &scheduling.Dialer{Store: db, Dial: withFailpoint(sched.DialAttempts), Every: cfg.JobPoll,
		Hold: sched.DialHold(), Refuse: m.node.Draining, Log: log.With("component", "dialer")}
	if err := m.dialer.Start(ctx); err != nil {
		return nil, err
	}
	// Housekeeping, on the leader: lost calls, purges.
	m.onLeader(workerCtx, cmpOrDur(cfg.HousekeepingEvery, 10*time.Second), func(ctx context.Context) {
		if err := m.housekeeping(ctx, calls, sched); err != nil && ctx.Err() == nil {
			log.Warn("housekeeping failed", "err", err)
		}
	})
	// The promoter runs on one node, the leader: one promoter is what
	// keeps the caps exact.
	m.onLeader(workerCtx, cmpOrDur(cfg.PromoteEvery, 50*time.Millisecond), func(ctx context.Context) {
		n, err := sched.Promote(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("promoting due attempts failed", "err", err)
		}
		if n > 0 {
			m.dialer.Nudge()
		}
	})

	mux := http.NewServeMux()
	if err := m.serveMetrics(ctx, workerCtx, mux, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), refusals); err != nil {
		return nil, err
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":true,"message":"ok"}`)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if m.node.Draining() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"status":false,"message":"draining: this node is shutting down"}`)
			return
		}
		if err := db.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"status":false,"message":"database unavailable"}`)
			return
		}
		fmt.Fprintln(w, `{"status":true,"message":"ready"}`)
	})
	mux.Handle("GET "+httpapi.GatewayPath, m.gateway)
	// Twilio's webhooks and media streams: signed by Twilio, outside the
	// REST middleware, behind the refusal budget.
	mux.Handle("/twilio/", refusalBudget(m.twilio.Handler(), refusals, cfg.TrustedProxies))
	// The web widget's scripts and demo page: static, public, outside the REST middleware.
	wh, err := widget.New(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	wh.Register(mux)
	// The operator dashboard: its own sessions and CSRF, outside the REST
	// middleware; failed sign-ins spend the same refusal budget.
	// The dashboard edits assistants, buys numbers and registers
	// endpoints with the REST API's own checks and code paths.
	dash, err := ui.New(ui.Config{Store: db, Recordings: recordings, Refusals: refusals, Proxies: cfg.TrustedProxies,
		PublicURL: cfg.PublicURL, Log: log.With("component", "ui"), StartWebCall: calls.CreateWebCall,
		PlacePhoneCall: func(ctx context.Context, orgID, purchaseID, to string) (call.Call, error) {
			return calls.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: orgID, PurchaseID: purchaseID, To: to})
		},
		Assistants: assistantjson.Config{Providers: providers, URLs: guard}, Webhooks: guard,
		Numbers: &numbers.Service{Store: db, Providers: calls, Twilio: twilio.NewAccounts(m.twilio, sealer), Secrets: sealer,
			Log: log.With("component", "numbers"), Now: time.Now}})
	if err != nil {
		return nil, err
	}
	mux.Handle(ui.Prefix, dash)
	// A browser that asks for / is sent to the dashboard; API clients
	// keep the API's JSON 404.
	mux.Handle("GET /{$}", ui.RootRedirect(m.api))
	mux.Handle("/", m.api)

	m.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	m.http.RegisterOnShutdown(dash.Close) // Shutdown waits for live-update streams: end them
	go func() {
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	log.Info("serving", "addr", m.ln.Addr().String(), "db", db.Kind, "public_url", cfg.PublicURL, "version", Version, "node_id", m.node.ID())
	ok = true
	return m, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cmpOrDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// startWorker runs fn(ctx) in a goroutine that Close waits for; ctx is
// the workers' context, which Close cancels (stopWorkers).
func (m *Main) startWorker(ctx context.Context, fn func(ctx context.Context)) {
	m.workers.Go(func() { fn(ctx) })
}

// onLeader runs fn every interval while this node leads the cluster (a
// worker Close waits for, like startWorker's).
func (m *Main) onLeader(ctx context.Context, every time.Duration, fn func(ctx context.Context)) {
	m.startWorker(ctx, func(ctx context.Context) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if m.node.Leader() {
				fn(ctx)
			}
		}
	})
}

// Addr is the address the server listens on (useful with :0).
func (m *Main) Addr() string { return m.ln.Addr().String() }

// URL is http://Addr.
func (m *Main) URL() string { return "http://" + m.Addr() }

// DB is the open database (for tests and the CLI).
func (m *Main) DB() *Database { return m.db }

func (m *Main) bootstrap(ctx context.Context) error {
	now := time.Now().UTC()
	org := auth.Org{ID: id.New(id.Org), Name: "default", CreatedAt: now}
	key, secret := auth.NewKey(org.ID, "bootstrap", auth.AllScopes, now)
	created, err := m.db.Bootstrap(ctx, org, key)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if !created {
		return nil
	}
	m.BootstrapKey, m.OrgID = secret, org.ID
	fmt.Fprintf(m.out, "\n"+
		"==================== Switchboard first start ====================\n"+
		"Created organization \"default\" (%s) and an API key with every scope.\n"+
		"It is shown ONCE; store it now. Send it in the X-API-Key header.\n\n"+
		"  API key: %s\n\n"+
		"Scopes: %s\n"+
		"=================================================================\n\n",
		org.ID, secret, strings.Join(auth.AllScopes, ","))
	return nil
}

func (m *Main) housekeeping(ctx context.Context, calls *callctl.Service, sched *scheduling.Service) error {
	var errs []error
	grace := max(m.cfg.LostCallGrace, 2*m.cfg.Sandbox.NoAnswerTimeout)
	if n, err := calls.EndLost(ctx, grace); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		m.log.Warn("ended lost calls", "count", n)
	}
	if err := m.db.PurgeIdempotency(ctx, time.Now().Add(-24*time.Hour)); err != nil {
		errs = append(errs, err)
	}
	m.api.FlushUsage(ctx)
	return errors.Join(errs...)
}

// Shares of Config.ShutdownTimeout, in tenths, that the stages of Close
// run until, counted from the start of Close. Each stage has its own
// deadline, so one that overruns (a web client that never answers the
// close handshake) cannot take the next one's time; a stage that finishes
// early leaves what it did not use to the next. Every stage so gets at
// least its share: the gateway and the HTTP drain two tenths each, dials
// under way three, then one more once they are canceled, and the background
// loops, phone conversations and providers the last two.
const (
	stopGatewayBy = 2  // live web calls end system-shutdown; close handshakes
	stopHTTPBy    = 4  // in-flight requests finish
	stopDialsBy   = 7  // dials under way finish
	cancelDialsBy = 8  // dials still under way are canceled and return
	stopCallsBy   = 10 // loops stop; conversations and provider calls end
)

// Close shuts down gracefully in stages, each within its own share of
// ShutdownTimeout (stopGatewayBy…): end live web calls and close their
// sockets (clients that do not answer the close handshake in time are cut,
// which is logged, not an error), stop taking requests and let running ones
// finish, let dials under way finish (those that do not are canceled), stop
// the background loops, end live phone calls and conversations, then flush
// and close the database. It returns what did not stop cleanly within its
// share, naming it. Work that overran its share still runs when Close
// returns: the database is then left open, and closed once that work ends.
func (m *Main) Close(ctx context.Context) error {
	total := cmpOrDur(m.cfg.ShutdownTimeout, 20*time.Second)
	began := time.Now()
	stage := func(tenths int) (context.Context, context.CancelFunc) {
		return context.WithDeadline(ctx, began.Add(total*time.Duration(tenths)/10))
	}
	var errs []error
	// running are closed when the work of a stage that overran has ended.
	var running []<-chan struct{}
	if m.gateway != nil {
		// Before the HTTP server: Shutdown does not wait for hijacked
		// (websocket) connections.
		sctx, cancel := stage(stopGatewayBy)
		if err := m.gateway.Close(sctx); err != nil {
			m.log.Warn("web-call clients did not close their sockets in time and were cut", "err", err, "after", time.Since(began).String())
		}
		cancel()
		// A cut session ends at once, but it may still be recording its
		// call's end: the database waits for it (m.gateway.Stopped below).
	}
	if m.http != nil {
		sctx, cancel := stage(stopHTTPBy)
		if err := m.http.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("http: requests did not finish in time: %w", err))
			m.http.Close()
		}
		cancel()
	} else if m.ln != nil {
		m.ln.Close()
	}
	if m.dialer != nil {
		sctx, cancel := stage(stopDialsBy)
		err := m.dialer.Stop(sctx)
		cancel()
		if err != nil { // the share ran out with dials under way
			sctx, cancel := stage(cancelDialsBy)
			if cerr := m.dialer.StopAndCancel(sctx); cerr != nil {
				err = fmt.Errorf("%w; %w", err, cerr)
				running = append(running, m.dialer.Stopped())
			} else {
				err = fmt.Errorf("%w; they were canceled", err)
			}
			cancel()
		}
		errs = append(errs, err)
	}
	sctx, cancel := stage(stopCallsBy)
	done, err := m.stopCalls(sctx)
	cancel()
	errs = append(errs, err)
	if m.gateway != nil {
		running = append(running, m.gateway.Stopped())
	}
	running = append(running, done)
	// Work still ending (a cut web session recording its call's end, dials
	// that were canceled) gets what is left of the whole budget.
	last := time.NewTimer(time.Until(began.Add(total)))
	defer last.Stop()
	spent := false
	running = slices.DeleteFunc(running, func(ch <-chan struct{}) bool {
		if !spent {
			select {
			case <-ch:
			case <-last.C:
				spent = true
			}
		}
		select {
		case <-ch:
			return true
		default:
			return false
		}
	})
	if m.node != nil {
		// The calls are stopped: give the leases up, so that another node
		// leads at once and none waits for this one's lease to lapse.
		_ = m.node.Stop(ctx)
	}
	if m.api != nil {
		m.api.Close()
	}
	if m.db != nil {
		if len(running) == 0 {
			errs = append(errs, m.db.Close())
		} else {
			// Closed under that work, the database would fail its
			// writes (a job's, a webhook delivery's record).
			errs = append(errs, errors.New("database: left open until the work above ends"))
			go func() {
				for _, ch := range running {
					<-ch
				}
				if err := m.db.Close(); err != nil {
					m.log.Warn("closing the database after shutdown failed", "err", err)
				}
			}()
		}
	}
	return errors.Join(errs...)
}

// stopCalls stops the background loops, the phone conversations, the
// speech engines and the providers (live calls end system-shutdown). The
// loops are canceled first and waited for last, so that one slow to return
// (a webhook delivery waits for its receiver) holds up no call's end. When
// ctx ends first, the error names the part still stopping; done is closed
// once every part has stopped, whenever that is.
func (m *Main) stopCalls(ctx context.Context) (done <-chan struct{}, err error) {
	if m.stopWorkers != nil {
		m.stopWorkers()
	}
	parts := []struct {
		name string
		stop func() error
	}{
		{"phone conversations", func() error {
			if m.runtime != nil {
				m.runtime.Stop()
			}
			return nil
		}},
		{"speech engines", m.speech.Close},
		{"provider calls", func() error {
			var errs []error
			if m.sip != nil {
				errs = append(errs, m.sip.Close())
			}
			if m.twilio != nil {
				errs = append(errs, m.twilio.Close())
			}
			if m.sandbox != nil {
				errs = append(errs, m.sandbox.Close())
			}
			return errors.Join(errs...)
		}},
		{"background loops", func() error {
			m.workers.Wait()
			return nil
		}},
	}
	var at atomic.Int32 // the part stopping
	var errs []error    // read once finished is closed
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i, p := range parts {
			at.Store(int32(i))
			if err := p.stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop: %s: %w", p.name, err))
			}
		}
	}()
	select {
	case <-finished:
		return finished, errors.Join(errs...)
	case <-ctx.Done():
		return finished, fmt.Errorf("stop: %s did not end in time: %w", parts[at.Load()].name, ctx.Err())
	}
}

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
	if m.metricsLn == nil {
		return ""
	}
	return "http://" + m.metricsLn.Addr().String()
}

// serveMetrics serves GET /metrics where the configuration says: on a
// listener of its own (MetricsAddr; the public port does not serve it,
// and the listener also serves the Go profiler under /debug/pprof/),
// else on the public mux when a token guards it, else nowhere. The token,
// when set, is required wherever /metrics is served; wrong tokens spend
// the client's refusal budget like bad API keys.
func (m *Main) serveMetrics(ctx, workerCtx context.Context, public *http.ServeMux, h http.Handler, refusals *throttle.Limiter) error {
	if m.cfg.MetricsToken != "" {
		h = bearer(m.cfg.MetricsToken, h, refusals, m.cfg.TrustedProxies)
	}
	switch {
	case m.cfg.MetricsAddr != "":
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", m.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		m.metricsLn = ln
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
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelWarn)}
		m.startWorker(workerCtx, func(ctx context.Context) {
			stop := context.AfterFunc(ctx, func() { srv.Close() })
			defer stop()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.log.Error("metrics server stopped", "err", err)
			}
		})
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var adm throttle.Admission
		if refusals != nil {
			adm = refusals.Admit(proxies.Client(r))
		}
		if adm.Blocked {
			httpapi.WriteError(w, &apperr.Error{Kind: apperr.RateLimited, RetryAfter: adm.Wait,
				Message: "too many requests from this address failed authentication; retry later"})
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		good := ok && subtle.ConstantTimeCompare(sum[:], want[:]) == 1
		refusals.Done(adm, !good)
		if !good {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			httpapi.WriteError(w, apperr.New(apperr.Unauthenticated, "metrics need Authorization: Bearer <the metrics token>"))
			return
		}
		h.ServeHTTP(w, r)
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
