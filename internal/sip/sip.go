// Package sip is the telephony.Network for SIP trunks: real phone calls to
// and from any carrier or PBX that speaks SIP (Twilio Elastic SIP Trunking,
// Telnyx, Vonage, Asterisk, FreeSWITCH). Signalling is sipgo's (UDP and TCP
// on Config.ListenAddr); media is RTP through diago's media package (its
// sockets, RTCP and jitter buffer), with the SDP, DTMF, pacing and
// dialog handling written here. See docs/ARCHITECTURE.md, "Lines and the
// call runtime", and docs/telephony.md.
//
// A call's trunk comes with each PlaceRequest, and inbound calls are
// decided by the Admitter, so the provider keeps no per-organization state:
// it only holds the live calls of this node.
//
// Every goroutine the package starts belongs to the Provider: the listener
// loops, one dial goroutine per outbound call until it is answered or ends,
// and two per answered line (its RTP reader and its clock, which also tears
// it down). Close ends every call and waits for all of them.
package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/call"
	"switchboard/internal/lifecycle"
	"switchboard/internal/telephony"
	"switchboard/internal/throttle"
)

// Name is the provider's name in the API ("provider": "sip").
const Name = "sip"

// Defaults of Config.
const (
	DefaultListenAddr = "0.0.0.0:5060"
	// DefaultRingTimeout is how long an outbound call may ring: carriers
	// give up between 30 and 180 s (Twilio's default timeout is 60 s).
	DefaultRingTimeout = 60 * time.Second
	// DefaultMediaTimeout ends a call whose far party sent no RTP for this
	// long (issue 9: 30 s, what Asterisk's rtptimeout is usually set to).
	DefaultMediaTimeout = 30 * time.Second
	// DefaultAckTimeout is how long an answered inbound call waits for the
	// caller's ACK: 64·T1 (RFC 3261 §13.3.1.4).
	DefaultAckTimeout = 32 * time.Second
	// DefaultTransferTimeout bounds the wait for the final NOTIFY after a
	// REFER was accepted (see Line.Transfer).
	DefaultTransferTimeout = 30 * time.Second
	// DefaultAdmitTimeout bounds the Admitter's decision on an INVITE.
	DefaultAdmitTimeout = 8 * time.Second // above routing.MaxTimeout: the routing endpoint has its whole deadline
	DefaultUserAgent    = "Switchboard"
)

// DefaultRTPPorts is the RTP port range of --rtp-ports.
var DefaultRTPPorts = PortRange{Min: 10000, Max: 20000}

// PortRange is an inclusive range of UDP ports for RTP; each call takes an
// even port for RTP and the odd one above it for RTCP.
type PortRange struct{ Min, Max int }

// ParsePortRange reads "10000-20000" (the --rtp-ports flag).
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	r := PortRange{Min: a, Max: b}
	if !ok || err1 != nil || err2 != nil {
		return r, fmt.Errorf("sip: rtp ports must be MIN-MAX, e.g. 10000-20000, got %q", s)
	}
	return r, r.validate()
}

func (r PortRange) validate() error {
	if r.Min < 1024 || r.Max > 65535 || r.Max-r.Min < 3 {
		return fmt.Errorf("sip: rtp ports must be a range of at least 4 ports within 1024-65535, got %d-%d", r.Min, r.Max)
	}
	return nil
}

// Config configures a Provider. Zero fields take the defaults above.
type Config struct {
	// ListenAddr is where SIP is served, on UDP and TCP both
	// (--sip-addr, default 0.0.0.0:5060). Port 0 picks a free port
	// (tests); see Provider.Addr.
	ListenAddr string
	// PublicIP is the address put in Contact headers and SDP
	// (--sip-public-ip), for a server behind NAT. Empty: the listen
	// address if it is a specific IP, else the first non-loopback IPv4
	// address of this host.
	PublicIP string
	// RTPPorts is the range RTP and RTCP ports are taken from (--rtp-ports).
	RTPPorts PortRange
	// RingTimeout bounds how long an outbound call rings before it is
	// canceled as no-answer.
	RingTimeout time.Duration
	// MediaTimeout ends an answered call after this long without RTP from
	// the far party (failed, sip-media-timeout).
	MediaTimeout time.Duration
	// AckTimeout bounds the wait for the ACK of an inbound call's 200 OK.
	AckTimeout time.Duration
	// TransferTimeout bounds the wait for the outcome of an accepted REFER.
	TransferTimeout time.Duration
	// AdmitTimeout bounds the Admitter.
	AdmitTimeout time.Duration
	// UserAgent is sent in User-Agent and Server headers.
	UserAgent string
}

