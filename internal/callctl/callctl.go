// Package callctl is call control: it creates web and phone calls, hands
// phone calls to their provider, and turns provider events into lifecycle
// transitions (through call.Call.Transition, the one state machine).
package callctl

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/groupcommit"
	"switchboard/internal/id"
	"switchboard/internal/lifecycle"
	"switchboard/internal/phone"
	"switchboard/internal/routing"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
	"switchboard/internal/vars"
)

// Store is what call control reads and writes: the aggregates of the
// store it uses.
type Store interface {
	store.Calls
	store.Attempts
	store.Assistants
	store.Purchases
	store.Connections
	store.Contacts
	store.Nodes
	store.AssistantRequests
}

// Service places calls and follows them to their end.
type Service struct {
	store     Store
	providers map[string]telephony.Network
	log       *slog.Logger
	now       func() time.Time

	secrets   Opener
	publicURL string
	router    Router

	mu      sync.Mutex
	hangups map[string]hangup // by call id, until its Ended event (see hangup)
	// listener hears of answered lines and ended calls (Start).
	listener Listener

	// node is this node's id, recorded on the calls whose line it takes;
	// draining refuses new calls (Drain).
	node     string
	draining atomic.Bool

	// early saves providers' early events in groups (applyGrouped).
	early groupcommit.Group[early, applied]
}

// Config is what call control is built with: what it calls downward.
type Config struct {
	Store Store
	// Providers are the telephony networks calls are placed on and hung
	// up through, each under its Name. They report to the Service once
	// started with it (telephony.CallControl).
	Providers []telephony.Network
	// Node is the id of this node (cluster.NewID), which the calls whose
	// line this node takes record as their owner: a phone call it places
	// or admits, a line a provider hands it, a web call its gateway
	// claims.
	Node string
	// Secrets opens the sealed passwords of connections.
	Secrets Opener
	// PublicURL is the server's public base URL, under which webhook
	// payloads give a recorded call's recordingUrl (as the API does).
	PublicURL string
	// Router asks organizations' routing endpoints about inbound calls
	// (nil: inbound calls go to their number's allocated assistant).
	Router Router
	Log    *slog.Logger
}

// Router puts an inbound call's question to its organization's endpoint
// (ask.Client does).
type Router interface {
	Ask(ctx context.Context, e routing.Endpoint, req routing.Request) (routing.Answer, error)
}

// Listener hears what call control decides about this node's calls: the
// parts above it (the call runtime takes answered lines; the cluster node
// stops an ended call here and tells the node that holds its line). Call
// control is given it as it starts.
type Listener interface {
	// Answered is called (and must not block) when a provider answered a
	// phone call and handed its line over; it reports whether the call
	// runtime took the line (false while it stops: the call then ends
	// system-shutdown and the line is hung up).
	Answered(c call.Call, line telephony.Line) bool
	// Ended is called (and must not block) when any call has ended.
	Ended(c call.Call)
}

var (
	_ telephony.CallControl        = (*Service)(nil)
	_ lifecycle.Reporter[Listener] = (*Service)(nil)
)

// Drain makes this node refuse new phone calls, outbound (Unavailable:
// a dial job is retried, by any node) and inbound (Admit answers
// telephony.ErrUnavailable); calls under way go on.
func (s *Service) Drain() { s.draining.Store(true) }

// errDraining is the refusal of a new call on a draining node.
func errDraining() error {
	return apperr.New(apperr.Unavailable, "this node is shutting down (draining) and takes no new calls; retry: another node will")
}

// hangup is a hang-up End asked a provider for: how the call is to end.
// It is kept until the provider's Ended event, which carries no reason of
// its own when it answers a hang-up; if End could not record the end (the
// database failed), that event records it as End asked. It is dropped when
// the event comes, when the provider's Hangup fails (no event is promised)
// and, for a provider that never answers, by the first hang-up asked more
// than hangupTTL after it: askHangup sweeps the map each time, and nothing
// else does. The map so holds the hang-ups asked within hangupTTL of the
// latest one and still unanswered: its size is bounded by how many
// hang-ups are asked in hangupTTL, not by time (while none is asked, an
// old entry stays, and costs nothing).
type hangup struct {
	outcome call.Outcome
	reason  string
	result  call.Result
	asked   time.Time
}

