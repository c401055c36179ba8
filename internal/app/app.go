// Package app is Switchboard's composition root: Start builds the parts
// (database, telephony providers, call control, the call runtime, the
// cluster node, the REST API, the gateway, the dialer, the background loops
// and the HTTP servers), lists them in order (parts) and starts them; Close
// stops the same list in reverse. Main is what `switchboard serve` runs and
// what end-to-end tests start on a :0 port.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"switchboard/internal/analysis"
	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/callrun"
	"switchboard/internal/campaign"
	"switchboard/internal/catalog"
	"switchboard/internal/cluster"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway"
	"switchboard/internal/httpapi"
	"switchboard/internal/id"
	"switchboard/internal/llm"
	"switchboard/internal/numbers"
	"switchboard/internal/recording"
	"switchboard/internal/routing/ask"
	"switchboard/internal/secret"
	"switchboard/internal/sip"
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
	// DialPoll is how often a node's dialer looks for attempts the promoter
	// handed out (DefaultConfig: 200 ms; zero is campaign.DefaultDialEvery,
	// 100 ms); a promotion on the same node wakes it at once.
	DialPoll time.Duration
	// PromoteEvery is how often the leader hands out due scheduled attempts.
	PromoteEvery time.Duration
	// Campaigns tunes the campaigns: dial leases, the server's caps, the
	// clock (zero fields: campaign's defaults).
	Campaigns campaign.Config
	// HousekeepingEvery is the housekeeping interval.
	HousekeepingEvery time.Duration
	// ShutdownTimeout bounds graceful shutdown; Close gives each part
	// its own share (parts: stopGatewayBy…).
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
	// AnalysisModel analyses the calls of assistants without a model of
	// their own (--analysis-model); its provider must be configured.
	AnalysisModel analysis.ModelChoice
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
		DialPoll:          200 * time.Millisecond,
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

