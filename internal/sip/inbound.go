package sip

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// refusal maps an Admitter's refusal to the SIP response and the metric
// reason: 404 for a number not purchased on a SIP connection, 403 for a
// source outside the connection's inboundSources, 480 (Temporarily
// Unavailable) for a number without an inbound assistant, 503 for anything
// else (the service cannot take calls now).
func refusal(err error) (status int, phrase, reason string) {
	switch {
	case errors.Is(err, telephony.ErrUnknownNumber):
		return 404, "Not Found", "unknown-number"
	case errors.Is(err, telephony.ErrSourceRefused):
		return 403, "Forbidden", "source-refused"
	case errors.Is(err, telephony.ErrNoInboundAgent):
		return 480, "Temporarily Unavailable", "no-inbound-agent"
	case errors.Is(err, telephony.ErrBusy):
		return 486, "Busy Here", "routed-busy"
	case errors.As(err, new(*telephony.Forward)):
		return 302, "Moved Temporarily", "routed-forward"
	default:
		return 503, "Service Unavailable", "unavailable"
	}
}

// onInvite handles INVITEs: a re-INVITE within a dialog, or a new call,
// which the Admitter decides. A refused call gets its status and a log
// line and is counted, nothing more. An admitted one is answered at once
// (180, then 200 with our SDP); once the caller's ACK arrives its line is
// handed to the runtime with an Answered event. It runs on sipgo's
// goroutine for the request, counted in the provider's WaitGroup.
func (p *Provider) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); to != nil && to.Params.Has("tag") {
		p.onReoffer(req, tx)
		return
	}
	if !p.enter() {
		p.respond(tx, req, 503, "Service Unavailable", sip.NewHeader("Retry-After", "30"))
		return
	}
	defer p.wg.Done()
	sipCallID := ""
	if h := req.CallID(); h != nil {
		sipCallID = h.Value()
	}
	source := sourceAddr(req.Source())
	log := p.log.With("sip_call_id", sipCallID, "source", source.String())
	if sipCallID == "" || req.From() == nil || req.To() == nil || req.Contact() == nil || req.CSeq() == nil {
		p.refuse(tx, req, log, 400, "Bad Request", "bad-request", errors.New("missing Call-ID, From, To, Contact or CSeq"))
		return
	}
	offer, err := parseSDP(req.Body())
	var cod codecs
	if err == nil {
		cod, err = chooseCodecs(offer)
	}
	if err != nil {
		p.refuse(tx, req, log, 488, "Not Acceptable Here", "bad-media", err)
		return
	}
	in := telephony.Incoming{
		Provider: Name, To: dialedNumber(req), From: callerNumber(req),
		Source: source, ProviderCallID: sipCallID,
	}
	// Admission may wait for the organization's routing endpoint, up to
	// its deadline (at most routing.MaxTimeout); 180 follows it.
	actx, cancel := context.WithTimeout(context.Background(), p.cfg.AdmitTimeout)
	callID, err := p.admit(actx, in)
	cancel()
	if err != nil {
		status, phrase, reason := refusal(err)
		var extra []sip.Header
		var fwd *telephony.Forward
		if errors.As(err, &fwd) {
			// RFC 3261 §21.3.3: the new location in Contact, a tel URI
			// as the caller's proxy routes numbers (RFC 3966).
			extra = append(extra, sip.NewHeader("Contact", "<tel:"+fwd.To+">"))
		}
		p.refuse(tx, req, log.With("to", in.To, "from", in.From), status, phrase, reason, err, extra...)
		return
	}
	if errors.Is(tx.Err(), sip.ErrTransactionCanceled) {
		// The caller hung up (CANCEL, answered 200 and 487 by sipgo) while
		// the call was being admitted.
		log.Info("sip call canceled by the caller before the answer", "call_id", callID)
		p.ended(callID, sipCallID, call.Canceled, call.ReasonCustomerEnded)
		return
	}
	p.answer(req, tx, callID, sipCallID, cod, offer, log)
}

func (p *Provider) refuse(tx sip.ServerTransaction, req *sip.Request, log *slog.Logger, status int, phrase, reason string, err error, extra ...sip.Header) {
	p.stats.refused[reason].Add(1)
	// A flood of INVITEs (a scanner trying numbers) logs the first of
	// each reason per window in full, then a count.
	if p.refusals.Sample(reason) {
		log.Info("sip INVITE refused", "status", status, "reason", reason, "err", err)
	}
	p.respond(tx, req, status, phrase, extra...)
}

