package twilio

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// startTimeout bounds the wait for a stream's start message after the
// websocket upgrade.
const startTimeout = 10 * time.Second

// Handler serves Twilio's requests to this server, under /twilio/ (mount
// it there; PublicURL must map to this server's root). Every path carries
// the connection id, which selects the account whose auth token checks
// the request's X-Twilio-Signature ("Webhooks security") before anything
// else happens; a missing or wrong signature is answered 403 and changes
// nothing.
//
//	POST /twilio/{connID}/voice                  inbound call (a number's VoiceUrl): TwiML
//	POST /twilio/{connID}/status                 status callback of a number's calls (by CallSid)
//	POST /twilio/{connID}/calls/{callID}/twiml   an outbound call's TwiML, after AMD
//	POST /twilio/{connID}/calls/{callID}/status  an outbound call's status callbacks
//	GET  /twilio/{connID}/stream                 the Media Streams websocket
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /twilio/{conn}/voice", p.counted(p.serveVoice))
	mux.HandleFunc("POST /twilio/{conn}/status", p.counted(p.serveStatus))
	mux.HandleFunc("POST /twilio/{conn}/calls/{call}/twiml", p.counted(p.serveTwiML))
	mux.HandleFunc("POST /twilio/{conn}/calls/{call}/status", p.counted(p.serveStatus))
	mux.HandleFunc("GET /twilio/{conn}/stream", p.counted(p.serveStream))
	return mux
}

// counted runs h as a goroutine of the provider (Close waits for it);
// after Close it answers 503 (the voice webhook: <Reject/>).
func (p *Provider) counted(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !p.enter() {
			if strings.HasSuffix(r.URL.Path, "/voice") {
				writeTwiML(w, RejectTwiML())
				return
			}
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		defer p.wg.Done()
		h(w, r)
	}
}

func writeTwiML(w http.ResponseWriter, twiml string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = io.WriteString(w, twiml)
}

// publicURL is the URL Twilio requested, as it was given to Twilio.
func (p *Provider) publicURL(base string, r *http.Request) string {
	u := base + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

// authenticate parses a webhook's form and checks its signature with the
// auth token of the connection in its path. It answers the refusal itself
// and returns ok false.
func (p *Provider) authenticate(w http.ResponseWriter, r *http.Request, base string) (Account, bool) {
	connID := r.PathValue("conn")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxWebhookBody)
		if err := r.ParseForm(); err != nil {
			p.refuse("bad-request", "path", r.URL.Path, "err", err)
			http.Error(w, "bad form", http.StatusBadRequest)
			return Account{}, false
		}
	}
	if r.Header.Get(SignatureHeader) == "" {
		p.refuse("bad-signature", "path", r.URL.Path, "remote", r.RemoteAddr)
		http.Error(w, "missing signature", http.StatusForbidden)
		return Account{}, false
	}
	acct, err := p.cfg.Accounts(r.Context(), connID)
	if err != nil {
		p.refuse("unknown-connection", "connection_id", connID, "err", err)
		http.Error(w, "forbidden", http.StatusForbidden)
		return Account{}, false
	}
	if !validRequest(r, acct.Token, p.publicURL(base, r)) {
		p.refuse("bad-signature", "path", r.URL.Path, "remote", r.RemoteAddr)
		http.Error(w, "bad signature", http.StatusForbidden)
		return Account{}, false
	}
	if sid := r.PostForm.Get("AccountSid"); sid != "" && sid != acct.SID {
		p.refuse("bad-request", "path", r.URL.Path, "account_sid", sid)
		http.Error(w, "wrong account", http.StatusForbidden)
		return Account{}, false
	}
	return acct, true
}

// admitRefusal names an Admitter's refusal for the counters.
func admitRefusal(err error) string {
	switch {
	case errors.Is(err, telephony.ErrUnknownNumber):
		return "unknown-number"
	case errors.Is(err, telephony.ErrSourceRefused):
		return "source-refused"
	case errors.Is(err, telephony.ErrNoInboundAgent):
		return "no-inbound-agent"
	case errors.Is(err, telephony.ErrBusy):
		return "routed-busy"
	case errors.As(err, new(*telephony.Forward)):
		return "routed-forward"
	}
	return "unavailable"
}