func (c *Config) setDefaults() error {
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if c.RTPPorts == (PortRange{}) {
		c.RTPPorts = DefaultRTPPorts
	}
	if err := c.RTPPorts.validate(); err != nil {
		return err
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.RingTimeout, DefaultRingTimeout}, {&c.MediaTimeout, DefaultMediaTimeout},
		{&c.AckTimeout, DefaultAckTimeout}, {&c.TransferTimeout, DefaultTransferTimeout},
		{&c.AdmitTimeout, DefaultAdmitTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return nil
}

// ErrClosed is returned by Place after Close.
var ErrClosed = errors.New("sip: provider closed")

// Provider is the SIP telephony.Network of this node. Create it with New,
// serve with Start, stop with Stop or Close.
type Provider struct {
	cfg   Config
	sink  telephony.EventSink
	admit telephony.Admitter
	log   *slog.Logger

	ua          *sipgo.UserAgent
	srv         *sipgo.Server
	listenHost  netip.Addr // specific IP or unspecified
	publicIP    netip.Addr
	ports       *portAllocator
	serveWG     sync.WaitGroup
	udpConn     net.PacketConn
	tcpLn       net.Listener
	port        int
	udpCli      *sipgo.Client
	tcpCli      *sipgo.Client
	tlsCli      *sipgo.Client
	contactUser string

	mu      sync.Mutex
	started bool
	closed  bool
	calls   map[string]*leg // by Switchboard call id
	dialogs map[string]*leg // by SIP Call-ID
	wg      sync.WaitGroup  // dial goroutines, INVITE handlers, lines

	stats stats
	// refusals samples the log lines of refused INVITEs.
	refusals *throttle.Sampler
	stopping lifecycle.Blocking
}

// New checks cfg and builds the provider; nothing listens until Start,
// which gives it the call control it reports to.
func New(cfg Config, log *slog.Logger) (*Provider, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	host, _, err := net.SplitHostPort(cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("sip: listen address must be host:port, got %q: %w", cfg.ListenAddr, err)
	}
	listenHost := netip.IPv4Unspecified()
	if host != "" {
		if listenHost, err = netip.ParseAddr(host); err != nil {
			return nil, fmt.Errorf("sip: listen address must be an IP and port, got %q", cfg.ListenAddr)
		}
	}
	publicIP, err := choosePublicIP(cfg.PublicIP, listenHost)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		cfg: cfg, log: log.With("provider", Name),
		// Until Start: no events, and every inbound call refused.
		sink: func(telephony.Event) {}, admit: telephony.CallControlFuncs{}.Admit,
		listenHost: listenHost, publicIP: publicIP,
		ports:       newPortAllocator(cfg.RTPPorts),
		calls:       map[string]*leg{},
		dialogs:     map[string]*leg{},
		contactUser: "switchboard",
	}
	p.stats.refused = map[string]*atomic.Uint64{}
	p.refusals = throttle.NewSampler(p.log, "sip INVITEs refused", 0)
	for _, r := range refusalReasons {
		p.stats.refused[r] = new(atomic.Uint64)
	}
	slog := p.log.With("component", "sipgo")
	p.ua, err = sipgo.NewUA(
		sipgo.WithUserAgent(cfg.UserAgent),
		sipgo.WithUserAgentHostname(publicIP.String()),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(slog)),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(slog)),
	)
	if err != nil {
		return nil, fmt.Errorf("sip: user agent: %w", err)
	}
	p.srv, err = sipgo.NewServer(p.ua, sipgo.WithServerLogger(slog))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sip: server: %w", err), p.ua.Close())
	}
	p.srv.OnInvite(p.onInvite)
	p.srv.OnAck(p.onAck)
	p.srv.OnBye(p.onBye)
	p.srv.OnInfo(p.onInfo)
	p.srv.OnNotify(p.onNotify)
	p.srv.OnUpdate(p.onUpdate)
	p.srv.OnOptions(p.onOptions)
	// CANCEL of an INVITE we have not answered is handled by sipgo's
	// transaction layer (200 to the CANCEL, 487 to the INVITE), which ends
	// the server dialog; a CANCEL matching nothing gets 481.
	p.srv.OnCancel(func(req *sip.Request, tx sip.ServerTransaction) {
		p.respond(tx, req, 481, "Call/Transaction Does Not Exist")
	})
	// REGISTER, SUBSCRIBE, MESSAGE, REFER to us…: 405 with what we allow,
	// quietly (scanners send them all day; sipgo's default logs a warning).
	p.srv.OnNoRoute(func(req *sip.Request, tx sip.ServerTransaction) {
		p.respond(tx, req, 405, "Method Not Allowed", sip.NewHeader("Allow", allowMethods))
	})
	return p, nil
}