// sourceAddr is the IP of a request's source ("ip:port").
func sourceAddr(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// answer answers an admitted INVITE and hands the line over, or ends the
// call the Admitter stored.
func (p *Provider) answer(req *sip.Request, tx sip.ServerTransaction, callID, sipCallID string, cod codecs, offer remoteMedia, log *slog.Logger) {
	contact := p.contact(p.contactUser, req.Transport())
	dialogUA := &sipgo.DialogUA{Client: p.client(req.Transport()), ContactHDR: contact}
	d, err := dialogUA.ReadInvite(req, tx)
	if err != nil {
		if errors.Is(tx.Err(), sip.ErrTransactionCanceled) {
			p.ended(callID, sipCallID, call.Canceled, call.ReasonCustomerEnded)
			return
		}
		p.respond(tx, req, 400, "Bad Request")
		log.Info("sip INVITE unreadable after admission", "call_id", callID, "err", err)
		p.ended(callID, sipCallID, call.Failed, ReasonProviderFailed)
		return
	}
	dlg := serverDialog{d}
	actx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	lg := &leg{callID: callID, sipCallID: sipCallID, inbound: true, cancel: cancel, dlg: dlg}
	if !p.register(lg) {
		p.respond(tx, req, 503, "Service Unavailable")
		p.ended(callID, sipCallID, call.Canceled, call.ReasonSystemShutdown)
		return
	}
	handedOver := false
	var med *rtpMedia
	defer func() {
		if !handedOver {
			if med != nil {
				med.close()
			}
			p.unregister(lg)
		}
	}()
	med, err = p.openMedia()
	if err != nil {
		p.respond(tx, req, 503, "Service Unavailable")
		log.Info("sip INVITE not answered", "call_id", callID, "err", err)
		p.ended(callID, sipCallID, call.Failed, ReasonProviderFailed)
		return
	}
	if err := d.Respond(180, "Ringing", nil, sip.NewHeader("Server", p.cfg.UserAgent)); err != nil {
		p.ended(callID, sipCallID, call.Canceled, call.ReasonCustomerEnded) // CANCEL came first
		return
	}
	answer := buildSDP(med.local, med.sessionID, med.sessionID, answerFormats(cod))
	res := sip.NewSDPResponseFromRequest(d.InviteRequest, answer)
	res.AppendHeader(sip.NewHeader("Server", p.cfg.UserAgent))
	res.AppendHeader(sip.NewHeader("Allow", allowMethods))
	// WriteResponse sends the 200 and retransmits it until the ACK (or
	// until the transaction ends); it runs aside so that the ACK timeout,
	// Hangup and Close can stop it by terminating the transaction.
	acked := make(chan error, 1)
	p.wg.Go(func() { acked <- d.WriteResponse(res) })
	ackTimer := time.NewTimer(p.cfg.AckTimeout)
	defer ackTimer.Stop()
	var ackErr error
	var stopCause error
	select {
	case ackErr = <-acked:
	case <-ackTimer.C:
		stopCause = errors.New("no ACK")
	case <-actx.Done():
		stopCause = context.Cause(actx)
	}
	if stopCause != nil {
		tx.Terminate()
		ackErr = <-acked
	}
	if stopCause == nil && ackErr == nil && d.LoadState() == sip.DialogStateConfirmed {
		line, err := p.newLine(lg, dlg, med, cod, offer, req.Source())
		if err == nil {
			p.mu.Lock()
			cause := context.Cause(actx)
			if cause == nil {
				lg.line = line
			}
			p.mu.Unlock()
			handedOver = true // the line owns the media and the leg now
			if cause == nil {
				p.stats.inAnswered.Add(1)
				log.Info("sip call answered", "call_id", callID, "codec", string(cod.Format.Encoding))
				p.emit(telephony.Event{CallID: callID, Kind: telephony.Answered, Line: line, ProviderCallID: sipCallID})
				return
			}
			line.finish(telephony.End{}, true)
			stopCause = cause
		} else {
			ackErr = err
		}
	}
	// Not answered after all.
	switch {
	case errors.Is(stopCause, errHangup):
		p.ended(callID, sipCallID, call.Canceled, "")
	case errors.Is(stopCause, errClosing):
		p.ended(callID, sipCallID, call.Canceled, call.ReasonSystemShutdown)
	case errors.Is(context.Cause(d.Context()), sip.ErrTransactionCanceled), d.LoadState() == sip.DialogStateEnded:
		// CANCEL before our 200, or a BYE that overtook its ACK (both are
		// handled on their own goroutines): the caller hung up first.
		p.ended(callID, sipCallID, call.Canceled, call.ReasonCustomerEnded)
	default:
		log.Info("sip call not answered", "call_id", callID, "cause", stopCause, "err", ackErr)
		p.ended(callID, sipCallID, call.Failed, ReasonProviderFailed)
	}
	if !handedOver && d.InviteResponse != nil && d.InviteResponse.IsSuccess() {
		// The 200 went out: end the dialog it may have made.
		p.byeQuietly(dlg)
	}
}

// lookup finds the live call a request within a dialog belongs to.
func (p *Provider) lookup(req *sip.Request) (*leg, *Line) {
	h := req.CallID()
	if h == nil {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	lg := p.dialogs[h.Value()]
	if lg == nil || lg.dlg == nil || !lg.dlg.matches(req) {
		return nil, nil
	}
	return lg, lg.line
}

func (p *Provider) onAck(req *sip.Request, tx sip.ServerTransaction) {
	lg, _ := p.lookup(req)
	if lg == nil {
		return // an ACK for a refusal (absorbed by its transaction) or a late one
	}
	if sd, ok := lg.dlg.(serverDialog); ok {
		if err := sd.ReadAck(req, tx); err != nil {
			p.log.Debug("sip ACK not matched", "sip_call_id", lg.sipCallID, "err", err)
		}
	}
}

func (p *Provider) onBye(req *sip.Request, tx sip.ServerTransaction) {
	lg, line := p.lookup(req)
	if lg == nil {
		p.respond(tx, req, 481, "Call/Transaction Does Not Exist")
		return
	}
	if err := lg.dlg.readBye(req, tx); err != nil {
		p.log.Debug("sip BYE", "sip_call_id", lg.sipCallID, "err", err)
	}
	if line == nil {
		return // before the hand-over: the dial or answer sees the dialog end
	}
	reason := call.ReasonCustomerEnded
	if line.transferAccepted.Load() {
		reason = ReasonTransferred
	}
	line.finish(telephony.End{Outcome: string(call.Completed), Reason: reason}, false)
}

// onInfo takes DTMF sent as SIP INFO (application/dtmf-relay or
// application/dtmf); other INFO bodies get 415.
func (p *Provider) onInfo(req *sip.Request, tx sip.ServerTransaction) {
	lg, line := p.lookup(req)
	if lg == nil || line == nil {
		p.respond(tx, req, 481, "Call/Transaction Does Not Exist")
		return
	}
	ct := ""
	if h := req.ContentType(); h != nil {
		ct = h.Value()
	}
	d, ok := parseInfoDTMF(ct, req.Body())
	if !ok {
		p.respond(tx, req, 415, "Unsupported Media Type", sip.NewHeader("Accept", "application/dtmf-relay, application/dtmf"))
		return
	}
	// The key is queued before the 200: sipgo runs each request on its own
	// goroutine, and a peer sends its next INFO once this one is answered,
	// so queuing after the answer let "5#" arrive as "#5" on a busy machine.
	select {
	case line.info <- d:
	default: // sixteen keys unread: the runtime is not reading
	}
	p.respond(tx, req, 200, "OK")
}

// onNotify takes the NOTIFYs of a REFER (message/sipfrag).
func (p *Provider) onNotify(req *sip.Request, tx sip.ServerTransaction) {
	lg, line := p.lookup(req)
	if lg == nil || line == nil {
		p.respond(tx, req, 481, "Call/Transaction Does Not Exist")
		return
	}
	p.respond(tx, req, 200, "OK")
	if code, ok := parseSipfrag(req.Body()); ok {
		select {
		case line.notify <- code:
		default:
		}
	}
}

// parseSipfrag reads the status of a message/sipfrag body: "SIP/2.0 200 OK".
func parseSipfrag(body []byte) (int, bool) {
	if len(body) > 1024 {
		body = body[:1024]
	}
	first, _, _ := strings.Cut(string(body), "\n")
	f := strings.Fields(first)
	if len(f) < 2 || !strings.HasPrefix(strings.ToUpper(f[0]), "SIP/") {
		return 0, false
	}
	code, err := strconv.Atoi(f[1])
	if err != nil || code < 100 || code > 699 {
		return 0, false
	}
	return code, true
}

// onUpdate answers UPDATE (session refresh, RFC 4028) like a re-INVITE.
func (p *Provider) onUpdate(req *sip.Request, tx sip.ServerTransaction) { p.onReoffer(req, tx) }

// onReoffer answers a re-INVITE or UPDATE within a live call with our
// current SDP: session refreshes and keep-alives work; a change of the far
// party's media (hold, a new address) is not followed.
func (p *Provider) onReoffer(req *sip.Request, tx sip.ServerTransaction) {
	lg, line := p.lookup(req)
	if lg == nil || line == nil {
		p.respond(tx, req, 481, "Call/Transaction Does Not Exist")
		return
	}
	var body []byte
	if len(req.Body()) > 0 {
		body = buildSDP(line.med.local, line.med.sessionID, line.med.sessionID+1, answerFormats(line.cod))
	}
	res := sip.NewResponseFromRequest(req, 200, "OK", body)
	contact := p.contact(p.contactUser, req.Transport())
	res.AppendHeader(&contact)
	if body != nil {
		res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	}
	if err := tx.Respond(res); err != nil {
		p.log.Debug("sip re-offer not answered", "sip_call_id", lg.sipCallID, "err", err)
	}
}