// streamTwiML is a call's <Connect><Stream> with its id and token.
func (p *Provider) streamTwiML(connID, callID string) string {
	twiml, err := StreamTwiML(p.streamURL(connID), Param{Name: "callId", Value: callID}, Param{Name: "token", Value: p.streamToken(connID, callID)})
	if err != nil { // PublicURL was checked in New
		p.log.Error("twilio stream TwiML", "err", err)
		return HangupTwiML()
	}
	return twiml
}

// serveVoice answers an inbound call (a number's voice webhook, "TwiML
// Voice" request parameters To, From, CallSid): the Admitter decides; an
// admitted call is connected to a stream, a refused one gets <Reject/>.
func (p *Provider) serveVoice(w http.ResponseWriter, r *http.Request) {
	acct, ok := p.authenticate(w, r, p.cfg.PublicURL)
	if !ok {
		return
	}
	connID := r.PathValue("conn")
	to, from, sid := r.PostForm.Get("To"), r.PostForm.Get("From"), r.PostForm.Get("CallSid")
	if !validSID("CA", sid) || to == "" {
		p.refuse("bad-request", "path", r.URL.Path, "call_sid", sid)
		http.Error(w, "CallSid and To are required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.AdmitTimeout)
	callID, err := p.admit(ctx, telephony.Incoming{Provider: Name, ConnectionID: connID, To: to, From: from, ProviderCallID: sid})
	cancel()
	if err != nil {
		p.refuse(admitRefusal(err), "connection_id", connID, "to", to, "call_sid", sid, "err", err)
		var fwd *telephony.Forward
		switch {
		case errors.As(err, &fwd):
			writeTwiML(w, ForwardTwiML(fwd.To))
		case errors.Is(err, telephony.ErrBusy):
			writeTwiML(w, BusyTwiML())
		default:
			writeTwiML(w, RejectTwiML())
		}
		return
	}
	pc := &pcall{id: callID, connID: connID, acct: acct, sid: sid, inbound: true, seq: -1, rank: rankRinging, stream: true}
	p.mu.Lock()
	closed, dupID, dupSID := p.closed, p.calls[callID] != nil, p.bySID[sid] != nil
	if !closed && !dupID && !dupSID {
		p.calls[callID] = pc
		p.bySID[sid] = pc
		p.armLocked(pc, p.cfg.StreamTimeout)
	}
	p.mu.Unlock()
	switch {
	case dupID:
		// The Admitter gave the id of a live call: that call is not this
		// one's to end.
		p.log.Error("twilio: the Admitter returned the id of a live call", "call_id", callID, "call_sid", sid)
		writeTwiML(w, RejectTwiML())
		return
	case closed, dupSID:
		// Admitted (stored ringing) but not answered here: end it. A
		// second voice request for a live CallSid is a replay.
		outcome, reason := call.Failed, ReasonStreamFailed
		if closed {
			outcome, reason = call.Canceled, call.ReasonSystemShutdown
		}
		p.ended(pc, outcome, reason)
		writeTwiML(w, RejectTwiML())
		return
	}
	p.log.Info("twilio inbound call admitted", "call_id", callID, "call_sid", sid, "connection_id", connID, "to", to)
	writeTwiML(w, p.streamTwiML(connID, callID))
}

// findCallLocked returns the live call of a webhook: by the call id in the path
// (outbound) or by CallSid (a number's status callback), on the
// connection of the path. It adopts the CallSid of an outbound call whose
// create request has not returned yet. Under p.mu.
func (p *Provider) findCallLocked(r *http.Request) *pcall {
	connID, sid := r.PathValue("conn"), r.PostForm.Get("CallSid")
	var pc *pcall
	if id := r.PathValue("call"); id != "" {
		pc = p.calls[id]
	} else {
		pc = p.bySID[sid]
	}
	if pc == nil || pc.connID != connID {
		return nil
	}
	if pc.sid == "" && validSID("CA", sid) {
		pc.sid = sid
		p.bySID[sid] = pc
	}
	if sid != "" && pc.sid != sid {
		return nil
	}
	return pc
}

// serveTwiML answers an outbound call's TwiML request, made once the call
// is answered (after answering machine detection, with AnsweredBy:
// "Answering Machine Detection", human, machine_start,
// machine_end_beep, machine_end_silence, machine_end_other, fax, unknown).
// With DetectMachine "hangup" a machine or fax gets <Hangup/> and the call
// ends voicemail (customer-voicemail); anything else is connected to a
// stream. A call we do not know (ended, hung up) gets <Hangup/>.
func (p *Provider) serveTwiML(w http.ResponseWriter, r *http.Request) {
	if _, ok := p.authenticate(w, r, p.cfg.PublicURL); !ok {
		return
	}
	answeredBy := r.PostForm.Get("AnsweredBy")
	machine := strings.HasPrefix(answeredBy, "machine_") || answeredBy == "fax"
	p.mu.Lock()
	pc := p.findCallLocked(r)
	if pc == nil || pc.ended {
		p.mu.Unlock()
		writeTwiML(w, HangupTwiML())
		return
	}
	if machine && pc.detect == DetectHangup {
		p.forgetLocked(pc)
		p.mu.Unlock()
		p.log.Info("twilio call answered by a machine: hung up", "call_id", pc.id, "call_sid", pc.sid, "answered_by", answeredBy)
		p.ended(pc, call.Voicemail, call.ReasonCustomerVoicemail)
		writeTwiML(w, HangupTwiML())
		return
	}
	pc.stream, pc.machine = true, machine
	p.armLocked(pc, p.cfg.StreamTimeout)
	connID, id := pc.connID, pc.id
	p.mu.Unlock()
	writeTwiML(w, p.streamTwiML(connID, id))
}

// serveStatus takes a status callback ("Call resource", StatusCallback;
// parameters CallSid, CallStatus, SequenceNumber). A call's status only
// moves forward: a callback with a SequenceNumber already seen, or a
// status not above the call's (ClassifyStatus's rank), changes nothing, so
// duplicates and reordered callbacks neither move a call back nor end it
// twice. Once the line is handed over, the runtime owns the end and
// callbacks are only noted.
func (p *Provider) serveStatus(w http.ResponseWriter, r *http.Request) {
	if _, ok := p.authenticate(w, r, p.cfg.PublicURL); !ok {
		return
	}
	w.WriteHeader(http.StatusNoContent)
	status := r.PostForm.Get("CallStatus")
	seq := -1
	if s := r.PostForm.Get("SequenceNumber"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			seq = n
		}
	}
	p.mu.Lock()
	pc := p.findCallLocked(r)
	if pc == nil || pc.ended || pc.line != nil {
		p.mu.Unlock()
		return
	}
	if seq >= 0 {
		if seq <= pc.seq {
			p.mu.Unlock()
			return
		}
		pc.seq = seq
	}
	sc := ClassifyStatus(status, pc.stream)
	if sc.Rank <= pc.rank {
		p.mu.Unlock()
		return
	}
	pc.rank = sc.Rank
	ring := sc.Rank == rankRinging && !pc.inbound && !pc.rang
	if ring {
		pc.rang = true
	}
	if sc.End != nil {
		p.forgetLocked(pc)
	}
	p.mu.Unlock()
	if ring {
		p.emit(telephony.Event{CallID: pc.id, Kind: telephony.Ringing, ProviderCallID: pc.sid})
	}
	if sc.End != nil {
		p.log.Info("twilio call ended before its stream", "call_id", pc.id, "call_sid", pc.sid, "status", status, "reason", sc.End.Reason)
		p.ended(pc, call.Outcome(sc.End.Outcome), sc.End.Reason)
	}
}

// serveStream accepts a call's Media Stream: the upgrade's signature is
// checked over the wss URL (403 before upgrading), then the start
// message's customParameters must carry the call's id and token. The call
// is then answered: a goroutine of the provider serves the Line until it
// ends, and Ringing (if not sent) and Answered with the Line go to the sink.
func (p *Provider) serveStream(w http.ResponseWriter, r *http.Request) {
	acct, ok := p.authenticate(w, r, p.wsBase)
	if !ok {
		return
	}
	connID := r.PathValue("conn")
	// The HTTP server's read and write timeouts stay on a hijacked
	// connection and would end every call after them: a stream lasts
	// as long as its call (the line's own timeouts bound it).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		p.refuse("bad-request", "path", r.URL.Path, "err", err)
		return
	}
	conn.SetReadLimit(maxStreamMessage)
	start, err := readStart(conn)
	if err != nil {
		p.refuse("bad-request", "connection_id", connID, "err", err)
		_ = conn.Close(websocket.StatusPolicyViolation, "expected connected and start")
		return
	}
	callID, token := start.CustomParameters["callId"], start.CustomParameters["token"]
	if callID == "" || !p.validToken(connID, callID, token) {
		p.refuse("bad-token", "connection_id", connID, "call_sid", start.CallSid)
		_ = conn.Close(websocket.StatusPolicyViolation, "bad token")
		return
	}
	cl, err := p.Client(acct)
	if err != nil {
		_ = conn.Close(websocket.StatusInternalError, "")
		return
	}
	p.mu.Lock()
	pc := p.calls[callID]
	if pc == nil || pc.ended || pc.line != nil || pc.connID != connID || (pc.sid != "" && pc.sid != start.CallSid) || p.closed {
		p.mu.Unlock()
		p.refuse("unknown-call", "call_id", callID, "call_sid", start.CallSid)
		_ = conn.Close(websocket.StatusPolicyViolation, "no such call")
		return
	}
	if pc.sid == "" {
		pc.sid = start.CallSid
		p.bySID[pc.sid] = pc
	}
	line := newLine(p, pc, conn, cl, start.StreamSid, start.CallSid)
	line.detected, line.machine = pc.detect != "", pc.machine
	pc.line, pc.stream = line, false
	if pc.watchdog != nil {
		pc.watchdog.Stop()
	}
	ring := !pc.inbound && !pc.rang
	pc.rang = true
	p.mu.Unlock()
	p.stats.lines.Add(1)
	if pc.inbound {
		p.stats.inAnswered.Add(1)
	} else {
		p.stats.outAnswered.Add(1)
	}
	// The line is served before it is handed over, so that the sink may
	// hang it up at once (Hangup waits for the teardown the reader does).
	// The connection is hijacked: it outlives this handler.
	p.wg.Go(line.serve)
	if ring {
		// Callbacks and the stream race: an answered call has rung.
		p.emit(telephony.Event{CallID: pc.id, Kind: telephony.Ringing, ProviderCallID: pc.sid})
	}
	p.log.Info("twilio call answered", "call_id", pc.id, "call_sid", pc.sid, "stream_sid", start.StreamSid, "inbound", pc.inbound)
	p.emit(telephony.Event{CallID: pc.id, Kind: telephony.Answered, Line: line, ProviderCallID: pc.sid})
}

// readStart reads the stream's first messages up to start (connected
// comes first; "Media Streams - WebSocket Messages") and checks the media
// format and the stream SID, which goes into every message we send.
func readStart(conn *websocket.Conn) (*streamStart, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for range 3 {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		if typ != websocket.MessageText {
			continue
		}
		m, _, err := decodeStreamMessage(b)
		if err != nil || m.Event == "connected" {
			continue
		}
		if m.Event != "start" {
			return nil, errors.New("twilio: stream sent " + m.Event + " before start")
		}
		s := m.Start
		if !validSID("MZ", s.StreamSid) || !validSID("CA", s.CallSid) {
			return nil, errors.New("twilio: start with a malformed streamSid or callSid")
		}
		if f := s.MediaFormat; f.Encoding != "audio/x-mulaw" || f.SampleRate != 8000 || (f.Channels != 1 && f.Channels != 0) {
			return nil, errors.New("twilio: stream media format is not audio/x-mulaw 8000 Hz mono")
		}
		return s, nil
	}
	return nil, errors.New("twilio: no start message")
}
