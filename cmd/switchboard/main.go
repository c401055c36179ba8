// Command switchboard is the Switchboard server, its admin CLI and its
// developer clients.
//
//	switchboard serve [--addr A] [--db URL] [--public-url URL] [--rate-limit N] [--metrics-addr A] …
//	switchboard migrate [--db URL]
//	switchboard org create --name NAME [--db URL]
//	switchboard key create --org ORG_ID --scopes s1,s2 [--name NAME] [--db URL]
//	switchboard key create --public --org ORG_ID --assistants asst_a,… --origins https://a.example,… [--name NAME] [--db URL]
//	switchboard key list --org ORG_ID [--db URL]
//	switchboard key revoke KEY_ID [--db URL]
//	switchboard user create --org ORG_ID --email E [--name N] [--db URL]   (password on stdin or SWITCHBOARD_USER_PASSWORD)
//	switchboard user list --org ORG_ID [--db URL]
//	switchboard user delete USER_ID [--db URL]
//	switchboard webhooks listen [--forward-to URL] [--events a,b] [--url URL]   (key in SWITCHBOARD_API_KEY)
//	switchboard call web ASSISTANT_ID [--url URL]                             (key in SWITCHBOARD_API_KEY)
//	switchboard version
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	_ "time/tzdata"

	"switchboard/internal/analysis"
	"switchboard/internal/app"
	"switchboard/internal/auth"
	"switchboard/internal/campaign"
	"switchboard/internal/cluster"
	"switchboard/internal/id"
	"switchboard/internal/schedule"
	"switchboard/internal/secret"
	"switchboard/internal/sip"
	"switchboard/internal/speech/cloud/deepgram"
	"switchboard/internal/speech/cloud/elevenlabs"
	"switchboard/internal/store"
	"switchboard/internal/telephony/sandbox"
	"switchboard/internal/throttle"
	"switchboard/internal/twilio"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "switchboard:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage: switchboard <command> [flags]

server and administration (they open the database: --db, env SWITCHBOARD_DB,
default sqlite:./data/switchboard.db, relative to the directory you run in):
  serve                 run the server (migrates the database first)
  migrate               apply database migrations (creates the database if missing)
  org create --name N   create an organization; prints its id (creates the database if missing)
  key create --org ID --scopes a,b [--name N]
                        create an API key; prints the key (shown once)
  key create --public --org ID --assistants a,b --origins https://a.example,… [--name N]
                        create a publishable key (pk_…) a web page may hold: it
                        only starts web calls for those assistants from those origins
  key list --org ID     list an organization's keys, secret and publishable (never the keys)
  key revoke KEY_ID     revoke a key (key_… or pkey_…) at once
  user create --org ID --email E [--name N]
                        create a dashboard (/ui) operator; the password is read
                        from SWITCHBOARD_USER_PASSWORD, else from stdin
  user list --org ID    list an organization's operators
  user delete USER_ID   delete an operator and sign it out everywhere
  Every command names the database it opens on stderr; all but migrate and
  org create refuse a SQLite file that does not exist.

clients of a running server (its REST API: --url, env SWITCHBOARD_URL, default
http://127.0.0.1:8080; the API key in SWITCHBOARD_API_KEY, or --api-key):
  webhooks listen [--forward-to URL] [--events a,b]
                        receive the organization's webhooks on this machine: prints
                        each delivery, verified, and POSTs it to --forward-to
  call web ASSISTANT_ID start a web call and talk to the assistant in text: each
                        line you type is said; its replies are printed

  version               print the version

Run "switchboard <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := command(ctx, args, stdout, stderr)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// errHelpShown is what a command's -h returns once its usage is on stdout.
var errHelpShown = errors.New("help shown")

// parse parses a command's flags. -h (-help, --help) prints the command's
// usage on stdout and returns errHelpShown, which run turns into success;
// a bad flag prints it on the flag set's output (stderr) and fails.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	errOut := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: switchboard %s [flags]\n\nflags:\n", fs.Name())
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	fs.SetOutput(errOut)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = buf.WriteTo(stdout)
		return errHelpShown
	}
	_, _ = buf.WriteTo(errOut)
	return err
}