// hangupTTL is how much older than a new hang-up a waiting one must be
// for askHangup to drop it; providers answer in seconds, so an older one
// lost its call.
const hangupTTL = 2 * time.Minute

// hangupTimeout bounds a provider's Hangup, which runs even when End's
// context is done: the far end must not stay on the line.
const hangupTimeout = 10 * time.Second

// New returns a Service; it reports to its Listener once started.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: cfg.Store, providers: map[string]telephony.Network{}, log: cfg.Log, now: id.Now, hangups: map[string]hangup{},
		secrets: cfg.Secrets, publicURL: cfg.PublicURL, node: cfg.Node, router: cfg.Router}
	for _, p := range cfg.Providers {
		s.providers[p.Name()] = p
	}
	s.early.Save = s.saveEarly
	return s
}

// Start makes l hear of the answered lines and ended calls from now on.
// It runs before the providers start, so that their first event finds it.
func (s *Service) Start(_ context.Context, l Listener) error {
	if l == nil {
		return errors.New("callctl: a listener is required")
	}
	s.listener = l
	return nil
}

// Stop does nothing: call control has no work of its own. Calls end with
// the runtime and the providers.
func (s *Service) Stop(context.Context) error { return nil }

// Provider returns the named provider.
func (s *Service) Provider(name string) (telephony.Network, bool) {
	p, ok := s.providers[name]
	return p, ok
}

// ProviderNames lists the configured providers.
func (s *Service) ProviderNames() []string {
	out := make([]string, 0, len(s.providers))
	for n := range s.providers {
		out = append(out, n)
	}
	return out
}

// CreateWebCall stores a queued web call for one of the organization's
// assistants, started with a secret key.
func (s *Service) CreateWebCall(ctx context.Context, orgID, assistantID string) (call.Call, error) {
	return s.StartWebCall(ctx, WebCall{OrgID: orgID, AssistantID: assistantID})
}

// WebCall asks for one web call.
type WebCall struct {
	OrgID       string
	AssistantID string
	// PublicKeyID is the publishable key that asked, if one did: the
	// call remembers it, and the gateway admits only its origins.
	PublicKeyID string
	// Variables are the request's own (vars.Request checked them).
	Variables vars.Values
}

// StartWebCall stores a queued web call; an unknown assistant is an
// Invalid on assistantId.
func (s *Service) StartWebCall(ctx context.Context, req WebCall) (call.Call, error) {
	if _, err := s.store.GetAssistant(ctx, req.OrgID, req.AssistantID); err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return call.Call{}, apperr.Invalidf("assistantId", "assistant %s not found", req.AssistantID)
		}
		return call.Call{}, err
	}
	now := s.now().UTC()
	c := call.Call{ID: id.New(id.Call), OrgID: req.OrgID, Type: call.Web, Status: call.Queued, AssistantID: req.AssistantID,
		PublicKeyID: req.PublicKeyID, CreatedAt: now, UpdatedAt: now}
	c.Variables = variables(c, nil, "", "", req.Variables)
	return c, s.store.CreateCall(ctx, c)
}

// PhoneCall asks for one outbound call from a purchased number.
type PhoneCall struct {
	OrgID      string
	PurchaseID string
	To         string // E.164
	Provider   string // must match the purchase's provider when set
	AttemptID  string // set by the scheduler
	// Variables are the request's own (vars.Request checked them).
	Variables vars.Values
	// Contact, Message and Timezone are a scheduled call's contact and its
	// schedule's message and zone (the dialer sets them). A direct call's
	// contact is the number's contact with the dialled number, if any,
	// and its message the number's allocation message.
	Contact  *phone.Contact
	Message  string
	Timezone string
}

