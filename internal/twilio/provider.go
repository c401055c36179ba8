// Package twilio is the telephony.Network for Twilio Programmable Voice:
// calls are placed and controlled with Twilio's REST API (client.go, one
// account per phone connection), Twilio reports their progress to our
// webhooks (status callbacks, TwiML fetches: handler.go, each request's
// X-Twilio-Signature checked, signature.go), and an answered call's audio
// runs over a bidirectional Media Stream, a websocket Twilio opens to us
// (line.go). See docs/ARCHITECTURE.md, "Lines and the call runtime", and
// docs/telephony.md.
//
// Like the SIP provider it keeps no per-organization state: the account of
// a call comes from Config.Accounts by the connection id (of the
// PlaceRequest's Trunk, or in the path of every webhook URL, because the
// auth token must be known before a signature can be checked), inbound
// calls are decided by the Admitter, and the provider holds only the live
// calls of this node.
//
// Every goroutine the package starts belongs to the Provider: the webhook
// and stream handlers (each counted while it runs), one reader per
// answered Line until it ends, and the per-call watchdog timers. Close
// ends every call and waits for all of them.
package twilio

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/call"
	"switchboard/internal/lifecycle"
	"switchboard/internal/telephony"
	"switchboard/internal/throttle"
)

// Name is the provider's name in the API ("provider": "twilio").
const Name = "twilio"

// Defaults of Config.
const (
	// DefaultRingTimeout is how long an outbound call may ring (Twilio's
	// own default, the Timeout parameter of a call).
	DefaultRingTimeout = 60 * time.Second
	// DefaultMediaTimeout ends a line after this long without media from
	// Twilio (which sends 50 messages a second, silence included).
	DefaultMediaTimeout = 30 * time.Second
	// DefaultStreamTimeout is how long a call may take, after we served
	// its <Connect><Stream>, to open the stream.
	DefaultStreamTimeout = 15 * time.Second
	// DefaultTransferTimeout bounds the wait for the stream to stop after
	// a transfer's TwiML was accepted.
	DefaultTransferTimeout = 10 * time.Second
	// DefaultAdmitTimeout bounds the Admitter's decision on a call.
	DefaultAdmitTimeout = 8 * time.Second // above routing.MaxTimeout: the routing endpoint has its whole deadline
	// callbackGrace is how long past the ring timeout a placed call may
	// stay without news from Twilio before it is ended as lost.
	callbackGrace = 30 * time.Second
	// maxWebhookBody bounds a webhook's form.
	maxWebhookBody = 64 << 10
)

// Config configures a Provider. Zero durations take the defaults above.
type Config struct {
	// PublicURL is where Twilio reaches this server, http(s)://host[:port]
	// (plus any path prefix a proxy strips): webhook URLs are PublicURL +
	// "/twilio/…", and the Media Stream URL the same with https → wss
	// (http → ws, for tests). Required. Signatures are checked against
	// it, not against the request's own Host.
	PublicURL string
	// APIBaseURL is Twilio's REST API (DefaultAPIBaseURL when empty).
	APIBaseURL string
	// Accounts returns the Twilio account of a phone connection. Required.
	Accounts func(ctx context.Context, connectionID string) (Account, error)
	// TokenKey signs each call's stream token (HMAC-SHA256), which the
	// stream's start message must carry back. Empty: a random key, good
	// for this process's calls.
	TokenKey []byte
	Log      *slog.Logger
	// HTTPClient sends REST requests (nil: one with DefaultRequestTimeout).
	HTTPClient *http.Client

	RingTimeout     time.Duration
	MediaTimeout    time.Duration
	StreamTimeout   time.Duration
	TransferTimeout time.Duration
	AdmitTimeout    time.Duration
}