// choosePublicIP is Config.PublicIP, else the listen IP, else the first
// non-loopback IPv4 address of the host.
func choosePublicIP(public string, listen netip.Addr) (netip.Addr, error) {
	if public != "" {
		a, err := netip.ParseAddr(public)
		if err != nil {
			return a, fmt.Errorf("sip: public IP must be an IP address, got %q", public)
		}
		return a.Unmap(), nil
	}
	if !listen.IsUnspecified() {
		return listen, nil
	}
	ip, _, err := sip.ResolveInterfacesIP("ip4", nil)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("sip: no public IP given and none found on this host's interfaces: %w", err)
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return a, fmt.Errorf("sip: interface address %v is not an IP", ip)
	}
	return a.Unmap(), nil
}

// Name is "sip".
func (p *Provider) Name() string { return Name }

// awaitUDP waits until sipgo serves the listening UDP socket at addr (its
// pool holds it), within ctx and 5 s.
func (p *Provider) awaitUDP(ctx context.Context, addr string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := p.ua.TransportLayer().GetConnection("udp", addr); err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("sip: the UDP listener at %s did not start", addr)
		}
		time.Sleep(time.Millisecond)
	}
}

// Start listens for SIP on UDP and TCP at Config.ListenAddr (the same port
// for both) and serves until Close: calls' progress goes to cc, and cc
// admits the inbound ones. ctx bounds only the listening.
func (p *Provider) Start(ctx context.Context, cc telephony.CallControl) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.started {
		return errors.New("sip: already started")
	}
	if cc == nil {
		return errors.New("sip: a call control is required")
	}
	p.sink, p.admit = cc.HandleEvent, cc.Admit
	host, portStr, _ := net.SplitHostPort(p.cfg.ListenAddr)
	want, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("sip: listen port %q: %w", portStr, err)
	}
	var lc net.ListenConfig
	// Port 0: pick a UDP port, then take the same for TCP; retry if TCP
	// has it taken.
	for attempt := 0; ; attempt++ {
		udp, err := lc.ListenPacket(ctx, "udp", net.JoinHostPort(host, strconv.Itoa(want)))
		if err != nil {
			return fmt.Errorf("sip: listen udp %s: %w", p.cfg.ListenAddr, err)
		}
		port := udp.LocalAddr().(*net.UDPAddr).Port
		tcp, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			_ = udp.Close()
			if want == 0 && attempt < 10 {
				continue
			}
			return fmt.Errorf("sip: listen tcp on port %d: %w", port, err)
		}
		p.udpConn, p.tcpLn, p.port = udp, tcp, port
		break
	}
	// Requests we send over UDP leave from the listening socket (carriers
	// answer and allow-list by source port); Via and Contact carry the
	// public address.
	udpAddr := p.udpConn.LocalAddr().String()
	opts := func(extra ...sipgo.ClientOption) []sipgo.ClientOption {
		return append([]sipgo.ClientOption{
			sipgo.WithClientHostname(p.publicIP.String()),
			sipgo.WithClientPort(p.port),
			sipgo.WithClientLogger(p.log.With("component", "sipgo")),
		}, extra...)
	}
	if p.udpCli, err = sipgo.NewClient(p.ua, opts(sipgo.WithClientConnectionAddr(udpAddr))...); err != nil {
		return p.closeListeners(fmt.Errorf("sip: client: %w", err))
	}
	if p.tcpCli, err = sipgo.NewClient(p.ua, opts()...); err != nil {
		return p.closeListeners(fmt.Errorf("sip: client: %w", err))
	}
	if p.tlsCli, err = sipgo.NewClient(p.ua, opts()...); err != nil {
		return p.closeListeners(fmt.Errorf("sip: client: %w", err))
	}
	p.started = true
	udpConn, tcpLn := p.udpConn, p.tcpLn
	p.serveWG.Go(func() {
		if err := p.srv.ServeUDP(udpConn); err != nil && !errors.Is(err, net.ErrClosed) {
			p.log.Error("sip udp listener stopped", "err", err)
		}
	})
	p.serveWG.Go(func() {
		// ServeTCP returns only when the listener fails or is closed.
		if err := p.srv.ServeTCP(tcpLn); !errors.Is(err, net.ErrClosed) {
			p.log.Error("sip tcp listener stopped", "err", err)
		}
	})
	// sipgo registers the UDP socket in its connection pool on the serving
	// goroutine; until it has, a request sent "from" it would try to bind
	// the address again and fail. Start returns once it is registered.
	if err := p.awaitUDP(ctx, udpAddr); err != nil {
		return err
	}
	p.log.Info("sip listening", "addr", udpAddr, "public_ip", p.publicIP.String(),
		"rtp_ports", fmt.Sprintf("%d-%d", p.cfg.RTPPorts.Min, p.cfg.RTPPorts.Max))
	return nil
}