// PlacePhoneCall stores the call and hands it to the provider. A provider
// that refuses the call ends it as failed; the call is returned either way.
func (s *Service) PlacePhoneCall(ctx context.Context, req PhoneCall) (call.Call, error) {
	r := s.PlacePhoneCalls(ctx, []PhoneCall{req})[0]
	return r.Call, r.Err
}

// Placed is the outcome of one call of PlacePhoneCalls: Err is what
// PlacePhoneCall would have returned.
type Placed struct {
	Call call.Call
	Err  error
}

// origin is what placing calls from one number needs, read once a batch.
type origin struct {
	p        phone.Purchase
	prov     telephony.Network
	detect   string // PlaceRequest.DetectMachine
	trunk    telephony.Trunk
	trunkErr error
	err      error
}

// PlacePhoneCalls places calls (a dialer's batch) as PlacePhoneCall places
// one: each number, its assistant and its connection are read once, the
// calls are stored in one transaction (store.CreateCalls), and the stored
// ones are handed to their providers at once, each in its own goroutine;
// it returns when every provider has answered. Results are in the order
// of reqs.
func (s *Service) PlacePhoneCalls(ctx context.Context, reqs []PhoneCall) []Placed {
	out := make([]Placed, len(reqs))
	origins := map[string]*origin{}
	var ncs []store.NewCall
	type from struct {
		i int // in reqs
		o *origin
	}
	var froms []from // of each of ncs
	now := s.now().UTC()
	for i, req := range reqs {
		key := req.OrgID + "/" + req.PurchaseID + "/" + req.Provider
		o, ok := origins[key]
		if !ok {
			o = s.origin(ctx, req)
			origins[key] = o
		}
		if o.err != nil {
			out[i].Err = o.err
			continue
		}
		c := call.Call{
			ID: id.New(id.Call), OrgID: req.OrgID, Type: call.Phone, Status: call.Queued,
			AssistantID: o.p.OutboundAssistantID, PurchaseID: o.p.ID, From: o.p.Number, To: req.To, Provider: o.p.Provider,
			Direction: call.Outbound, AttemptID: req.AttemptID, CreatedAt: now, UpdatedAt: now, NodeID: s.node,
		}
		ct, message := req.Contact, req.Message
		if ct == nil && req.AttemptID == "" {
			ct = s.contactByNumber(ctx, req.OrgID, o.p.ID, req.To)
		}
		if message == "" {
			message = o.p.Message
		}
		c.Variables = variables(c, ct, message, req.Timezone, req.Variables)
		ncs = append(ncs, store.NewCall{Call: c, Suppressed: s.suppressedEvents(c)})
		froms = append(froms, from{i, o})
	}
	if len(ncs) == 0 {
		return out
	}
	errs, err := s.store.CreateCalls(ctx, ncs)
	var placing sync.WaitGroup
	for j, nc := range ncs {
		i, o := froms[j].i, froms[j].o
		if err != nil {
			out[i].Err = err
			continue
		}
		if errs[j] != nil {
			out[i].Err = errs[j] // phone.Suppressed when the number is on the do-not-call list
			continue
		}
		out[i].Call = nc.Call
		placing.Go(func() { out[i].Call, out[i].Err = s.place(ctx, o, nc.Call) })
	}
	placing.Wait()
	return out
}

// origin reads what placing req's call needs from its number.
func (s *Service) origin(ctx context.Context, req PhoneCall) *origin {
	p, err := s.store.GetPurchase(ctx, req.OrgID, req.PurchaseID)
	if err != nil {
		return &origin{err: err}
	}
	if err := CanPlace(p, req.Provider); err != nil {
		return &origin{err: err}
	}
	prov, ok := s.providers[p.Provider]
	if !ok {
		return &origin{err: apperr.New(apperr.Unavailable, "provider %q of this number is not configured on this server", p.Provider)}
	}
	if s.draining.Load() {
		return &origin{err: errDraining()}
	}
	o := &origin{p: p, prov: prov}
	if a, err := s.store.GetAssistant(ctx, p.OrgID, p.OutboundAssistantID); err == nil && a.Voicemail.Detect {
		// Providers that detect machines themselves (Twilio's AMD) are
		// asked to; the others' calls are watched by the call runtime.
		o.detect = a.Voicemail.Action
		if o.detect == "" {
			o.detect = assistant.VoicemailHangup
		}
	}
	if p.ConnectionID != "" {
		conn, err := s.store.GetConnection(ctx, p.OrgID, p.ConnectionID)
		if err == nil {
			o.trunk, err = TrunkOf(conn, s.secrets)
		}
		o.trunkErr = err
	}
	return o
}

