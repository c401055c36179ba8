package sip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// Why a call's dial or answer was stopped (context causes).
var (
	errHangup      = errors.New("sip: hung up")
	errClosing     = errors.New("sip: provider closing")
	errRingTimeout = errors.New("sip: ring timeout")
)

// leg is one call's SIP side while it is live: dialing, being answered, or
// answered (line set, under Provider.mu).
type leg struct {
	callID    string // Switchboard's
	sipCallID string
	inbound   bool
	// cancel stops the dial or the answer; the goroutine doing it ends the
	// call with an Ended event according to the cause.
	cancel context.CancelCauseFunc
	// dlg and line are set under Provider.mu: an inbound call's dialog at
	// once, an outbound call's once it is answered (its ID exists then).
	dlg  dialog
	line *Line
}

// Place dials req.To at req.Trunk: INVITE sip:<To>@<Trunk.Address> over
// the trunk's transport, From the purchased number, with an SDP offering
// PCMU, PCMA and telephone-event. It returns once the INVITE is sent; the
// dial goes on in a goroutine of the provider, which reports Ringing (on
// 180 or 183, or just before Answered when none came), then Answered with
// the Line, or Ended (classified by Classify).
// Every event carries the SIP Call-ID as ProviderCallID. An error means no
// INVITE left: a bad request, a closed provider, no free RTP port, or a
// transport failure, which is a *telephony.Error (failed,
// sip-provider-failed, retryable).
func (p *Provider) Place(ctx context.Context, req telephony.PlaceRequest) error {
	tr := req.Trunk
	if req.CallID == "" {
		return errors.New("sip: place: a call id is required")
	}
	transport := strings.ToUpper(tr.Transport)
	switch transport {
	case "":
		transport = "UDP"
	case "UDP", "TCP", "TLS":
	default:
		return fmt.Errorf("sip: place: trunk transport must be udp, tcp or tls, got %q", tr.Transport)
	}
	host, port, err := splitTrunkAddress(tr.Address)
	if err != nil {
		return err
	}
	to := NormalizeNumber(req.To)
	if to == "" {
		return fmt.Errorf("sip: place: destination %q is not an E.164 number", req.To)
	}
	from := NormalizeNumber(req.From)
	if from == "" {
		return fmt.Errorf("sip: place: caller id %q is not an E.164 number", req.From)
	}
	if !p.enter() {
		return ErrClosed
	}
	placed := false
	defer func() {
		if !placed {
			p.wg.Done()
		}
	}()
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return errors.New("sip: place: provider not started")
	}

	med, err := p.openMedia()
	if err != nil {
		return err
	}
	recipient := sip.Uri{Scheme: "sip", User: to, Host: host, Port: port, UriParams: sip.NewParams(), Headers: sip.NewParams()}
	if transport != "UDP" {
		recipient.UriParams.Add("transport", strings.ToLower(transport))
	}
	invite := sip.NewRequest(sip.INVITE, recipient)
	invite.SetTransport(transport)
	fromHdr := &sip.FromHeader{
		Address: sip.Uri{Scheme: "sip", User: from, Host: p.publicIP.String(), UriParams: sip.NewParams(), Headers: sip.NewParams()},
		Params:  sip.NewParams(),
	}
	fromHdr.Params.Add("tag", sip.GenerateTagN(16))
	invite.AppendHeader(fromHdr)
	invite.AppendHeader(&sip.ToHeader{
		Address: sip.Uri{Scheme: "sip", User: to, Host: host, UriParams: sip.NewParams(), Headers: sip.NewParams()},
		Params:  sip.NewParams(),
	})
	contact := p.contact(from, transport)
	invite.AppendHeader(&contact)
	invite.AppendHeader(sip.NewHeader("User-Agent", p.cfg.UserAgent))
	invite.AppendHeader(sip.NewHeader("Allow", allowMethods))
	invite.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	invite.SetBody(buildSDP(med.local, med.sessionID, med.sessionID, offerFormats))

	dialogUA := &sipgo.DialogUA{Client: p.client(transport), ContactHDR: contact}
	d, err := dialogUA.WriteInvite(ctx, invite)
	if err != nil {
		med.close()
		te := Classify(0, false)
		te.Err = fmt.Errorf("sending INVITE to %s: %w", tr.String(), err)
		return te
	}
	sipCallID := invite.CallID().Value()
	dctx, cancel := context.WithCancelCause(context.Background())
	lg := &leg{callID: req.CallID, sipCallID: sipCallID, cancel: cancel}
	if !p.register(lg) {
		cancel(errClosing)
		d.Close()
		med.close()
		return fmt.Errorf("sip: place: call %s is already live, or the provider is closing", req.CallID)
	}
	p.stats.outPlaced.Add(1)
	placed = true
	p.log.Info("sip call placed", "call_id", req.CallID, "sip_call_id", sipCallID, "trunk", tr.String(), "to", to)
	go p.dial(dctx, lg, d, med, tr)
	return nil
}

// splitTrunkAddress reads a trunk's "host:port" (port optional, 5060).
func splitTrunkAddress(addr string) (string, int, error) {
	if addr == "" {
		return "", 0, errors.New("sip: place: the trunk has no address")
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0, nil //nolint:nilerr // no port: the transport's default
	}
	var port int
	if _, err := fmt.Sscanf(portStr, "%d", &port); err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("sip: place: trunk address %q has a bad port", addr)
	}
	return host, port, nil
}