func (p *Provider) closeListeners(err error) error {
	return errors.Join(err, p.udpConn.Close(), p.tcpLn.Close())
}

// Addr is the address SIP is served on (UDP and TCP), after Start.
func (p *Provider) Addr() netip.AddrPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	return netip.AddrPortFrom(p.listenHost, uint16(p.port))
}

// Inventory lists no numbers: a SIP connection's numbers are the
// organization's own, entered with the connection and stored by the
// service (phone_connections), not stock this provider sells.
func (p *Provider) Inventory(context.Context) ([]telephony.Number, error) { return nil, nil }

// Purchase accepts any number: buying a number of a SIP connection only
// records, in the store, that the organization uses it; there is nothing to
// reserve at a carrier (the trunk already routes it).
func (p *Provider) Purchase(context.Context, string) error { return nil }

// Release does nothing, for the same reason as Purchase.
func (p *Provider) Release(context.Context, string) error { return nil }

// Hangup ends the live call callID. Before the answer it cancels the
// INVITE (CANCEL; an inbound call not yet confirmed is abandoned) and an
// Ended event follows with outcome canceled and an empty Reason, so that
// the service records the end it asked for. After the answer the line
// belongs to the runtime: Hangup sends BYE, makes Receive return the zero
// End and sends no event. An unknown or ended call is not an error. Hangup
// does not wait for an Ended event, so the sink may call it.
func (p *Provider) Hangup(ctx context.Context, callID string) error {
	p.mu.Lock()
	lg := p.calls[callID]
	var line *Line
	if lg != nil {
		line = lg.line
		if line == nil {
			lg.cancel(errHangup)
		}
	}
	p.mu.Unlock()
	if line != nil {
		return line.Hangup(ctx)
	}
	return nil
}

// Close ends every live call and waits for every goroutine of the
// provider, then stops listening. Calls not yet answered end with an Ended
// event (canceled, system-shutdown); answered lines are hung up (BYE) and
// their Receive returns the zero End. It must not be called from the sink.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var lines []*Line
	for _, lg := range p.calls {
		if lg.line != nil {
			lines = append(lines, lg.line)
		} else {
			lg.cancel(errClosing)
		}
	}
	started := p.started
	p.mu.Unlock()
	for _, l := range lines {
		l.finish(telephony.End{}, true)
	}
	p.wg.Wait()
	if !started {
		return p.ua.Close()
	}
	err := errors.Join(p.udpConn.Close(), p.tcpLn.Close())
	p.serveWG.Wait()
	p.refusals.Flush()
	return errors.Join(err, p.ua.Close())
}

// Stop is Close within ctx: when ctx ends first, Stop returns and the
// calls go on ending (Stopped says when they have).
func (p *Provider) Stop(ctx context.Context) error { return p.stopping.Stop(ctx, p.Close) }

// Stopped is closed once Stop's Close has returned.
func (p *Provider) Stopped() <-chan struct{} { return p.stopping.Stopped() }

// enter counts a goroutine that works on calls (a dial, an INVITE
// handler, a line) unless the provider is closing.
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

// ended emits the Ended event of a call that was not handed over.
func (p *Provider) ended(callID, sipCallID string, outcome call.Outcome, reason string) {
	p.emit(telephony.Event{CallID: callID, Kind: telephony.Ended, Outcome: string(outcome), Reason: reason, ProviderCallID: sipCallID})
}

// register records a call as live; false when the provider is closing or
// the call id is already live.
func (p *Provider) register(lg *leg) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.calls[lg.callID] != nil || p.dialogs[lg.sipCallID] != nil {
		return false
	}
	p.calls[lg.callID] = lg
	p.dialogs[lg.sipCallID] = lg
	return true
}

func (p *Provider) unregister(lg *leg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls[lg.callID] == lg {
		delete(p.calls, lg.callID)
	}
	if p.dialogs[lg.sipCallID] == lg {
		delete(p.dialogs, lg.sipCallID)
	}
}