// place hands a stored call to its provider; a refusal ends it failed.
func (s *Service) place(ctx context.Context, o *origin, c call.Call) (call.Call, error) {
	if o.trunkErr != nil {
		s.log.Warn("the number's connection cannot be dialed through", "call_id", c.ID, "connection_id", o.p.ConnectionID, "err", o.trunkErr)
		ended, terr := s.transition(context.WithoutCancel(ctx), c.ID, call.Change{To: call.Ended, At: s.now(), Outcome: call.Failed, Reason: call.ReasonProviderFailed})
		if terr != nil {
			return c, terr
		}
		return ended, nil
	}
	preq := telephony.PlaceRequest{CallID: c.ID, From: c.From, To: c.To, DetectMachine: o.detect, Trunk: o.trunk}
	if err := o.prov.Place(ctx, preq); err != nil {
		s.log.Warn("provider refused call", "call_id", c.ID, "provider", o.p.Provider, "err", err)
		outcome, reason := call.Failed, call.ReasonProviderFailed
		var te *telephony.Error
		if errors.As(err, &te) && call.ValidOutcome(call.Outcome(te.Outcome)) && te.Reason != "" {
			// The provider classified its failure (the SIP status table).
			outcome, reason = call.Outcome(te.Outcome), te.Reason
		}
		ended, terr := s.transition(context.WithoutCancel(ctx), c.ID, call.Change{To: call.Ended, At: s.now(), Outcome: outcome, Reason: reason})
		if terr != nil {
			return c, terr
		}
		return ended, nil
	}
	return c, nil
}

// suppressedEvents are the events queued when a scheduled call's number
// turns out to be on the do-not-call list (store.Calls.CreateCall).
func (s *Service) suppressedEvents(c call.Call) []event.Event {
	if c.AttemptID == "" {
		return nil
	}
	return []event.Event{event.NewAttemptSuppressed(c)}
}

// CanPlace reports whether calls may be placed from p with the named provider.
func CanPlace(p phone.Purchase, provider string) error {
	if provider != "" && provider != p.Provider {
		return apperr.Invalidf("provider", "number %s is served by provider %q, not %q", p.Number, p.Provider, provider)
	}
	if p.OutboundAssistantID == "" {
		return apperr.Invalidf("phone_purchase_id", "number %s has no outbound assistant allocated; allocate one with POST /v1/phone/allocate-assistant", p.Number)
	}
	return nil
}