func command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr)
	case "migrate":
		fs, db := dbFlags("migrate", stderr)
		if err := parse(fs, rest, stdout); err != nil {
			return err
		}
		d, err := openDB(ctx, *db, dbMayCreate, stderr)
		if err != nil {
			return err
		}
		defer d.Close()
		fmt.Fprintln(stdout, "migrations applied")
		return nil
	case "version":
		fmt.Fprintln(stdout, "switchboard", app.Version)
		return nil
	case "org":
		if len(rest) == 0 || rest[0] != "create" {
			return errors.New(`usage: switchboard org create --name NAME`)
		}
		return orgCreate(ctx, rest[1:], stdout, stderr)
	case "key":
		if len(rest) == 0 {
			return errors.New(`usage: switchboard key create|list|revoke …`)
		}
		switch rest[0] {
		case "create":
			return keyCreate(ctx, rest[1:], stdout, stderr)
		case "list":
			return keyList(ctx, rest[1:], stdout, stderr)
		case "revoke":
			return keyRevoke(ctx, rest[1:], stdout, stderr)
		}
		return fmt.Errorf("unknown key command %q: want create, list or revoke", rest[0])
	case "user":
		if len(rest) == 0 {
			return errors.New(`usage: switchboard user create|list|delete …`)
		}
		switch rest[0] {
		case "create":
			return userCreate(ctx, rest[1:], os.Stdin, stdout, stderr)
		case "list":
			return userList(ctx, rest[1:], stdout, stderr)
		case "delete":
			return userDelete(ctx, rest[1:], stdout, stderr)
		}
		return fmt.Errorf("unknown user command %q: want create, list or delete", rest[0])
	case "webhooks":
		if len(rest) == 0 || rest[0] != "listen" {
			return errors.New(`usage: switchboard webhooks listen [--forward-to URL] [--events a,b] [--url URL]`)
		}
		return webhooksListen(ctx, rest[1:], stdout, stderr)
	case "call":
		if len(rest) == 0 || rest[0] != "web" {
			return errors.New(`usage: switchboard call web ASSISTANT_ID [--url URL]`)
		}
		return callWeb(ctx, rest[1:], os.Stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func dbFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", env("SWITCHBOARD_DB", app.DefaultConfig().DB), "database: sqlite:PATH or postgres://… (env SWITCHBOARD_DB)")
	return fs, db
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := app.DefaultConfig()
	fs, db := dbFlags("serve", stderr)
	addr := fs.String("addr", env("SWITCHBOARD_ADDR", def.Addr), "listen address (env SWITCHBOARD_ADDR)")
	public := fs.String("public-url", env("SWITCHBOARD_PUBLIC_URL", ""), "public base URL, e.g. https://calls.example.com (env SWITCHBOARD_PUBLIC_URL; default http://ADDR)")
	rl, _ := strconv.ParseFloat(env("SWITCHBOARD_RATE_LIMIT", fmt.Sprint(def.RateLimit)), 64)
	rateLimit := fs.Float64("rate-limit", rl, "requests per second per API key, burst twice that; 0 disables (env SWITCHBOARD_RATE_LIMIT)")
	pkRate, err := strconv.ParseFloat(env("SWITCHBOARD_PUBLIC_KEY_RATE_LIMIT", fmt.Sprint(def.PublicKeyRateLimit)), 64)
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_PUBLIC_KEY_RATE_LIMIT: want a number, got %q", os.Getenv("SWITCHBOARD_PUBLIC_KEY_RATE_LIMIT"))
	}
	fs.Float64Var(&pkRate, "public-key-rate-limit", pkRate, "requests a minute per publishable key (pk_…), burst as many; 0 disables (env SWITCHBOARD_PUBLIC_KEY_RATE_LIMIT)")
	pkAddrRate, err := strconv.ParseFloat(env("SWITCHBOARD_PUBLIC_KEY_ADDRESS_RATE_LIMIT", fmt.Sprint(def.PublicKeyAddressRateLimit)), 64)
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_PUBLIC_KEY_ADDRESS_RATE_LIMIT: want a number, got %q", os.Getenv("SWITCHBOARD_PUBLIC_KEY_ADDRESS_RATE_LIMIT"))
	}
	fs.Float64Var(&pkAddrRate, "public-key-address-rate-limit", pkAddrRate, "requests a minute with publishable keys per client address (IPv4 address, IPv6 /64), all keys together, burst as many; 0 disables (env SWITCHBOARD_PUBLIC_KEY_ADDRESS_RATE_LIMIT)")
	refusalLimit, err := strconv.ParseFloat(env("SWITCHBOARD_REFUSAL_LIMIT", fmt.Sprint(def.RefusalLimit)), 64)
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_REFUSAL_LIMIT: want a number, got %q", os.Getenv("SWITCHBOARD_REFUSAL_LIMIT"))
	}
	fs.Float64Var(&refusalLimit, "refusal-limit", refusalLimit, "refusals per second per client address (failed API key checks, refused gateway connections) once the burst is spent; past it the client gets 429 before any lookup; 0 disables (env SWITCHBOARD_REFUSAL_LIMIT)")
	refusalBurst, err := strconv.Atoi(env("SWITCHBOARD_REFUSAL_BURST", fmt.Sprint(def.RefusalBurst)))
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_REFUSAL_BURST: want a number, got %q", os.Getenv("SWITCHBOARD_REFUSAL_BURST"))
	}
	fs.IntVar(&refusalBurst, "refusal-burst", refusalBurst, "refusals in a row a client address may have before --refusal-limit applies (env SWITCHBOARD_REFUSAL_BURST)")
	var caps [2]int
	for i, name := range []string{"SWITCHBOARD_MAX_CALLS_PER_ORG", "SWITCHBOARD_MAX_CALLS_PER_NUMBER"} {
		if caps[i], err = strconv.Atoi(env(name, "0")); err != nil || caps[i] < 0 {
			return fmt.Errorf("%s: want a number of calls, 0 for no cap, got %q", name, os.Getenv(name))
		}
	}
	fs.IntVar(&caps[0], "max-calls-per-org", caps[0], "scheduled calls: the most live phone calls an organization may have before its due attempts wait; an organization's own setting can lower it; 0: no cap (env SWITCHBOARD_MAX_CALLS_PER_ORG)")
	fs.IntVar(&caps[1], "max-calls-per-number", caps[1], "scheduled calls: the most live phone calls on one number before its due attempts wait; an organization's own setting can lower it; 0: no cap (env SWITCHBOARD_MAX_CALLS_PER_NUMBER)")
	trustedProxies := fs.String("trusted-proxies", env("SWITCHBOARD_TRUSTED_PROXIES", ""), "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client; from anyone else the TCP peer is the client (env SWITCHBOARD_TRUSTED_PROXIES)")
	metricsAddr := fs.String("metrics-addr", env("SWITCHBOARD_METRICS_ADDR", ""), "serve GET /metrics on this address of its own, e.g. 127.0.0.1:9464; empty: not served, unless --metrics-token (env SWITCHBOARD_METRICS_ADDR)")
	metricsToken := fs.String("metrics-token", env("SWITCHBOARD_METRICS_TOKEN", ""), "require Authorization: Bearer TOKEN on GET /metrics; without --metrics-addr, serves /metrics on the public port behind it. Prefer the environment variable: flags show in ps (env SWITCHBOARD_METRICS_TOKEN)")
	ring := fs.Duration("sandbox-ring-time", envDuration("SWITCHBOARD_SANDBOX_RING_TIME", time.Second), "sandbox: time a call rings before it is answered (env SWITCHBOARD_SANDBOX_RING_TIME)")
	noAnswer := fs.Duration("sandbox-no-answer-timeout", envDuration("SWITCHBOARD_SANDBOX_NO_ANSWER_TIMEOUT", 30*time.Second), "sandbox: ring time of a no-answer (…0002) number (env SWITCHBOARD_SANDBOX_NO_ANSWER_TIMEOUT)")
	talk := fs.Duration("sandbox-talk-time", envDuration("SWITCHBOARD_SANDBOX_TALK_TIME", 10*time.Minute), "sandbox: the longest an answered call lasts (the callee hangs up) (env SWITCHBOARD_SANDBOX_TALK_TIME)")
	sandboxVoice := fs.Bool("sandbox-voice", env("SWITCHBOARD_SANDBOX_VOICE", "true") != "false", "sandbox: calls carry audio (the persona speaks and listens through the local speech engines at 8 kHz μ-law) when the engines are present; false keeps them text (env SWITCHBOARD_SANDBOX_VOICE)")
	voiceCalls, err := strconv.Atoi(env("SWITCHBOARD_SANDBOX_VOICE_CALLS", "4"))
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_SANDBOX_VOICE_CALLS: want a number, got %q", os.Getenv("SWITCHBOARD_SANDBOX_VOICE_CALLS"))
	}
	sandboxVoiceCalls := fs.Int("sandbox-voice-calls", voiceCalls, "sandbox: the most calls spoken at once (each runs two local recognizers); more run as text (env SWITCHBOARD_SANDBOX_VOICE_CALLS)")
	numbers := fs.String("sandbox-numbers", env("SWITCHBOARD_SANDBOX_NUMBERS", ""), "sandbox: comma-separated E.164 numbers to offer instead of the default 555-01xx ones (env SWITCHBOARD_SANDBOX_NUMBERS)")
	allowPrivate := fs.Bool("webhook-allow-private", env("SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE", "") == "true", "allow webhook URLs that resolve to loopback or private addresses (env SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE=true)")
	openaiURL := fs.String("openai-base-url", env("SWITCHBOARD_OPENAI_BASE_URL", app.DefaultOpenAIBaseURL), "OpenAI-compatible chat completions base URL: OpenAI, Ollama (http://127.0.0.1:11434/v1), vLLM, llama.cpp (env SWITCHBOARD_OPENAI_BASE_URL)")
	openaiKey := fs.String("openai-api-key", env("SWITCHBOARD_OPENAI_API_KEY", ""), "API key of the OpenAI-compatible server (env SWITCHBOARD_OPENAI_API_KEY); provider \"openai\" is enabled by a key or a non-default base URL")
	anthropicURL := fs.String("anthropic-base-url", env("SWITCHBOARD_ANTHROPIC_BASE_URL", app.DefaultAnthropicBaseURL), "Anthropic Messages API base URL (env SWITCHBOARD_ANTHROPIC_BASE_URL)")
	anthropicKey := fs.String("anthropic-api-key", env("SWITCHBOARD_ANTHROPIC_API_KEY", ""), "Anthropic API key (env SWITCHBOARD_ANTHROPIC_API_KEY); enables provider \"anthropic\"")
	analysisModel := fs.String("analysis-model", env("SWITCHBOARD_ANALYSIS_MODEL", ""), "provider:model that analyses the calls of assistants without a model of their own, e.g. openai:gpt-4o-mini (env SWITCHBOARD_ANALYSIS_MODEL); a model assistant's calls are analysed by its own model")
	var sp app.SpeechConfig
	fs.StringVar(&sp.DeepgramBaseURL, "deepgram-base-url", env("SWITCHBOARD_DEEPGRAM_BASE_URL", deepgram.DefaultBaseURL), "Deepgram API base URL, for live transcription and Aura voices (env SWITCHBOARD_DEEPGRAM_BASE_URL); another one (self-hosted) enables provider \"deepgram\"")
	fs.StringVar(&sp.DeepgramKey, "deepgram-api-key", env("SWITCHBOARD_DEEPGRAM_API_KEY", ""), "Deepgram API key (env SWITCHBOARD_DEEPGRAM_API_KEY); enables transcriber and voice \"deepgram\"")
	fs.StringVar(&sp.OpenAISTTBaseURL, "speech-openai-stt-base-url", env("SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL", ""), "OpenAI-compatible transcription server, e.g. whisper.cpp at http://127.0.0.1:8081/v1 (env SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL); enables transcriber \"openai\"")
	fs.StringVar(&sp.OpenAITTSBaseURL, "speech-openai-tts-base-url", env("SWITCHBOARD_SPEECH_OPENAI_TTS_BASE_URL", ""), "OpenAI-compatible speech server (env SWITCHBOARD_SPEECH_OPENAI_TTS_BASE_URL); enables voice \"openai\"")
	fs.StringVar(&sp.OpenAIKey, "speech-openai-api-key", env("SWITCHBOARD_SPEECH_OPENAI_API_KEY", ""), "key of the OpenAI-compatible speech servers (env SWITCHBOARD_SPEECH_OPENAI_API_KEY); with no speech URL set, enables transcriber and voice \"openai\" at OpenAI. Default: --openai-api-key when the model server is OpenAI")
	fs.StringVar(&sp.ElevenLabsBaseURL, "elevenlabs-base-url", env("SWITCHBOARD_ELEVENLABS_BASE_URL", elevenlabs.DefaultBaseURL), "ElevenLabs API base URL (env SWITCHBOARD_ELEVENLABS_BASE_URL)")
	fs.StringVar(&sp.ElevenLabsKey, "elevenlabs-api-key", env("SWITCHBOARD_ELEVENLABS_API_KEY", ""), "ElevenLabs API key (env SWITCHBOARD_ELEVENLABS_API_KEY); enables voice \"elevenlabs\"")
	decoders, err := strconv.Atoi(env("SWITCHBOARD_LOCAL_STT_DECODERS", "0"))
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_LOCAL_STT_DECODERS: want a number, got %q", os.Getenv("SWITCHBOARD_LOCAL_STT_DECODERS"))
	}
	fs.IntVar(&sp.LocalSTTDecoders, "local-stt-decoders", decoders, "local transcriber: utterances decoded at once, ~100 MB each; 0 means 2×GOMAXPROCS, at least 4 (env SWITCHBOARD_LOCAL_STT_DECODERS)")
	fs.StringVar(&sp.LocalSTTModelDir, "local-stt-model-dir", env("SWITCHBOARD_LOCAL_STT_MODEL_DIR", ""), "local transcriber: pocketsphinx en-us model directory (env SWITCHBOARD_LOCAL_STT_MODEL_DIR; default the pocketsphinx-en-us package's)")
	fs.StringVar(&sp.EspeakProgram, "espeak-program", env("SWITCHBOARD_ESPEAK_PROGRAM", ""), "local voice: run this espeak-ng program instead of the linked library (env SWITCHBOARD_ESPEAK_PROGRAM; default the library, else espeak-ng on PATH)")
	secretKeyFile := fs.String("secret-key-file", env("SWITCHBOARD_SECRET_KEY_FILE", ""), "`FILE` holding the secret key that seals phone connection passwords (base64 of 32 random bytes, e.g. from openssl rand -base64 32); default with SQLite: switchboard.key next to the database, created when missing; PostgreSQL needs this or SWITCHBOARD_SECRET_KEY, the same on every node (env SWITCHBOARD_SECRET_KEY_FILE)")
	dataDir := fs.String("data-dir", env("SWITCHBOARD_DATA_DIR", ""), "directory for the server's files: call recordings under recordings/<org>/<call>.wav; default: the SQLite database's directory, or ./data with PostgreSQL (env SWITCHBOARD_DATA_DIR)")
	sipAddr := fs.String("sip-addr", env("SWITCHBOARD_SIP_ADDR", ""), "SIP listen `address`, UDP and TCP, for the SIP connections' calls; off disables SIP. Default: port 5060 on --addr's host, so 127.0.0.1:5060 with the default --addr (this machine only, like HTTP); a real trunk needs a reachable one, e.g. 0.0.0.0:5060. A second node on the same host needs a port of its own or off (env SWITCHBOARD_SIP_ADDR)")
	sipPublicIP := fs.String("sip-public-ip", env("SWITCHBOARD_SIP_PUBLIC_IP", ""), "the address put in SIP Contact headers and SDP, for a server behind NAT; default the listen address if specific, else this host's first non-loopback IPv4 (env SWITCHBOARD_SIP_PUBLIC_IP)")
	rtpPorts := fs.String("rtp-ports", env("SWITCHBOARD_RTP_PORTS", fmt.Sprintf("%d-%d", sip.DefaultRTPPorts.Min, sip.DefaultRTPPorts.Max)), "UDP port range for the RTP audio of SIP calls (env SWITCHBOARD_RTP_PORTS)")
	twilioAPI := fs.String("twilio-api-base-url", env("SWITCHBOARD_TWILIO_API_BASE_URL", twilio.DefaultAPIBaseURL), "Twilio's REST API, for organizations' Twilio connections (env SWITCHBOARD_TWILIO_API_BASE_URL); Twilio calls this server back at --public-url, which must then be reachable from the internet (see docs/telephony.md)")
	drainTimeout := fs.Duration("drain-timeout", envDuration("SWITCHBOARD_DRAIN_TIMEOUT", 30*time.Second), "on SIGTERM (or SIGINT) the node drains: /readyz fails, new calls are refused, live calls go on for up to this long, then end system-shutdown; a second signal cuts the drain short (env SWITCHBOARD_DRAIN_TIMEOUT)")
	nodeLease := fs.Duration("node-lease", envDuration("SWITCHBOARD_NODE_LEASE", cluster.DefaultLease), "how long after its last heartbeat a node counts as dead: its live calls then end node-lost; the same on every node (env SWITCHBOARD_NODE_LEASE)")
	nodeHeartbeat := fs.Duration("node-heartbeat", envDuration("SWITCHBOARD_NODE_HEARTBEAT", cluster.DefaultRenew), "how often the node renews its lease (and the leader its leader lease); well under --node-lease (env SWITCHBOARD_NODE_HEARTBEAT)")
	dialLease := fs.Duration("dial-lease", envDuration("SWITCHBOARD_DIAL_LEASE", campaign.DefaultDialLease), "how long a scheduled attempt handed out by the promoter stays handed out before it is handed out again; a node's dialer holds an attempt it claimed for a third of this, so the attempts of a dialer that dies are dialed by the others within it (env SWITCHBOARD_DIAL_LEASE)")
	logLevel := fs.String("log-level", env("SWITCHBOARD_LOG_LEVEL", "info"), "debug, info, warn or error (env SWITCHBOARD_LOG_LEVEL)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *nodeLease < 2**nodeHeartbeat || *nodeHeartbeat <= 0 {
		return fmt.Errorf("--node-lease %v must be at least twice --node-heartbeat %v (and both positive)", *nodeLease, *nodeHeartbeat)
	}
	if *dialLease < time.Second {
		return fmt.Errorf("--dial-lease: want at least 1s, got %v", *dialLease)
	}
	if *drainTimeout < 0 {
		return fmt.Errorf("--drain-timeout: want a duration of 0 or more, got %v", *drainTimeout)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	cfg := def
	cfg.Addr, cfg.DB, cfg.PublicURL, cfg.RateLimit = *addr, *db, *public, *rateLimit
	cfg.PublicKeyRateLimit, cfg.PublicKeyAddressRateLimit = pkRate, pkAddrRate
	cfg.RefusalLimit, cfg.RefusalBurst = refusalLimit, refusalBurst
	if caps[0] < 0 || caps[1] < 0 {
		return fmt.Errorf("--max-calls-per-org and --max-calls-per-number: want 0 (no cap) or more")
	}
	cfg.Campaigns.Caps = schedule.Caps{PerOrg: caps[0], PerNumber: caps[1]}
	if cfg.TrustedProxies, err = throttle.ParseProxies(*trustedProxies); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	cfg.MetricsAddr, cfg.MetricsToken = *metricsAddr, *metricsToken
	cfg.WebhookAllowPrivate = *allowPrivate
	cfg.OpenAIBaseURL, cfg.OpenAIKey, cfg.AnthropicBaseURL, cfg.AnthropicKey = *openaiURL, *openaiKey, *anthropicURL, *anthropicKey
	if *analysisModel != "" {
		p, m, ok := strings.Cut(*analysisModel, ":")
		if !ok || p == "" || m == "" {
			return fmt.Errorf("--analysis-model: %q is not provider:model (openai:gpt-4o-mini)", *analysisModel)
		}
		cfg.AnalysisModel = analysis.ModelChoice{Provider: p, Model: m}
	}
	cfg.Speech = sp
	cfg.SecretKeyFile = *secretKeyFile
	cfg.DataDir = *dataDir
	cfg.NodeLease, cfg.NodeHeartbeat = *nodeLease, *nodeHeartbeat
	cfg.Campaigns.DialLease = *dialLease
	if v := os.Getenv("SWITCHBOARD_SECRET_KEY"); v != "" {
		// The key itself only from the environment: flags show in ps.
		if *secretKeyFile != "" {
			return errors.New("give the secret key once: SWITCHBOARD_SECRET_KEY or --secret-key-file (SWITCHBOARD_SECRET_KEY_FILE), not both")
		}
		if cfg.SecretKey, err = secret.ParseKey(v); err != nil {
			return fmt.Errorf("SWITCHBOARD_SECRET_KEY: %w", err)
		}
	}
	if *sipAddr == "" {
		*sipAddr = defaultSIPAddr(*addr)
	}
	if *sipAddr != "off" {
		ports, err := sip.ParsePortRange(*rtpPorts)
		if err != nil {
			return fmt.Errorf("--rtp-ports: %w", err)
		}
		if _, _, err := net.SplitHostPort(*sipAddr); err != nil {
			return fmt.Errorf("--sip-addr: want host:port or off, got %q", *sipAddr)
		}
		if *sipPublicIP != "" {
			if _, err := netip.ParseAddr(*sipPublicIP); err != nil {
				return fmt.Errorf("--sip-public-ip: want an IP address, got %q", *sipPublicIP)
			}
		}
		cfg.SIP = &sip.Config{ListenAddr: *sipAddr, PublicIP: *sipPublicIP, RTPPorts: ports}
	}
	if u, err := url.Parse(*twilioAPI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("--twilio-api-base-url: want an http(s) URL, got %q", *twilioAPI)
	}
	cfg.Twilio.APIBaseURL = *twilioAPI
	cfg.Sandbox.RingTime, cfg.Sandbox.NoAnswerTimeout, cfg.Sandbox.TalkTime = *ring, *noAnswer, *talk
	cfg.SandboxVoice = *sandboxVoice
	cfg.SandboxVoiceCalls = *sandboxVoiceCalls
	if *numbers != "" {
		inv, err := sandbox.ParseNumbers(*numbers)
		if err != nil {
			return fmt.Errorf("--sandbox-numbers: %w", err)
		}
		cfg.Sandbox.Numbers = inv
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	signaled := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(signaled)
			cancelStart() // a signal while starting stops the start
		case <-startCtx.Done():
		}
	}()
	if name, missing, err := describeDB(cfg.DB); err == nil {
		log.Info("database", "db", name, "new", missing)
	}
	if cfg.SIP != nil && isLoopback(cfg.SIP.ListenAddr) {
		log.Info("SIP listens on loopback: calls from this machine only; set --sip-addr 0.0.0.0:5060 (and --sip-public-ip behind NAT) for a real trunk", "sip_addr", cfg.SIP.ListenAddr)
	}
	m, err := app.Start(startCtx, cfg, log, stdout)
	if err != nil {
		return err
	}
	cancelStart()
	select {
	case <-sigs:
	case <-signaled:
	case <-ctx.Done():
	}
	// Drain first (live calls go on, new ones go to other nodes), then
	// shut down; a second signal cuts the drain short.
	drainCtx, cutDrain := context.WithCancel(ctx)
	go func() {
		select {
		case <-sigs:
			cutDrain()
		case <-drainCtx.Done():
		}
	}()
	log.Info("draining", "timeout", drainTimeout.String())
	_ = m.Drain(drainCtx, *drainTimeout)
	cutDrain()
	log.Info("shutting down")
	return m.Close(context.Background())
}