// dial waits for the answer of an outbound call and hands its line to the
// runtime, or ends it. It owns lg, d and med until then.
func (p *Provider) dial(ctx context.Context, lg *leg, d *sipgo.DialogClientSession, med *rtpMedia, tr telephony.Trunk) {
	defer p.wg.Done()
	handedOver := false
	defer func() {
		if !handedOver {
			d.Close()
			med.close()
			p.unregister(lg)
		}
	}()
	ringCtx, stopRing := context.WithTimeoutCause(ctx, p.cfg.RingTimeout, errRingTimeout)
	defer stopRing()

	var ringing, anyResponse, authenticated bool
	err := d.WaitAnswer(ringCtx, sipgo.AnswerOptions{
		Username: tr.Username,
		Password: tr.Password,
		OnResponse: func(res *sip.Response) error {
			anyResponse = true
			if (res.StatusCode == 401 || res.StatusCode == 407) && tr.Password != "" {
				authenticated = true // the next INVITE carries credentials
			}
			if !ringing && (res.StatusCode == 180 || res.StatusCode == 183) {
				ringing = true
				p.emit(telephony.Event{CallID: lg.callID, Kind: telephony.Ringing, ProviderCallID: lg.sipCallID})
			}
			return nil
		},
	})
	if err != nil {
		if ringCtx.Err() != nil {
			// We canceled (CANCEL was sent if anything answered). A 200
			// that crossed the CANCEL is acknowledged and hung up.
			if res := d.InviteResponse; res != nil && res.IsSuccess() {
				p.abandonAnswered(d)
			}
			switch cause := context.Cause(ringCtx); {
			case errors.Is(cause, errHangup):
				p.ended(lg.callID, lg.sipCallID, call.Canceled, "")
			case errors.Is(cause, errClosing):
				p.ended(lg.callID, lg.sipCallID, call.Canceled, call.ReasonSystemShutdown)
			case !anyResponse:
				p.endClassified(lg, Classify(0, authenticated), err)
			default:
				p.endClassified(lg, Classify(StatusRingTimeout, authenticated), err)
			}
			return
		}
		var re *sipgo.ErrDialogResponse
		if errors.As(err, &re) {
			p.endClassified(lg, Classify(re.Res.StatusCode, authenticated), err)
			return
		}
		p.endClassified(lg, Classify(0, authenticated), err)
		return
	}

	// Answered: agree on media, ACK, hand the line over.
	cod, remote, mediaErr := answerMedia(d.InviteResponse.Body())
	if err := d.Ack(context.WithoutCancel(ctx)); err != nil {
		p.endClassified(lg, Classify(0, authenticated), fmt.Errorf("ACK: %w", err))
		return
	}
	if mediaErr != nil {
		p.byeQuietly(d)
		p.endClassified(lg, Classify(488, authenticated), mediaErr)
		return
	}
	dlg := clientDialog{d}
	line, err := p.newLine(lg, dlg, med, cod, remote, tr.Address)
	if err != nil {
		p.byeQuietly(d)
		p.endClassified(lg, Classify(0, authenticated), err)
		return
	}
	p.mu.Lock()
	cause := context.Cause(ctx)
	if cause == nil {
		lg.dlg, lg.line = dlg, line
	}
	p.mu.Unlock()
	if cause != nil {
		// Hung up (or closing) between the 200 and now: the runtime never
		// had the line.
		line.finish(telephony.End{}, true)
		handedOver = true // the line tears down the media and the leg
		reason := ""
		if errors.Is(cause, errClosing) {
			reason = call.ReasonSystemShutdown
		}
		p.ended(lg.callID, lg.sipCallID, call.Canceled, reason)
		return
	}
	handedOver = true
	if !ringing {
		// sipgo handles each response on its own goroutine, so a 180 sent
		// just before the 200 may reach us after it, or a peer may send no
		// 18x at all: an answered call has rung all the same.
		p.emit(telephony.Event{CallID: lg.callID, Kind: telephony.Ringing, ProviderCallID: lg.sipCallID})
	}
	p.stats.outAnswered.Add(1)
	p.log.Info("sip call answered", "call_id", lg.callID, "sip_call_id", lg.sipCallID, "codec", string(cod.Format.Encoding))
	p.emit(telephony.Event{CallID: lg.callID, Kind: telephony.Answered, Line: line, ProviderCallID: lg.sipCallID})
}

// answerMedia reads the peer's SDP answer.
func answerMedia(body []byte) (codecs, remoteMedia, error) {
	rm, err := parseSDP(body)
	if err != nil {
		return codecs{}, rm, err
	}
	c, err := chooseCodecs(rm)
	return c, rm, err
}

func (p *Provider) endClassified(lg *leg, te *telephony.Error, err error) {
	te.Err = err
	p.log.Info("sip call ended before answer", "call_id", lg.callID, "sip_call_id", lg.sipCallID,
		"outcome", te.Outcome, "reason", te.Reason, "status", te.Status, "err", err)
	p.ended(lg.callID, lg.sipCallID, call.Outcome(te.Outcome), te.Reason)
}

// abandonAnswered ACKs and hangs up a 200 that arrived after we gave up.
func (p *Provider) abandonAnswered(d *sipgo.DialogClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	if err := d.Ack(ctx); err != nil {
		p.log.Debug("sip ACK of a late 200 failed", "err", err)
		return
	}
	if err := d.Bye(ctx); err != nil {
		p.log.Debug("sip BYE of a late 200 failed", "err", err)
	}
}

// byeTimeout bounds a BYE (its transaction gives up after 32 s otherwise).
const byeTimeout = 5 * time.Second

func (p *Provider) byeQuietly(d interface{ Bye(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	if err := d.Bye(ctx); err != nil {
		p.log.Debug("sip BYE failed", "err", err)
	}
}