// Main is a running server: its parts, as Start built them (parts lists
// them in order), and the database under them.
type Main struct {
	cfg Config
	log *slog.Logger
	out io.Writer
	db  *Database

	api   *httpapi.Server
	calls *callctl.Service
	// node is this process in the cluster: its heartbeat, the leader
	// lease, live control routed to the node that holds a call's line.
	node    *cluster.Node
	loops   *loops
	metrics *server // the metrics listener's (Config.MetricsAddr); nil without
	sandbox *sandbox.Network
	twilio  *twilio.Provider
	sip     *sip.Provider // nil when SIP is off
	speech  *SpeechEngines
	runtime *callrun.Runtime
	// conversations is the runtime as a part of the list.
	conversations *conversations
	dialer        *campaign.Dialer
	http          *server
	gateway       *gateway.Server
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

// Start opens and migrates the database, bootstraps the first
// organization, builds the server's parts and starts them in order
// (parts): the cluster node joins, the providers listen, the dialer
// dials and, last, the HTTP server serves. out receives the one-time key
// banner. A start that fails stops what it started and closes the
// database.
func Start(ctx context.Context, cfg Config, log *slog.Logger, out io.Writer) (*Main, error) {
	m := &Main{cfg: cfg, log: log, out: out}
	err := m.build(ctx)
	if err == nil {
		err = m.parts().Start(ctx)
	}
	if err != nil {
		_ = m.Close(context.Background())
		return nil, err
	}
	if m.sip != nil {
		log.Info("serving SIP", "addr", m.sip.Addr().String())
	}
	log.Info("serving", "addr", m.Addr(), "db", m.db.Kind, "public_url", m.cfg.PublicURL, "version", Version, "node_id", m.node.ID())
	return m, nil
}

// build makes the parts, bottom up: each constructor takes what its part
// calls downward; what a part reports upward it is given as it starts
// (parts). Nothing is set on a part after it is built.
func (m *Main) build(ctx context.Context) error {
	cfg, log := m.cfg, m.log
	db, err := OpenMigrated(ctx, cfg.DB)
	if err != nil {
		return err
	}
	m.db = db
	if err := m.bootstrap(ctx); err != nil {
		return err
	}
	sealer, err := openSealer(cfg, log)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(&callsCollector{db: db, desc: prometheus.NewDesc("switchboard_calls", "Calls by status.", []string{"status"}, nil)})

	// Listen first so that a :0 port is known for the default public URL.
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return err
	}
	m.http = &server{Server: &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}, name: "http", ln: ln, graceful: true, log: log}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + ln.Addr().String()
		m.cfg.PublicURL = cfg.PublicURL
	}

	// The calls, bottom up: the speech engines, the providers, call
	// control over them, the runtime over call control, the node over
	// both.
	guard := webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}
	providers := assistant.DefaultProviders()
	models, modelNames := newModels(cfg, log.With("component", "conversation"))
	providers.Model = modelNames
	if p := cfg.AnalysisModel.Provider; p != "" && models[p] == nil {
		msg := fmt.Sprintf("--analysis-model: model provider %q is not configured on this server", p)
		if c, known := catalog.Lookup(catalog.Model, p); known {
			msg += "; " + c.HowToEnable()
		}
		return errors.New(msg)
	}
	if m.speech, err = NewSpeechEngines(cfg.Speech.inheritOpenAI(cfg.OpenAIBaseURL, cfg.OpenAIKey), log.With("component", "speech")); err != nil {
		return err
	}
	providers.Transcriber, providers.Voice = m.speech.assistantProviders()
	m.sandbox = sandbox.New(m.sandboxConfig(cfg), log.With("provider", "sandbox"))
	nets := []telephony.Network{m.sandbox}
	if cfg.SIP != nil {
		if m.sip, err = sip.New(*cfg.SIP, log); err != nil {
			return err
		}
		nets = append(nets, m.sip)
		reg.MustRegister(m.sip.Collector())
	}
	if m.twilio, err = newTwilio(cfg, db, sealer, log.With("provider", "twilio")); err != nil {
		return err
	}
	nets = append(nets, m.twilio)
	reg.MustRegister(m.twilio.Collector())
	nodeID := cluster.NewID()
	m.calls = callctl.New(callctl.Config{Store: db, Providers: nets, Node: nodeID, Secrets: sealer, PublicURL: cfg.PublicURL, Log: log,
		Router: &ask.Client{HTTP: &http.Client{Transport: guard.Transport()}}})
	sched := campaign.New(db, m.calls, cfg.Campaigns, log.With("component", "campaign"))
	brains := &conversation.Brains{Models: models, Tools: toolsFor(guard), Log: log.With("component", "conversation")}
	recordings := recording.NewArchive(dataDir(cfg), db, log.With("component", "recording"))
	m.runtime = callrun.New(callrun.Config{Store: db, Ender: m.calls, Brains: brains, Voices: voices{m.speech, log.With("component", "speech")},
		Observer: newVoiceMetrics(reg), Recordings: recordings, Log: log.With("component", "conversation")})
	m.conversations = &conversations{rt: m.runtime}
	m.node = cluster.New(cluster.Config{ID: nodeID, Store: db, Bus: db.bus(), Addr: ln.Addr().String(), Lease: cfg.NodeLease, Renew: cfg.NodeHeartbeat,
		Local: m.runtime, Calls: m.calls, Log: log.With("component", "cluster")})
	reg.MustRegister(newClusterCollector(m.node))

	// What serves them: the REST API, the gateway, the dialer.
	// One budget of refusals per client address, shared by the REST API
	// and the gateway: a client that floods either is slowed on both.
	refusals := throttle.NewLimiter(throttle.LimiterConfig{Rate: cfg.RefusalLimit, Burst: cfg.RefusalBurst})
	m.api = httpapi.New(httpapi.Config{PublicURL: cfg.PublicURL, RateLimit: cfg.RateLimit,
		PublicKeyRate: cfg.PublicKeyRateLimit, PublicAddressRate: cfg.PublicKeyAddressRateLimit, Providers: providers, Webhooks: guard,
		Refusals: refusals, Proxies: cfg.TrustedProxies, Secrets: sealer, Live: m.node, Recordings: recordings,
		Twilio: twilio.NewAccounts(m.twilio, sealer), Sandbox: m.sandbox},
		db, m.calls, sched, log, reg)
	m.gateway = gateway.New(gateway.Config{Store: db, Calls: m.calls, Runtime: m.runtime,
		Log: log.With("component", "gateway"), Refusals: refusals, Proxies: cfg.TrustedProxies})
	reg.MustRegister(&gatewayCollector{gw: m.gateway, refusals: prometheus.NewDesc("switchboard_gateway_refusals_total",
		"Gateway handshakes answered with plain HTTP instead of an upgrade, by error code.", []string{"reason"}, nil)})
	// Every node dials what the leader's promoter hands out (a draining
	// node takes nothing: the others do).
	m.dialer = &campaign.Dialer{Store: db, Dial: withFailpoint(sched.DialAttempts), Every: cfg.DialPoll,
		Hold: sched.DialHold(), Refuse: m.node.Draining, CancelGrace: dialCancelGrace(cfg), Log: log.With("component", "dialer")}
	m.loops = m.backgroundLoops(sched, guard, models)

	mux := http.NewServeMux()
	if err := m.serveMetrics(ctx, mux, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), refusals); err != nil {
		return err
	}
	return m.route(mux, refusals, guard, providers, recordings, sealer)
}