func (c *Config) setDefaults() error {
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return fmt.Errorf("twilio: the public URL must be an http(s) URL without a query, got %q", c.PublicURL)
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.Accounts == nil {
		return errors.New("twilio: Config.Accounts is required")
	}
	if len(c.TokenKey) == 0 {
		c.TokenKey = make([]byte, 32)
		_, _ = rand.Read(c.TokenKey)
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.RingTimeout, DefaultRingTimeout}, {&c.MediaTimeout, DefaultMediaTimeout},
		{&c.StreamTimeout, DefaultStreamTimeout}, {&c.TransferTimeout, DefaultTransferTimeout},
		{&c.AdmitTimeout, DefaultAdmitTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return nil
}

// ErrClosed is returned by Place after Close.
var ErrClosed = errors.New("twilio: provider closed")

// ErrNoInventory is returned by Inventory, Purchase and Release: Twilio
// numbers belong to an account, so they are searched, bought and released
// with that account's Client (SearchNumbers, BuyNumber, ReleaseNumber).
var ErrNoInventory = errors.New("twilio: numbers are per Twilio account: use the account's Client (SearchNumbers, BuyNumber, ReleaseNumber)")

// Provider is the Twilio telephony.Network of this node. Create it with
// New, start it with the call control it reports to (Start), mount
// Handler under /twilio/, stop it with Stop or Close.
type Provider struct {
	cfg    Config
	wsBase string // PublicURL with ws(s)
	log    *slog.Logger
	// sink and admit are the call control's (Start): the progress of
	// calls, and the decision on inbound ones (refused until Start).
	sink     telephony.EventSink
	admit    telephony.Admitter
	stopping lifecycle.Blocking

	mu     sync.Mutex
	closed bool
	calls  map[string]*pcall // by Switchboard call id
	bySID  map[string]*pcall // by CallSid
	wg     sync.WaitGroup    // handlers and fired watchdogs

	stats    stats
	refusals *throttle.Sampler
}

// pcall is one call's Twilio side while it is live. Fields are guarded by
// Provider.mu.
type pcall struct {
	id      string
	connID  string
	acct    Account
	sid     string
	inbound bool
	detect  string // PlaceRequest.DetectMachine
	machine bool   // AMD found a machine (or a fax) and the call goes on (leaveMessage)
	rank    int    // highest status rank seen (ClassifyStatus)
	seq     int    // highest SequenceNumber seen, -1 none
	rang    bool   // Ringing sent
	// stream: we served <Connect><Stream> and the stream has not come.
	stream   bool
	line     *Line
	ended    bool // Ended sent or the line handed over: no more events
	watchdog *time.Timer
}

// New checks cfg and builds the provider.
func New(cfg Config) (*Provider, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ws := "wss" + strings.TrimPrefix(cfg.PublicURL, "https")
	if strings.HasPrefix(cfg.PublicURL, "http:") {
		ws = "ws" + strings.TrimPrefix(cfg.PublicURL, "http")
	}
	p := &Provider{
		cfg: cfg, wsBase: ws, log: cfg.Log.With("provider", Name),
		sink: func(telephony.Event) {}, admit: telephony.CallControlFuncs{}.Admit,
		calls: map[string]*pcall{}, bySID: map[string]*pcall{},
	}
	p.stats.refused = map[string]*atomic.Uint64{}
	for _, r := range refusalReasons {
		p.stats.refused[r] = new(atomic.Uint64)
	}
	p.refusals = throttle.NewSampler(p.log, "twilio requests refused", 0)
	return p, nil
}

// Name is "twilio".
func (p *Provider) Name() string { return Name }

// Inventory returns ErrNoInventory (numbers are per account).
func (p *Provider) Inventory(context.Context) ([]telephony.Number, error) { return nil, ErrNoInventory }

// Purchase returns ErrNoInventory (numbers are per account).
func (p *Provider) Purchase(context.Context, string) error { return ErrNoInventory }

// Release returns ErrNoInventory (numbers are per account).
func (p *Provider) Release(context.Context, string) error { return ErrNoInventory }

// Client returns the REST client of account acct, with the provider's API
// base URL and HTTP client: the REST layer searches, buys, imports and
// releases numbers with it.
func (p *Provider) Client(acct Account) (*Client, error) {
	return NewClient(acct, p.cfg.APIBaseURL, p.cfg.HTTPClient)
}

// VoiceURL is the webhook a number of connection connID must call for
// inbound calls (its VoiceUrl, POST).
func (p *Provider) VoiceURL(connID string) string {
	return p.cfg.PublicURL + "/twilio/" + url.PathEscape(connID) + "/voice"
}

// StatusURL is the status callback of connection connID's numbers (their
// StatusCallback, POST), which ends inbound calls whose stream never came.
func (p *Provider) StatusURL(connID string) string {
	return p.cfg.PublicURL + "/twilio/" + url.PathEscape(connID) + "/status"
}

func (p *Provider) callURL(connID, callID, what string) string {
	return p.cfg.PublicURL + "/twilio/" + url.PathEscape(connID) + "/calls/" + url.PathEscape(callID) + "/" + what
}

func (p *Provider) streamURL(connID string) string {
	return p.wsBase + "/twilio/" + url.PathEscape(connID) + "/stream"
}

// streamToken is the token a call's stream must carry back in its
// customParameters: HMAC-SHA256 of the connection and call ids.
func (p *Provider) streamToken(connID, callID string) string {
	m := hmac.New(sha256.New, p.cfg.TokenKey)
	m.Write([]byte("twilio-stream\x00" + connID + "\x00" + callID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (p *Provider) validToken(connID, callID, token string) bool {
	return hmac.Equal([]byte(token), []byte(p.streamToken(connID, callID)))
}

// Machine detection choices of PlaceRequest.DetectMachine.
const (
	DetectHangup       = "hangup"
	DetectLeaveMessage = "leaveMessage"
)

// Place dials req.To from req.From with the account of connection
// req.Trunk.ConnectionID: a call create request with Url (our TwiML URL
// for the call, fetched once it is answered), StatusCallback (our status
// URL for the call, events initiated, ringing, answered and completed),
// Timeout (Config.RingTimeout) and, when req.DetectMachine asks for it,
// MachineDetection (hangup: Enable; leaveMessage: DetectMessageEnd, so the
// assistant starts after the greeting's beep).
//
// Url rather than Twiml: the TwiML fetch comes after answering machine
// detection, with AnsweredBy, so a machine can be hung up on without
// opening a stream, and the stream token is minted only for a call that
// is answered. It returns once Twilio has accepted the call; progress
// arrives as Events (Ringing, then Answered with the Line once the stream
// starts, or Ended). A refusal by Twilio is a *telephony.Error (placeError)
// and no event follows.
func (p *Provider) Place(ctx context.Context, req telephony.PlaceRequest) error {
	if req.CallID == "" {
		return errors.New("twilio: place: a call id is required")
	}
	if !isE164(req.To) {
		return fmt.Errorf("twilio: place: destination %q is not an E.164 number", req.To)
	}
	if !isE164(req.From) {
		return fmt.Errorf("twilio: place: caller id %q is not an E.164 number", req.From)
	}
	amd := ""
	switch req.DetectMachine {
	case "":
	case DetectHangup:
		amd = "Enable"
	case DetectLeaveMessage:
		amd = "DetectMessageEnd"
	default:
		return fmt.Errorf("twilio: place: machine detection must be %q, %q or empty, got %q", DetectHangup, DetectLeaveMessage, req.DetectMachine)
	}
	connID := req.Trunk.ConnectionID
	acct, err := p.cfg.Accounts(ctx, connID)
	if err != nil {
		return fmt.Errorf("twilio: place: the account of connection %s: %w", connID, err)
	}
	cl, err := p.Client(acct)
	if err != nil {
		return err
	}
	pc := &pcall{id: req.CallID, connID: connID, acct: acct, detect: req.DetectMachine, seq: -1}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	if p.calls[pc.id] != nil {
		p.mu.Unlock()
		return fmt.Errorf("twilio: place: call %s is already live", pc.id)
	}
	p.calls[pc.id] = pc
	p.mu.Unlock()

	info, err := cl.CreateCall(ctx, CallParams{
		To: req.To, From: req.From,
		URL:              p.callURL(connID, pc.id, "twiml"),
		StatusCallback:   p.callURL(connID, pc.id, "status"),
		MachineDetection: amd,
		Timeout:          p.cfg.RingTimeout,
	})
	if err != nil {
		p.mu.Lock()
		p.forgetLocked(pc)
		p.mu.Unlock()
		te := placeError(err)
		p.log.Info("twilio call refused", "call_id", pc.id, "connection_id", connID, "reason", te.Reason, "err", err)
		return te
	}
	p.stats.placed.Add(1)
	p.mu.Lock()
	if pc.sid == "" {
		pc.sid = info.SID
	}
	hungUp, sid := pc.ended, pc.sid // Hangup or Close came while the request was out
	if !hungUp {
		p.bySID[pc.sid] = pc
		p.armLocked(pc, p.cfg.RingTimeout+p.cfg.StreamTimeout+callbackGrace)
	}
	p.mu.Unlock()
	if hungUp {
		_ = p.endAtTwilio(cl, sid, false)
	}
	p.log.Info("twilio call placed", "call_id", pc.id, "call_sid", info.SID, "connection_id", connID, "to", req.To, "amd", amd)
	return nil
}

// armLocked (re)starts pc's watchdog: if nothing moves the call on within
// d (the stream's start or the call's end), it is ended as lost.
func (p *Provider) armLocked(pc *pcall, d time.Duration) {
	if pc.watchdog != nil {
		pc.watchdog.Stop()
	}
	pc.watchdog = time.AfterFunc(d, func() { p.watchdogFired(pc) })
}

func (p *Provider) watchdogFired(pc *pcall) {
	if !p.enter() {
		return
	}
	defer p.wg.Done()
	p.mu.Lock()
	if pc.ended || pc.line != nil || p.calls[pc.id] != pc {
		p.mu.Unlock()
		return
	}
	reason := ReasonCallLost
	if pc.stream {
		reason = ReasonStreamFailed
	}
	p.forgetLocked(pc)
	acct, sid, answered := pc.acct, pc.sid, pc.rank >= rankInProgress || pc.stream
	p.mu.Unlock()
	p.log.Warn("twilio call ended: no word from Twilio", "call_id", pc.id, "call_sid", sid, "reason", reason)
	p.ended(pc, call.Failed, reason)
	if cl, err := p.Client(acct); err == nil && sid != "" {
		_ = p.endAtTwilio(cl, sid, answered) // logged there
	}
}

// forgetLocked marks pc ended and drops it from the maps.
func (p *Provider) forgetLocked(pc *pcall) {
	pc.ended = true
	if pc.watchdog != nil {
		pc.watchdog.Stop()
	}
	if p.calls[pc.id] == pc {
		delete(p.calls, pc.id)
	}
	if pc.sid != "" && p.bySID[pc.sid] == pc {
		delete(p.bySID, pc.sid)
	}
}

// endAtTwilio ends a call that has no line: canceled when it was not
// answered yet (a queued or ringing call), else completed; a cancel that
// finds the call answered meanwhile is retried as completed.
func (p *Provider) endAtTwilio(cl *Client, sid string, answered bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	status := StatusCanceled
	if answered {
		status = StatusCompleted
	}
	_, err := cl.UpdateCall(ctx, sid, CallUpdate{Status: status})
	if err != nil && status == StatusCanceled && !errors.As(err, new(*TransportError)) {
		_, err = cl.UpdateCall(ctx, sid, CallUpdate{Status: StatusCompleted})
	}
	if err != nil && !callEnded(err) {
		p.log.Warn("twilio call not ended at Twilio", "call_sid", sid, "err", err)
		return err
	}
	return nil
}

// Hangup ends live call callID. Before its stream started, the call is
// canceled at Twilio (Status canceled; completed once answered) and an
// Ended event follows with outcome canceled and an empty Reason, so that
// the service records the end it asked for. After, the line belongs to the
// runtime: Hangup hangs it up (Line.Hangup) and sends no event. An unknown
// or ended call is not an error. It does not wait for any event, so the
// sink may call it.
func (p *Provider) Hangup(ctx context.Context, callID string) error {
	p.mu.Lock()
	pc := p.calls[callID]
	if pc == nil || (pc.ended && pc.line == nil) {
		p.mu.Unlock()
		return nil
	}
	if line := pc.line; line != nil {
		p.mu.Unlock()
		return line.Hangup(ctx)
	}
	p.forgetLocked(pc)
	acct, sid, answered := pc.acct, pc.sid, pc.rank >= rankInProgress || pc.stream
	p.mu.Unlock()
	p.ended(pc, call.Canceled, "")
	if sid == "" {
		return nil // Place cancels it when its request returns
	}
	cl, err := p.Client(acct)
	if err != nil {
		return err
	}
	return p.endAtTwilio(cl, sid, answered)
}

// Close ends every live call and waits for every goroutine of the
// provider. Calls not yet answered end at Twilio and with an Ended event
// (canceled, system-shutdown); answered lines are hung up and their
// Receive returns the zero End. Webhooks that come later are refused (503;
// the voice webhook answers <Reject/>). It must not be called from the
// sink.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var lines []*Line
	type pend struct {
		pc       *pcall
		acct     Account
		sid      string
		answered bool
	}
	var pending []pend
	for _, pc := range p.calls {
		if pc.line != nil {
			lines = append(lines, pc.line)
		} else if !pc.ended {
			pending = append(pending, pend{pc, pc.acct, pc.sid, pc.rank >= rankInProgress || pc.stream})
		}
	}
	for _, pd := range pending {
		p.forgetLocked(pd.pc)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pd := range pending {
		p.ended(pd.pc, call.Canceled, call.ReasonSystemShutdown)
		if pd.sid == "" {
			continue
		}
		wg.Go(func() {
			if cl, err := p.Client(pd.acct); err == nil {
				_ = p.endAtTwilio(cl, pd.sid, pd.answered)
			}
		})
	}
	for _, l := range lines {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			_ = l.Hangup(ctx)
		})
	}
	wg.Wait()
	p.wg.Wait()
	p.refusals.Flush()
	return nil
}

// Start makes cc hear the progress of calls and decide the inbound ones
// (Twilio's webhooks reach Handler from now on). Nothing else runs until
// a call is placed or a webhook comes.
func (p *Provider) Start(_ context.Context, cc telephony.CallControl) error {
	if cc == nil {
		return errors.New("twilio: a call control is required")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.sink, p.admit = cc.HandleEvent, cc.Admit
	return nil
}

// Stop is Close within ctx: when ctx ends first, Stop returns and the
// calls go on ending (Stopped says when they have).
func (p *Provider) Stop(ctx context.Context) error { return p.stopping.Stop(ctx, p.Close) }

// Stopped is closed once Stop's Close has returned.
func (p *Provider) Stopped() <-chan struct{} { return p.stopping.Stopped() }

// enter counts a goroutine that works on calls (a handler, a watchdog)
// unless the provider is closing.
func (p *Provider) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// emit hands an event to the sink; it never runs under p.mu.
func (p *Provider) emit(ev telephony.Event) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	p.sink(ev)
}

// ended emits the Ended event of a call that was not handed over; the
// caller has marked it ended (so this happens once).
func (p *Provider) ended(pc *pcall, outcome call.Outcome, reason string) {
	p.emit(telephony.Event{CallID: pc.id, Kind: telephony.Ended, Outcome: string(outcome), Reason: reason, ProviderCallID: pc.sid})
}

// lineEnded forgets the call of a line torn down.
func (p *Provider) lineEnded(l *Line) {
	p.mu.Lock()
	p.forgetLocked(l.pc)
	p.mu.Unlock()
	p.stats.lines.Add(-1)
}

// Live is the number of calls this provider is dialing, answering or
// carrying, for tests and metrics.
func (p *Provider) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// Stats are the provider's counters since New.
type Stats struct {
	// Refused counts refused webhook and stream requests by reason:
	// bad-signature, unknown-connection, bad-request, bad-token,
	// unknown-call, and the Admitter's refusals unknown-number,
	// source-refused, no-inbound-agent, unavailable.
	Refused map[string]uint64
	// InboundAnswered and OutboundAnswered count calls handed to the
	// runtime; OutboundPlaced counts calls Twilio accepted.
	InboundAnswered, OutboundPlaced, OutboundAnswered uint64
	// MediaDropped counts caller audio messages dropped because the
	// runtime did not read a line for a second; DTMFDropped keys.
	MediaDropped, DTMFDropped uint64
	// WritesDropped counts assistant frames dropped while DTMF played.
	WritesDropped uint64
	// BadMessages counts stream messages that did not parse.
	BadMessages uint64
	// Lines is the number of answered lines now live.
	Lines int64
}

var refusalReasons = []string{
	"bad-signature", "unknown-connection", "bad-request", "bad-token", "unknown-call",
	"unknown-number", "source-refused", "no-inbound-agent", "unavailable", "routed-busy", "routed-forward",
}

type stats struct {
	refused                                                    map[string]*atomic.Uint64 // keys fixed in New
	inAnswered, placed, outAnswered, mediaDropped, dtmfDropped atomic.Uint64
	writesDropped, badMessages                                 atomic.Uint64
	lines                                                      atomic.Int64
}

// refuse counts a refusal and logs it by sample.
func (p *Provider) refuse(reason string, attrs ...any) {
	if c := p.stats.refused[reason]; c != nil {
		c.Add(1)
	}
	if p.refusals.Sample(reason) {
		p.log.Warn("twilio request refused", append([]any{"reason", reason}, attrs...)...)
	}
}

// Stats returns a snapshot of the counters.
func (p *Provider) Stats() Stats {
	s := Stats{
		Refused:          map[string]uint64{},
		InboundAnswered:  p.stats.inAnswered.Load(),
		OutboundPlaced:   p.stats.placed.Load(),
		OutboundAnswered: p.stats.outAnswered.Load(),
		MediaDropped:     p.stats.mediaDropped.Load(),
		DTMFDropped:      p.stats.dtmfDropped.Load(),
		WritesDropped:    p.stats.writesDropped.Load(),
		BadMessages:      p.stats.badMessages.Load(),
		Lines:            p.stats.lines.Load(),
	}
	for r, c := range p.stats.refused {
		s.Refused[r] = c.Load()
	}
	return s
}

// Collector exposes Stats to Prometheus (switchboard_twilio_*).
func (p *Provider) Collector() prometheus.Collector { return &collector{p: p} }

type collector struct{ p *Provider }

var (
	descRefused  = prometheus.NewDesc("switchboard_twilio_refused_total", "Twilio webhook and stream requests refused, by reason.", []string{"reason"}, nil)
	descAnswered = prometheus.NewDesc("switchboard_twilio_answered_total", "Twilio calls answered and handed to the call runtime, by direction.", []string{"direction"}, nil)
	descPlaced   = prometheus.NewDesc("switchboard_twilio_outbound_placed_total", "Outbound calls Twilio accepted.", nil, nil)
	descDropped  = prometheus.NewDesc("switchboard_twilio_media_dropped_total", "Caller audio messages dropped because a line was not read.", nil, nil)
	descLines    = prometheus.NewDesc("switchboard_twilio_lines", "Answered Twilio lines now live.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRefused, descAnswered, descPlaced, descDropped, descLines} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	for _, r := range refusalReasons {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(s.Refused[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descAnswered, prometheus.CounterValue, float64(s.InboundAnswered), "inbound")
	ch <- prometheus.MustNewConstMetric(descAnswered, prometheus.CounterValue, float64(s.OutboundAnswered), "outbound")
	ch <- prometheus.MustNewConstMetric(descPlaced, prometheus.CounterValue, float64(s.OutboundPlaced))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(s.MediaDropped))
	ch <- prometheus.MustNewConstMetric(descLines, prometheus.GaugeValue, float64(s.Lines))
}

var (
	_ telephony.Network                         = (*Provider)(nil)
	_ lifecycle.Reporter[telephony.CallControl] = (*Provider)(nil)
)