// HandleEvent is the telephony.EventSink of every provider.
func (s *Service) HandleEvent(ev telephony.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := call.Change{At: ev.At, ProviderCallID: ev.ProviderCallID}
	var result []call.Result
	switch ev.Kind {
	case telephony.Ringing:
		ch.To = call.Ringing
	case telephony.Answered:
		ch.To = call.InProgress
		if ev.Line != nil {
			ch.NodeID = s.node // the line is here (a Twilio stream may reach any node)
		}
	case telephony.Ended:
		ch.To, ch.Outcome, ch.Reason = call.Ended, call.Outcome(ev.Outcome), ev.Reason
		if h, ok := s.takeHangup(ev.CallID); ok && ch.Reason == "" {
			// The provider's answer to End's hang-up: when End could not
			// record the end, this records it as End asked.
			ch.Outcome, ch.Reason = h.outcome, h.reason
			result = append(result, h.result)
		}
		if ch.Reason == "" {
			ch.Reason = call.ReasonAssistantEnded
		}
	default:
		return
	}
	var (
		c       call.Call
		applied bool
		err     error
	)
	if ch.To == call.Ended {
		c, applied, err = s.apply(ctx, ev.CallID, ch, result...)
	} else {
		// Early events come in bursts (a batch of dials rings at once):
		// they are saved in groups.
		c, applied, err = s.applyGrouped(ev.CallID, ch)
	}
	if err != nil {
		s.log.Error("provider event not applied", "call_id", ev.CallID, "event", ev.Kind.String(), "err", err)
	}
	if ev.Line == nil {
		return
	}
	// The provider handed the call's line over: the runtime takes it, or
	// nobody owns the call's end and it ends here.
	if applied && s.listener != nil && s.listener.Answered(c, ev.Line) {
		return
	}
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), hangupTimeout)
	defer hcancel()
	if err := ev.Line.Hangup(hctx); err != nil {
		s.log.Warn("hanging up a line nobody runs failed", "call_id", ev.CallID, "err", err)
	}
	if applied {
		// Answered while the runtime stops (shutdown).
		if _, err := s.transition(ctx, ev.CallID, call.Change{To: call.Ended, At: s.now(), Outcome: call.Completed, Reason: call.ReasonSystemShutdown}); err != nil {
			s.log.Error("ending an answered call nobody runs failed", "call_id", ev.CallID, "err", err)
		}
	}
}

// transition applies ch to the stored call, retrying when the call changed
// concurrently, and queues the webhook events the change announces in the
// same transaction. A transition the lifecycle forbids is logged and
// skipped (providers may report late or twice). result, when given, is
// saved with the call (the conversation's outcome for analysis).
func (s *Service) transition(ctx context.Context, callID string, ch call.Change, result ...call.Result) (call.Call, error) {
	c, _, err := s.apply(ctx, callID, ch, result...)
	return c, err
}

// apply is transition, also reporting whether the change was applied.
func (s *Service) apply(ctx context.Context, callID string, ch call.Change, result ...call.Result) (call.Call, bool, error) {
	for range 5 {
		c, err := s.store.GetCallAnyOrg(ctx, callID)
		if err != nil {
			return c, false, err
		}
		prev := c.Status
		if err := c.Transition(ch); err != nil {
			var te *call.ErrTransition
			if errors.As(err, &te) {
				s.log.Debug("transition skipped", "call_id", callID, "from", te.From.Text(), "to", te.To.Text())
				return c, false, nil
			}
			return c, false, err
		}
		if len(result) > 0 {
			c.Result = result[0]
		}
		err = s.save(ctx, c, prev)
		if err == nil {
			s.after(c)
			return c, true, nil
		}
		if !apperr.Is(err, apperr.Conflict) {
			return c, false, err
		}
	}
	return call.Call{}, false, apperr.New(apperr.Conflict, "call %s keeps changing", callID)
}

// after tells the listener what an applied transition means.
func (s *Service) after(c call.Call) {
	if c.Status == call.Ended && s.listener != nil {
		s.listener.Ended(c)
	}
}

// events are the webhook events a call's new state announces.
func (s *Service) events(c call.Call) []event.Event { return event.ForCall(c, s.publicURL) }

// Connect moves a web call whose client joined to in-progress, owned by
// this node (its gateway holds the websocket). It is a
// Conflict when the call is no longer queued (another client, possibly on
// another node, joined first; or the call ended).
func (s *Service) Connect(ctx context.Context, callID string) (call.Call, error) {
	c, applied, err := s.apply(ctx, callID, call.Change{To: call.InProgress, At: s.now(), NodeID: s.node})
	if err == nil && !applied {
		return c, apperr.Conflictf("call %s is %s, not waiting for a client", callID, c.Status.Text())
	}
	return c, err
}

// End ends a call with its conversation's result; a phone call is also
// hung up at its provider. When the end cannot be recorded (the database
// failed) a phone call is hung up all the same, and the provider's Ended
// event records it as asked (see hangup); End returns the error.
func (s *Service) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	c, _, err := s.EndOnce(ctx, callID, outcome, reason, result)
	return c, err
}