// backgroundLoops are the loops of the list's "background loops" part:
// the rate-limit sync (PostgreSQL), the analysis worker, the webhook
// dispatcher, and on the leader the sweeps, housekeeping and the promoter.
func (m *Main) backgroundLoops(sched *campaign.Service, guard webhook.Guard, models map[string]llm.Client) *loops {
	cfg, log, db, calls := m.cfg, m.log, m.db, m.calls
	l := &loops{}
	if db.Kind == "postgres" && (cfg.RateLimit > 0 || cfg.PublicKeyRateLimit > 0) {
		l.add(m.syncLimits)
	}
	l.add(func(ctx context.Context) {
		(&analysis.Worker{Store: db, Log: log.With("component", "analysis"), PublicURL: cfg.PublicURL, Every: cfg.AnalysisEvery,
			Models: models, Fallback: cfg.AnalysisModel}).Run(ctx)
	})
	// The leader's sweeps: the calls of dead nodes (node-lost), the web
	// calls nobody joined, and the schedules whose attempts are all final
	// (schedule.completed).
	l.every(cmpOrDur(cfg.SweepEvery, time.Second), m.node.Leader, func(ctx context.Context) {
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
	l.add(func(ctx context.Context) {
		(&webhook.Dispatcher{Store: db, Sender: &webhook.Sender{Client: &http.Client{Transport: guard.Transport()}},
			Log: log.With("component", "webhooks"), Every: cfg.WebhookEvery}).Run(ctx)
	})
	// Housekeeping, on the leader: lost calls, purges.
	l.every(cmpOrDur(cfg.HousekeepingEvery, 10*time.Second), m.node.Leader, func(ctx context.Context) {
		if err := m.housekeeping(ctx, calls, sched); err != nil && ctx.Err() == nil {
			log.Warn("housekeeping failed", "err", err)
		}
	})
	// The promoter runs on one node, the leader: one promoter is what
	// keeps the caps exact.
	l.every(cmpOrDur(cfg.PromoteEvery, 50*time.Millisecond), m.node.Leader, func(ctx context.Context) {
		n, err := sched.Promote(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("promoting due attempts failed", "err", err)
		}
		if n > 0 {
			m.dialer.Nudge()
		}
	})
	return l
}

// route mounts on mux what the HTTP server serves besides /metrics: the
// probes, the gateway, Twilio's callbacks, the widget, the dashboard and
// the REST API.
func (m *Main) route(mux *http.ServeMux, refusals *throttle.Limiter, guard webhook.Guard, providers assistant.Providers,
	recordings *recording.Archive, sealer *secret.Sealer) error {
	cfg, db, calls := m.cfg, m.db, m.calls
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
		return err
	}
	wh.Register(mux)
	// The operator dashboard: its own sessions and CSRF, outside the REST
	// middleware; failed sign-ins spend the same refusal budget.
	// The dashboard edits assistants, buys numbers and registers
	// endpoints with the REST API's own checks and code paths.
	dash, err := ui.New(ui.Config{Store: db, Recordings: recordings, Refusals: refusals, Proxies: cfg.TrustedProxies,
		PublicURL: cfg.PublicURL, Log: m.log.With("component", "ui"), StartWebCall: calls.CreateWebCall,
		PlacePhoneCall: func(ctx context.Context, orgID, purchaseID, to string) (call.Call, error) {
			return calls.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: orgID, PurchaseID: purchaseID, To: to})
		},
		Assistants: assistantjson.Config{Providers: providers, URLs: guard}, Webhooks: guard,
		Numbers: &numbers.Service{Store: db, Providers: calls, Twilio: twilio.NewAccounts(m.twilio, sealer), Secrets: sealer,
			Log: m.log.With("component", "numbers"), Now: time.Now}})
	if err != nil {
		return err
	}
	mux.Handle(ui.Prefix, dash)
	// A browser that asks for / is sent to the dashboard; API clients
	// keep the API's JSON 404.
	mux.Handle("GET /{$}", ui.RootRedirect(m.api))
	mux.Handle("/", m.api)
	m.http.Handler = mux
	m.http.RegisterOnShutdown(dash.Close) // Shutdown waits for live-update streams: end them
	return nil
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

// Addr is the address the server listens on (useful with :0).
func (m *Main) Addr() string { return m.http.ln.Addr().String() }

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

func (m *Main) housekeeping(ctx context.Context, calls *callctl.Service, sched *campaign.Service) error {
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

// Close stops the parts in reverse order, each by its share of
// ShutdownTimeout (parts): live web calls end and their sockets close
// (clients that do not answer the close handshake in time are cut, which
// is logged, not an error), the HTTP server stops taking requests and lets
// running ones finish, dials under way finish (those that do not are
// canceled), the phone conversations and the providers' calls end, the
// background loops stop, then the node gives its leases up and key usage
// is flushed. It then closes the database. It returns what did not stop
// cleanly within its share, naming it. Work that overran its share still
// runs when Close returns: the database is then left open, and closed once
// that work ends.
func (m *Main) Close(ctx context.Context) error {
	left, err := m.parts().Stop(ctx, m.budget())
	return errors.Join(err, m.closeDatabase(left))
}

// closeDatabase closes the database, at once when nothing the parts left
// runs (left is nil), else once it has ended: closed under that work, the
// database would fail its writes (a dial's, a webhook delivery's record).
func (m *Main) closeDatabase(left <-chan struct{}) error {
	switch {
	case m.db == nil:
		return nil
	case left == nil:
		return m.db.Close()
	}
	go func() {
		<-left
		if err := m.db.Close(); err != nil {
			m.log.Warn("closing the database after shutdown failed", "err", err)
		}
	}()
	return errors.New("database: left open until the work above ends")
}