// Live is the number of calls this provider is dialing, answering or
// carrying, for tests and metrics.
func (p *Provider) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// respond answers a request outside any dialog, logging a failure to send.
func (p *Provider) respond(tx sip.ServerTransaction, req *sip.Request, status int, reason string, headers ...sip.Header) {
	if tx == nil {
		return
	}
	res := sip.NewResponseFromRequest(req, status, reason, nil)
	res.AppendHeader(sip.NewHeader("Server", p.cfg.UserAgent))
	for _, h := range headers {
		res.AppendHeader(h)
	}
	if err := tx.Respond(res); err != nil {
		p.log.Debug("sip response not sent", "status", status, "method", req.Method.String(), "err", err)
	}
}

func (p *Provider) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	p.respond(tx, req, 200, "OK",
		sip.NewHeader("Allow", allowMethods),
		sip.NewHeader("Accept", "application/sdp"))
}

const allowMethods = "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, NOTIFY, UPDATE"

// contact is our Contact header for a dialog over transport.
func (p *Provider) contact(user, transport string) sip.ContactHeader {
	params := sip.NewParams()
	params.Add("transport", strings.ToLower(transport))
	return sip.ContactHeader{Address: sip.Uri{
		Scheme: "sip", User: user, Host: p.publicIP.String(), Port: p.port,
		UriParams: params, Headers: sip.NewParams(),
	}}
}

// client is the sipgo client for a transport.
func (p *Provider) client(transport string) *sipgo.Client {
	switch strings.ToUpper(transport) {
	case "TCP":
		return p.tcpCli
	case "TLS":
		return p.tlsCli
	}
	return p.udpCli
}

// Stats are the provider's counters since New.
type Stats struct {
	// Refused counts refused INVITEs by reason: unknown-number (404),
	// source-refused (403), no-inbound-agent (480), unavailable (503),
	// bad-media (488), bad-request (400).
	Refused map[string]uint64
	// InboundAnswered and OutboundAnswered count calls handed to the
	// runtime; OutboundPlaced counts INVITEs sent.
	InboundAnswered, OutboundPlaced, OutboundAnswered uint64
	// RTPQueueDropped counts received RTP packets dropped because the
	// runtime did not read a line for a second.
	RTPQueueDropped uint64
	// WritesDropped counts assistant frames dropped while DTMF was sent.
	WritesDropped uint64
	// Lines is the number of answered lines now live.
	Lines int64
}

var refusalReasons = []string{"unknown-number", "source-refused", "no-inbound-agent", "unavailable", "bad-media", "bad-request", "routed-busy", "routed-forward"}

type stats struct {
	refused                                            map[string]*atomic.Uint64 // keys fixed in New
	inAnswered, outPlaced, outAnswered, rtpDrop, wDrop atomic.Uint64
	lines                                              atomic.Int64
}

// Stats returns a snapshot of the counters.
func (p *Provider) Stats() Stats {
	s := Stats{
		Refused:          map[string]uint64{},
		InboundAnswered:  p.stats.inAnswered.Load(),
		OutboundPlaced:   p.stats.outPlaced.Load(),
		OutboundAnswered: p.stats.outAnswered.Load(),
		RTPQueueDropped:  p.stats.rtpDrop.Load(),
		WritesDropped:    p.stats.wDrop.Load(),
		Lines:            p.stats.lines.Load(),
	}
	for r, c := range p.stats.refused {
		s.Refused[r] = c.Load()
	}
	return s
}

// Collector exposes Stats to Prometheus (switchboard_sip_*).
func (p *Provider) Collector() prometheus.Collector { return &collector{p: p} }

type collector struct{ p *Provider }

var (
	descRefused  = prometheus.NewDesc("switchboard_sip_inbound_refused_total", "INVITEs refused, by reason (nothing is stored for them).", []string{"reason"}, nil)
	descAnswered = prometheus.NewDesc("switchboard_sip_answered_total", "SIP calls answered and handed to the call runtime, by direction.", []string{"direction"}, nil)
	descPlaced   = prometheus.NewDesc("switchboard_sip_outbound_placed_total", "Outbound INVITEs sent.", nil, nil)
	descRTPDrop  = prometheus.NewDesc("switchboard_sip_rtp_queue_dropped_total", "Received RTP packets dropped because a line was not read.", nil, nil)
	descLines    = prometheus.NewDesc("switchboard_sip_lines", "Answered SIP lines now live.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRefused, descAnswered, descPlaced, descRTPDrop, descLines} {
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
	ch <- prometheus.MustNewConstMetric(descRTPDrop, prometheus.CounterValue, float64(s.RTPQueueDropped))
	ch <- prometheus.MustNewConstMetric(descLines, prometheus.GaugeValue, float64(s.Lines))
}

var (
	_ telephony.Network                         = (*Provider)(nil)
	_ lifecycle.Reporter[telephony.CallControl] = (*Provider)(nil)
)