// defaultSIPAddr is SIP's listen address when --sip-addr is not given:
// port 5060 on --addr's host. A server local by default (--addr
// 127.0.0.1:8080) so takes SIP from this machine only, like its HTTP, and
// one serving every interface (--addr 0.0.0.0:8080 or :8080) serves SIP
// on them too.
func defaultSIPAddr(httpAddr string) string {
	host, _, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return sip.DefaultListenAddr
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return sip.DefaultListenAddr // every interface, or a name SIP cannot bind
	}
	return net.JoinHostPort(host, "5060")
}

// isLoopback reports whether a host:port listens on loopback only.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func orgCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("org create", stderr)
	name := fs.String("name", "", "organization name (required)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" {
		return errors.New("org create: --name is required")
	}
	d, err := openDB(ctx, *db, dbMayCreate, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	org := auth.Org{ID: id.New(id.Org), Name: *name, CreatedAt: time.Now().UTC()}
	if err := d.CreateOrg(ctx, org); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created organization %q\n%s\n", org.Name, org.ID)
	return nil
}

func keyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("key create", stderr)
	org := fs.String("org", "", "organization id (required)")
	scopes := fs.String("scopes", "", "comma-separated scopes (required for a secret key): "+strings.Join(auth.AllScopes, ","))
	name := fs.String("name", "", "a label for the key")
	public := fs.Bool("public", false, "create a publishable key (pk_…) for web pages instead of a secret key: it only starts web calls, for --assistants, from --origins")
	assistants := fs.String("assistants", "", "with --public: comma-separated assistant ids (asst_…) it may start calls for")
	origins := fs.String("origins", "", "with --public: comma-separated web origins it is accepted from, e.g. https://shop.example.com,http://localhost:3000")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *org == "" {
		return errors.New("key create: --org is required")
	}
	if *public {
		if *scopes != "" {
			return errors.New("key create --public: a publishable key has no scopes (drop --scopes)")
		}
		return publicKeyCreate(ctx, *db, *org, *name, *assistants, *origins, stdout, stderr)
	}
	if *assistants != "" || *origins != "" {
		return errors.New("key create: --assistants and --origins are for a publishable key: add --public")
	}
	sc, err := auth.ParseScopes(*scopes)
	if err != nil {
		return fmt.Errorf("key create: --scopes: %w", err)
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	k, secret := auth.NewKey(*org, *name, sc, time.Now())
	if err := d.CreateKey(ctx, k); err != nil {
		return fmt.Errorf("key create: %w", err)
	}
	fmt.Fprintf(stdout, "created key %s with scopes %s; the key is shown once:\n%s\n", k.ID, strings.Join(sc, ","), secret)
	return nil
}

func keyList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("key list", stderr)
	org := fs.String("org", "", "organization id (required)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *org == "" {
		return errors.New("key list: --org is required")
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	keys, err := d.ListKeys(ctx, *org)
	if err != nil {
		return err
	}
	pks, err := allPublicKeys(ctx, d, *org)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tKEY\tCREATED\tLAST USED\tREVOKED")
	t := func(v time.Time) string {
		if v.IsZero() {
			return "-"
		}
		return v.Format(time.RFC3339)
	}
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t…%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), k.Last4, t(k.CreatedAt), t(k.LastUsedAt), t(k.RevokedAt))
	}
	for _, k := range pks {
		// A publishable key has no scopes: what it allows is in its place.
		allows := "publishable: web calls for " + strings.Join(k.AssistantIDs, ",") + " from " + strings.Join(k.Origins, ",")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, allows, k.KeyPrefix, t(k.CreatedAt), "-", t(k.RevokedAt))
	}
	return tw.Flush()
}

func keyRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("key revoke", stderr)
	var keyID string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		keyID, args = args[0], args[1:] // KEY_ID may come before the flags
	}
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if keyID == "" && fs.NArg() == 1 {
		keyID = fs.Arg(0)
	} else if fs.NArg() != 0 || keyID == "" {
		return errors.New("usage: switchboard key revoke KEY_ID [--db URL]")
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	if strings.HasPrefix(keyID, id.PublicKey+"_") {
		k, err := d.GetPublicKey(ctx, keyID)
		if err == nil {
			_, err = d.RevokePublicKey(ctx, k.OrgID, keyID, time.Now())
		}
		if err != nil {
			return fmt.Errorf("key revoke: %w", err)
		}
		fmt.Fprintf(stdout, "revoked %s\n", keyID)
		return nil
	}
	if err := d.RevokeKey(ctx, keyID, time.Now()); err != nil {
		return fmt.Errorf("key revoke: %w", err)
	}
	fmt.Fprintf(stdout, "revoked %s\n", keyID)
	return nil
}

// publicKeyCreate makes a publishable key with the rules of
// POST /v1/public-keys: 1 to 50 assistants of the organization, 1 to 50
// http(s) origins, normalized.
func publicKeyCreate(ctx context.Context, db, org, name, assistantList, originList string, stdout, stderr io.Writer) error {
	assistants, origins := splitList(assistantList), splitList(originList)
	if n := len(assistants); n == 0 || n > auth.MaxPublicKeyAssistants {
		return fmt.Errorf("key create --public: --assistants: want 1 to %d assistant ids, got %d", auth.MaxPublicKeyAssistants, n)
	}
	if n := len(origins); n == 0 || n > auth.MaxPublicKeyOrigins {
		return fmt.Errorf("key create --public: --origins: want 1 to %d origins, got %d", auth.MaxPublicKeyOrigins, n)
	}
	for i, a := range assistants {
		if !id.Valid(id.Assistant, a) {
			return fmt.Errorf("key create --public: --assistants: %q is not an assistant id (asst_…)", a)
		}
		if slices.Index(assistants, a) < i {
			return fmt.Errorf("key create --public: --assistants: %s is given twice", a)
		}
	}
	for i, o := range origins {
		norm, err := auth.NormalizeOrigin(o)
		if err != nil {
			return fmt.Errorf("key create --public: --origins: %q %w", o, err)
		}
		if slices.Contains(origins[:i], norm) {
			return fmt.Errorf("key create --public: --origins: %s is given twice", norm)
		}
		origins[i] = norm
	}
	d, err := openDB(ctx, db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	k, key := auth.NewPublicKey(org, name, assistants, origins, time.Now())
	if err := d.CreatePublicKey(ctx, k); err != nil {
		return fmt.Errorf("key create --public: %w", err)
	}
	fmt.Fprintf(stdout, "created publishable key %s: web calls for %s from %s; the key is shown once:\n%s\n",
		k.ID, strings.Join(assistants, ","), strings.Join(origins, ","), key)
	return nil
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// allPublicKeys reads every publishable key of an organization, newest first.
func allPublicKeys(ctx context.Context, d *app.Database, org string) ([]auth.PublicKey, error) {
	var out []auth.PublicKey
	for page := 1; ; page++ {
		ks, total, err := d.ListPublicKeys(ctx, org, store.Page{Page: page, PageSize: 100})
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
		if len(ks) == 0 || len(out) >= total {
			return out, nil
		}
	}
}