// EndOnce is End that also says whether this end is the one the record
// holds: recorded is false when the call had ended already, another way
// (c is then the record as that end left it). The call runtime uses it
// to tell which of several ends of a call ended it (POST
// /v1/calls/{id}/end answers 200 once).
func (s *Service) EndOnce(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (c call.Call, recorded bool, err error) {
	c, applied, err := s.apply(ctx, callID, call.Change{To: call.Ended, At: s.now(), Outcome: outcome, Reason: reason}, result)
	if err == nil && !applied {
		return c, false, nil // it had ended already
	}
	s.hangUpProvider(ctx, c, hangup{outcome: outcome, reason: reason, result: result, asked: s.now()})
	return c, err == nil, err
}

// askHangup records a hang-up before the provider is asked, so that its
// Ended event finds it, and drops those asked more than hangupTTL before
// it (the only sweep of the map).
func (s *Service) askHangup(callID string, h hangup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, old := range s.hangups {
		if h.asked.Sub(old.asked) > hangupTTL {
			delete(s.hangups, id)
		}
	}
	s.hangups[callID] = h
}

// takeHangup removes and returns the hang-up asked for callID, if any.
func (s *Service) takeHangup(callID string) (hangup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hangups[callID]
	delete(s.hangups, callID)
	return h, ok
}

// EndUnjoined ends web calls that no client joined within timeout:
// outcome failed, endedReason client-never-connected.
func (s *Service) EndUnjoined(ctx context.Context, timeout time.Duration) (int, error) {
	stale, err := s.store.StaleCalls(ctx, s.now().Add(-timeout), 5000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range stale {
		if c.Type != call.Web || c.Status != call.Queued {
			continue
		}
		if _, applied, err := s.apply(ctx, c.ID, call.Change{To: call.Ended, At: s.now(), Outcome: call.Failed, Reason: call.ReasonClientNeverConnected}); err != nil {
			return n, err
		} else if applied {
			n++
		}
	}
	return n, nil
}

// EndLost ends calls whose owner died (a crash, a lost provider) so that no
// call stays live forever: a queued or ringing call that nothing has moved
// for longer than grace, and a conversation that has outlived its
// assistant's maxDurationSeconds by more than grace. Ringing or queued calls
// end failed, conversations completed; the reason says the call was lost.
func (s *Service) EndLost(ctx context.Context, grace time.Duration) (int, error) {
	now := s.now()
	stale, err := s.store.StaleCalls(ctx, now.Add(-grace), 5000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range stale {
		outcome := call.Failed
		if c.Status == call.InProgress {
			outcome = call.Completed
			limit := time.Duration(assistant.MaxMaxDuration) * time.Second
			if a, err := s.store.GetAssistant(ctx, c.OrgID, c.AssistantID); err == nil {
				limit = time.Duration(a.MaxDurationSeconds) * time.Second
			}
			if now.Before(c.StartedAt.Add(limit + grace)) {
				continue // may still be talking
			}
		}
		if _, err := s.transition(ctx, c.ID, call.Change{To: call.Ended, At: now, Outcome: outcome, Reason: call.ReasonSystemCallLost}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// EndOrphaned ends the live calls whose node has died (its lease lapsed
// before now: nothing will end them, and their line is gone with it):
// endedReason node-lost, outcome completed for a conversation, failed for
// a call not answered yet, as EndLost decides. The leader runs it every
// sweep; it returns how many it ended.
func (s *Service) EndOrphaned(ctx context.Context, now time.Time) (int, error) {
	orphans, err := s.store.OrphanedCalls(ctx, now, 1000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range orphans {
		outcome := call.Failed
		if c.Status == call.InProgress {
			outcome = call.Completed
		}
		if _, applied, err := s.apply(ctx, c.ID, call.Change{To: call.Ended, At: s.now(), Outcome: outcome, Reason: call.ReasonNodeLost}); err != nil {
			return n, err
		} else if applied {
			n++
		}
	}
	return n, nil
}
