package callctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/routing"
	"switchboard/internal/telephony"
	"switchboard/internal/vars"
)

// Admit decides an inbound call (the providers' telephony.Admitter): the
// dialed number must be purchased on a connection of the provider (the
// one the provider heard it on, when it says), a SIP call must come from
// one of that connection's inbound sources (a Twilio call was
// authenticated by its signature), and the number must have an inbound
// assistant. A refusal wraps ErrUnknownNumber,
// ErrSourceRefused or ErrNoInboundAgent and stores nothing; an admitted call
// is stored queued, direction inbound, owned by this node, and its id
// returned: the provider's Answered event (with the line) starts it. A
// draining node admits nothing (telephony.ErrUnavailable).
func (s *Service) Admit(ctx context.Context, in telephony.Incoming) (string, error) {
	if s.draining.Load() {
		return "", errors.Join(telephony.ErrUnavailable, errDraining())
	}
	num, err := phone.NormalizeE164(in.To)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a number", telephony.ErrUnknownNumber, in.To)
	}
	var p phone.Purchase
	var conn phone.Connection
	if in.OrgID != "" {
		p, err = s.store.FindInventoryNumber(ctx, in.OrgID, in.Provider, num)
	} else {
		p, conn, err = s.store.FindInboundNumber(ctx, in.Provider, num)
	}
	if apperr.Is(err, apperr.NotFound) {
		return "", fmt.Errorf("%w: %s", telephony.ErrUnknownNumber, num)
	}
	if err != nil {
		return "", errors.Join(telephony.ErrUnavailable, err)
	}
	if in.ConnectionID != "" && in.ConnectionID != conn.ID {
		// Another connection's webhook (another account's token signed
		// it): the number is not on the connection that called.
		return "", fmt.Errorf("%w: %s is not on connection %s", telephony.ErrUnknownNumber, num, in.ConnectionID)
	}
	if conn.Provider == phone.ProviderSIP {
		ok, err := conn.SIP.AllowsSource(ctx, in.Source, lookupHost)
		if err != nil {
			s.log.Warn("the inbound sources of a connection could not be resolved", "connection_id", conn.ID, "err", err)
		}
		if !ok {
			return "", fmt.Errorf("%w: %s for %s", telephony.ErrSourceRefused, in.Source, num)
		}
	}
	if p.InboundAssistantID == "" {
		return "", fmt.Errorf("%w: %s", telephony.ErrNoInboundAgent, num)
	}
	now := s.now().UTC()
	from := in.From
	if n, err := phone.NormalizeE164(from); err == nil {
		from = n
	} else if len(from) > 128 {
		from = strings.ToValidUTF8(from[:128], "") // the peer's caller id: kept, bounded
	}
	c := call.Call{
		ID: id.New(id.Call), OrgID: p.OrgID, Type: call.Phone, Status: call.Queued, Direction: call.Inbound,
		AssistantID: p.InboundAssistantID, PurchaseID: p.ID, From: from, To: num, Provider: in.Provider,
		ProviderCallID: in.ProviderCallID, CreatedAt: now, UpdatedAt: now, NodeID: s.node,
	}
	rec, extra, err := s.route(ctx, &c)
	if err != nil {
		return "", err // a refusal: busy, or a forward
	}
	c.Routing = rec.JSON()
	c.Variables = variables(c, s.contactByNumber(ctx, p.OrgID, p.ID, from), p.Message, "", extra)
	if err := s.store.CreateCall(ctx, c); err != nil {
		return "", errors.Join(telephony.ErrUnavailable, err)
	}
	return c.ID, nil
}

// lookupHost resolves a trunk's host name to its addresses (inbound
// sources default to them).
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// route asks the organization's routing endpoint, if it has one, which
// assistant answers inbound call c (docs/ARCHITECTURE.md, "Inbound
// routing"): it sets c.AssistantID to the endpoint's choice and returns
// the record and the endpoint's variables; a refusal (telephony.ErrBusy,
// *telephony.Forward) is returned as the error. Whatever else goes wrong
// the number's allocated assistant answers, and the record says why.
func (s *Service) route(ctx context.Context, c *call.Call) (routing.Record, vars.Values, error) {
	if s.router == nil {
		return routing.Record{Source: routing.SourceAllocation}, nil, nil
	}
	ep, err := s.store.GetAssistantRequest(ctx, c.OrgID)
	if apperr.Is(err, apperr.NotFound) {
		return routing.Record{Source: routing.SourceAllocation}, nil, nil
	}
	fallback := func(reason string) (routing.Record, vars.Values, error) {
		s.log.Info("inbound routing fell back to the allocated assistant", "call_id", c.ID, "reason", reason)
		return routing.Record{Source: routing.SourceFallback, Reason: reason}, nil, nil
	}
	if err != nil {
		return fallback("the endpoint could not be read: " + err.Error())
	}
	listed, _ := s.store.DNCListed(ctx, c.OrgID, c.From)
	ans, err := s.router.Ask(ctx, ep, routing.Request{CallID: c.ID, From: c.From, To: c.To, PurchaseID: c.PurchaseID,
		Provider: c.Provider, AssistantID: c.AssistantID, DoNotCall: listed})
	if err != nil {
		return fallback(err.Error())
	}
	switch {
	case ans.Refuse != "":
		return routing.Record{}, nil, telephony.ErrBusy
	case ans.Forward != "":
		return routing.Record{}, nil, &telephony.Forward{To: ans.Forward}
	}
	if ans.AssistantID != "" && ans.AssistantID != c.AssistantID {
		// Looked up in the calling organization only: another
		// organization's assistant is unknown here, as a deleted one is.
		if _, err := s.store.GetAssistant(ctx, c.OrgID, ans.AssistantID); err != nil {
			if apperr.Is(err, apperr.NotFound) {
				return fallback("unknown assistant " + ans.AssistantID)
			}
			return fallback("the assistant could not be read: " + err.Error())
		}
		c.AssistantID = ans.AssistantID
	}
	return routing.Record{Source: routing.SourceWebhook, FirstMessage: ans.FirstMessage}, ans.Variables, nil
}
