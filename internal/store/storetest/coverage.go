package storetest

import (
	"context"
	"flag"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/operator"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// optional lists the interfaces beyond store.Store that the service uses
// when a store implements them; the suite must exercise their methods too
// on a store that does.
var optional = []reflect.Type{
	reflect.TypeFor[store.Counter](),
}

// coverage records which store methods the suite called, so that a method
// no test exercises (a new one, or one forgotten) fails the suite by name.
type coverage struct {
	mu       sync.Mutex
	called   map[string]bool
	required map[string]bool
}

func newCoverage() *coverage {
	c := &coverage{called: map[string]bool{}, required: map[string]bool{}}
	for _, name := range methodNames(reflect.TypeFor[store.Store]()) {
		c.required[name] = true
	}
	return c
}

// methodNames lists the exported methods of an interface type.
func methodNames(it reflect.Type) []string {
	var out []string
	for m := range it.Methods() {
		out = append(out, m.Name)
	}
	return out
}

func (c *coverage) hit(name string) {
	c.mu.Lock()
	c.called[name] = true
	c.mu.Unlock()
}

// wrap returns s behind a recorder; the optional interfaces s implements
// become required.
func (c *coverage) wrap(s store.Store) store.Store {
	c.mu.Lock()
	for _, it := range optional {
		if reflect.TypeOf(s).Implements(it) {
			for _, name := range methodNames(it) {
				c.required[name] = true
			}
		}
	}
	c.mu.Unlock()
	return &recorder{s: s, hit: c.hit}
}

// missing lists the required methods not called, sorted.
func (c *coverage) missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.required {
		if !c.called[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// recordCoverage wraps open so that every store the suite opens records
// the methods called on it, and checks when the whole suite is done that
// every method of store.Store (and of the optional interfaces the store
// implements) was called at least once. The check is skipped when -run or
// -skip select only part of the suite, or when the suite already failed
// (a test stopped early leaves methods uncalled for no fault of coverage).
func recordCoverage(t *testing.T, open Opener) Opener {
	t.Helper()
	c := newCoverage()
	t.Cleanup(func() {
		if partial := partialRun(); partial != "" {
			t.Logf("store method coverage not checked: %s selects part of the suite", partial)
			return
		}
		if t.Failed() {
			t.Log("store method coverage not checked: the suite failed")
			return
		}
		if m := c.missing(); len(m) > 0 {
			t.Errorf("the conformance suite never calls %d store method(s): %s; add tests that exercise them (internal/store/storetest)",
				len(m), strings.Join(m, ", "))
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Logf("the conformance suite called every one of the %d store methods", len(c.required))
	})
	return func(t *testing.T) store.Store { return c.wrap(open(t)) }
}

// partialRun names the flag that selects only some of the suite's
// subtests, or is empty when the suite runs whole.
func partialRun() string {
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
		return "-run " + f.Value.String()
	}
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		return "-skip " + f.Value.String()
	}
	return ""
}

// counter returns s as a store.Counter, seeing through the recorder; ok is
// false when the store does not implement it.
func counter(s store.Store) (store.Counter, bool) {
	if r, ok := s.(*recorder); ok {
		if _, ok := r.s.(store.Counter); !ok {
			return nil, false
		}
	}
	c, ok := s.(store.Counter)
	return c, ok
}

// recorder is a store.Store that notes each method called, then calls the
// store it wraps. It is written by hand (Go cannot make an interface's
// implementation at run time); TestRecorder checks with reflection that
// each method of store.Store and of the optional interfaces is here and
// records its own name.
type recorder struct {
	s   store.Store
	hit func(name string)
}

func (r *recorder) Ping(ctx context.Context) error { r.hit("Ping"); return r.s.Ping(ctx) }
func (r *recorder) Close() error                   { r.hit("Close"); return r.s.Close() }

func (r *recorder) Bootstrap(ctx context.Context, org auth.Org, key auth.Key) (bool, error) {
	r.hit("Bootstrap")
	return r.s.Bootstrap(ctx, org, key)
}

func (r *recorder) CreateOrg(ctx context.Context, org auth.Org) error {
	r.hit("CreateOrg")
	return r.s.CreateOrg(ctx, org)
}

func (r *recorder) GetOrg(ctx context.Context, id string) (auth.Org, error) {
	r.hit("GetOrg")
	return r.s.GetOrg(ctx, id)
}

func (r *recorder) CreateKey(ctx context.Context, key auth.Key) error {
	r.hit("CreateKey")
	return r.s.CreateKey(ctx, key)
}

func (r *recorder) GetKey(ctx context.Context, id string) (auth.Key, error) {
	r.hit("GetKey")
	return r.s.GetKey(ctx, id)
}

func (r *recorder) ListKeys(ctx context.Context, orgID string) ([]auth.Key, error) {
	r.hit("ListKeys")
	return r.s.ListKeys(ctx, orgID)
}

func (r *recorder) RevokeKey(ctx context.Context, id string, at time.Time) error {
	r.hit("RevokeKey")
	return r.s.RevokeKey(ctx, id, at)
}

func (r *recorder) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	r.hit("TouchKeys")
	return r.s.TouchKeys(ctx, used)
}

func (r *recorder) CreatePublicKey(ctx context.Context, k auth.PublicKey) error {
	r.hit("CreatePublicKey")
	return r.s.CreatePublicKey(ctx, k)
}

func (r *recorder) GetPublicKey(ctx context.Context, id string) (auth.PublicKey, error) {
	r.hit("GetPublicKey")
	return r.s.GetPublicKey(ctx, id)
}

func (r *recorder) ListPublicKeys(ctx context.Context, orgID string, p store.Page) ([]auth.PublicKey, int, error) {
	r.hit("ListPublicKeys")
	return r.s.ListPublicKeys(ctx, orgID, p)
}

func (r *recorder) RevokePublicKey(ctx context.Context, orgID, id string, at time.Time) (auth.PublicKey, error) {
	r.hit("RevokePublicKey")
	return r.s.RevokePublicKey(ctx, orgID, id, at)
}

func (r *recorder) PublicOriginAllowed(ctx context.Context, origin string) (bool, error) {
	r.hit("PublicOriginAllowed")
	return r.s.PublicOriginAllowed(ctx, origin)
}

func (r *recorder) CreateAssistant(ctx context.Context, a assistant.Assistant) error {
	r.hit("CreateAssistant")
	return r.s.CreateAssistant(ctx, a)
}

func (r *recorder) GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error) {
	r.hit("GetAssistant")
	return r.s.GetAssistant(ctx, orgID, id)
}

func (r *recorder) ListAssistants(ctx context.Context, orgID string, p store.Page) ([]assistant.Assistant, int, error) {
	r.hit("ListAssistants")
	return r.s.ListAssistants(ctx, orgID, p)
}

func (r *recorder) UpdateAssistant(ctx context.Context, a assistant.Assistant) error {
	r.hit("UpdateAssistant")
	return r.s.UpdateAssistant(ctx, a)
}

func (r *recorder) DeleteAssistant(ctx context.Context, orgID, id string) error {
	r.hit("DeleteAssistant")
	return r.s.DeleteAssistant(ctx, orgID, id)
}

func (r *recorder) CreatePurchase(ctx context.Context, p phone.Purchase) error {
	r.hit("CreatePurchase")
	return r.s.CreatePurchase(ctx, p)
}

func (r *recorder) GetPurchase(ctx context.Context, orgID, id string) (phone.Purchase, error) {
	r.hit("GetPurchase")
	return r.s.GetPurchase(ctx, orgID, id)
}

func (r *recorder) ListPurchases(ctx context.Context, orgID string) ([]phone.Purchase, error) {
	r.hit("ListPurchases")
	return r.s.ListPurchases(ctx, orgID)
}

func (r *recorder) HeldNumbers(ctx context.Context, provider string) (map[string]bool, error) {
	r.hit("HeldNumbers")
	return r.s.HeldNumbers(ctx, provider)
}

func (r *recorder) AllocateAssistants(ctx context.Context, orgID, purchaseID, inboundID, outboundID, message string, at time.Time) (phone.Purchase, error) {
	r.hit("AllocateAssistants")
	return r.s.AllocateAssistants(ctx, orgID, purchaseID, inboundID, outboundID, message, at)
}

func (r *recorder) ReleasePurchase(ctx context.Context, orgID, id string, at time.Time) error {
	r.hit("ReleasePurchase")
	return r.s.ReleasePurchase(ctx, orgID, id, at)
}

func (r *recorder) CreateConnection(ctx context.Context, c phone.Connection) error {
	r.hit("CreateConnection")
	return r.s.CreateConnection(ctx, c)
}

func (r *recorder) GetConnection(ctx context.Context, orgID, id string) (phone.Connection, error) {
	r.hit("GetConnection")
	return r.s.GetConnection(ctx, orgID, id)
}

func (r *recorder) ListCallMessages(ctx context.Context, orgID, callID string, limit int) ([]store.CallMessage, error) {
	r.hit("ListCallMessages")
	return r.s.ListCallMessages(ctx, orgID, callID, limit)
}

func (r *recorder) GetConnectionAnyOrg(ctx context.Context, id string) (phone.Connection, error) {
	r.hit("GetConnectionAnyOrg")
	return r.s.GetConnectionAnyOrg(ctx, id)
}

func (r *recorder) ListConnections(ctx context.Context, orgID string, p store.Page) ([]phone.Connection, int, error) {
	r.hit("ListConnections")
	return r.s.ListConnections(ctx, orgID, p)
}

func (r *recorder) DeleteConnection(ctx context.Context, orgID, id string) error {
	r.hit("DeleteConnection")
	return r.s.DeleteConnection(ctx, orgID, id)
}

func (r *recorder) ConnectionNumbers(ctx context.Context, orgID, provider string) ([]phone.ConnectionNumber, error) {
	r.hit("ConnectionNumbers")
	return r.s.ConnectionNumbers(ctx, orgID, provider)
}

func (r *recorder) FindInboundNumber(ctx context.Context, provider, number string) (phone.Purchase, phone.Connection, error) {
	r.hit("FindInboundNumber")
	return r.s.FindInboundNumber(ctx, provider, number)
}

func (r *recorder) AddContacts(ctx context.Context, orgID, purchaseID string, cs []phone.Contact) ([]phone.Contact, []int, error) {
	r.hit("AddContacts")
	return r.s.AddContacts(ctx, orgID, purchaseID, cs)
}

func (r *recorder) ListContacts(ctx context.Context, orgID, purchaseID string, p store.Page) ([]phone.Contact, int, error) {
	r.hit("ListContacts")
	return r.s.ListContacts(ctx, orgID, purchaseID, p)
}

func (r *recorder) DeleteContact(ctx context.Context, orgID, purchaseID, contactID string) error {
	r.hit("DeleteContact")
	return r.s.DeleteContact(ctx, orgID, purchaseID, contactID)
}

func (r *recorder) MissingContacts(ctx context.Context, orgID, purchaseID string, ids []string) ([]string, error) {
	r.hit("MissingContacts")
	return r.s.MissingContacts(ctx, orgID, purchaseID, ids)
}

func (r *recorder) GetContact(ctx context.Context, orgID, id string) (phone.Contact, error) {
	r.hit("GetContact")
	return r.s.GetContact(ctx, orgID, id)
}

func (r *recorder) CreateCall(ctx context.Context, c call.Call, suppressed ...store.Event) error {
	r.hit("CreateCall")
	return r.s.CreateCall(ctx, c, suppressed...)
}

func (r *recorder) AddDNC(ctx context.Context, orgID string, entries []phone.DNCEntry) (store.DNCAdded, error) {
	r.hit("AddDNC")
	return r.s.AddDNC(ctx, orgID, entries)
}

func (r *recorder) ListDNC(ctx context.Context, orgID, search string, p store.Page) ([]phone.DNCEntry, int, error) {
	r.hit("ListDNC")
	return r.s.ListDNC(ctx, orgID, search, p)
}

func (r *recorder) DeleteDNC(ctx context.Context, orgID, number string) error {
	r.hit("DeleteDNC")
	return r.s.DeleteDNC(ctx, orgID, number)
}

func (r *recorder) GetCall(ctx context.Context, orgID, id string) (call.Call, error) {
	r.hit("GetCall")
	return r.s.GetCall(ctx, orgID, id)
}

func (r *recorder) GetCallAnyOrg(ctx context.Context, id string) (call.Call, error) {
	r.hit("GetCallAnyOrg")
	return r.s.GetCallAnyOrg(ctx, id)
}

func (r *recorder) GetCallsAnyOrg(ctx context.Context, ids []string) ([]call.Call, error) {
	r.hit("GetCallsAnyOrg")
	return r.s.GetCallsAnyOrg(ctx, ids)
}

func (r *recorder) UpdateCalls(ctx context.Context, us []store.CallUpdate) ([]error, error) {
	r.hit("UpdateCalls")
	return r.s.UpdateCalls(ctx, us)
}

func (r *recorder) ListCalls(ctx context.Context, orgID string, f store.CallFilter) ([]call.Call, int, error) {
	r.hit("ListCalls")
	return r.s.ListCalls(ctx, orgID, f)
}

func (r *recorder) SetCallRecording(ctx context.Context, orgID, callID, path string) error {
	r.hit("SetCallRecording")
	return r.s.SetCallRecording(ctx, orgID, callID, path)
}

func (r *recorder) UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...store.Event) error {
	r.hit("UpdateCall")
	return r.s.UpdateCall(ctx, c, prev, events...)
}

func (r *recorder) StaleCalls(ctx context.Context, updatedBefore time.Time, limit int) ([]call.Call, error) {
	r.hit("StaleCalls")
	return r.s.StaleCalls(ctx, updatedBefore, limit)
}

func (r *recorder) CreateSchedule(ctx context.Context, s schedule.Schedule, attempts []schedule.Attempt) error {
	r.hit("CreateSchedule")
	return r.s.CreateSchedule(ctx, s, attempts)
}

func (r *recorder) GetSchedule(ctx context.Context, orgID, id string) (schedule.Schedule, []schedule.Attempt, error) {
	r.hit("GetSchedule")
	return r.s.GetSchedule(ctx, orgID, id)
}

func (r *recorder) ListSchedules(ctx context.Context, orgID string, p store.Page) ([]store.ScheduleSummary, int, error) {
	r.hit("ListSchedules")
	return r.s.ListSchedules(ctx, orgID, p)
}

func (r *recorder) CancelSchedule(ctx context.Context, orgID, id string, at time.Time) (store.ScheduleChange, error) {
	r.hit("CancelSchedule")
	return r.s.CancelSchedule(ctx, orgID, id, at)
}

func (r *recorder) GetAttempt(ctx context.Context, id string) (schedule.Attempt, schedule.Schedule, error) {
	r.hit("GetAttempt")
	return r.s.GetAttempt(ctx, id)
}

func (r *recorder) FailAttempt(ctx context.Context, id, reason string, at time.Time) error {
	r.hit("FailAttempt")
	return r.s.FailAttempt(ctx, id, reason, at)
}

func (r *recorder) LeaseAttempts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]schedule.Attempt, error) {
	r.hit("LeaseAttempts")
	return r.s.LeaseAttempts(ctx, now, lease, limit)
}

func (r *recorder) ClaimDials(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]store.Dial, error) {
	r.hit("ClaimDials")
	return r.s.ClaimDials(ctx, now, hold, limit)
}

func (r *recorder) LeasedAttempts(ctx context.Context, now time.Time) (int, error) {
	r.hit("LeasedAttempts")
	return r.s.LeasedAttempts(ctx, now)
}

// Campaign settings (issue 12).

func (r *recorder) ContactZones(ctx context.Context, orgID, purchaseID string, ids []string) (map[string]string, error) {
	r.hit("ContactZones")
	return r.s.ContactZones(ctx, orgID, purchaseID, ids)
}

func (r *recorder) LeaseAttemptsUnder(ctx context.Context, now time.Time, lease time.Duration, limit int, caps schedule.Caps) ([]schedule.Attempt, error) {
	r.hit("LeaseAttemptsUnder")
	return r.s.LeaseAttemptsUnder(ctx, now, lease, limit, caps)
}

func (r *recorder) EndAttemptCall(ctx context.Context, c call.Call, prev call.Status, end store.AttemptEnd, events ...store.Event) error {
	r.hit("EndAttemptCall")
	return r.s.EndAttemptCall(ctx, c, prev, end, events...)
}

func (r *recorder) CreateCalls(ctx context.Context, calls []store.NewCall) ([]error, error) {
	r.hit("CreateCalls")
	return r.s.CreateCalls(ctx, calls)
}

func (r *recorder) DoneSchedules(ctx context.Context, limit int) ([]store.ScheduleSummary, error) {
	r.hit("DoneSchedules")
	return r.s.DoneSchedules(ctx, limit)
}

func (r *recorder) CompleteSchedule(ctx context.Context, orgID, id string, at time.Time, ev store.Event) (bool, error) {
	r.hit("CompleteSchedule")
	return r.s.CompleteSchedule(ctx, orgID, id, at, ev)
}

func (r *recorder) SetSchedulePaused(ctx context.Context, orgID, id string, paused bool, at time.Time, ev store.Event) (store.ScheduleChange, error) {
	r.hit("SetSchedulePaused")
	return r.s.SetSchedulePaused(ctx, orgID, id, paused, at, ev)
}

func (r *recorder) GetOrgCaps(ctx context.Context, orgID string) (schedule.Caps, error) {
	r.hit("GetOrgCaps")
	return r.s.GetOrgCaps(ctx, orgID)
}

func (r *recorder) SetOrgCaps(ctx context.Context, orgID string, caps schedule.Caps) error {
	r.hit("SetOrgCaps")
	return r.s.SetOrgCaps(ctx, orgID, caps)
}

func (r *recorder) AppendTurn(ctx context.Context, t call.Turn) error {
	r.hit("AppendTurn")
	return r.s.AppendTurn(ctx, t)
}

func (r *recorder) ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error) {
	r.hit("ListTurns")
	return r.s.ListTurns(ctx, orgID, callID)
}

func (r *recorder) GetAnalysis(ctx context.Context, orgID, callID string) (store.Analysis, error) {
	r.hit("GetAnalysis")
	return r.s.GetAnalysis(ctx, orgID, callID)
}

func (r *recorder) ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Analysis, error) {
	r.hit("ClaimAnalyses")
	return r.s.ClaimAnalyses(ctx, now, lease, limit)
}

func (r *recorder) FinishAnalysis(ctx context.Context, a store.Analysis, events ...store.Event) error {
	r.hit("FinishAnalysis")
	return r.s.FinishAnalysis(ctx, a, events...)
}

func (r *recorder) CreateWebhook(ctx context.Context, w store.Webhook) error {
	r.hit("CreateWebhook")
	return r.s.CreateWebhook(ctx, w)
}

func (r *recorder) ListWebhooks(ctx context.Context, orgID string) ([]store.Webhook, error) {
	r.hit("ListWebhooks")
	return r.s.ListWebhooks(ctx, orgID)
}

func (r *recorder) GetWebhook(ctx context.Context, orgID, id string) (store.Webhook, error) {
	r.hit("GetWebhook")
	return r.s.GetWebhook(ctx, orgID, id)
}

func (r *recorder) UpdateWebhookSecrets(ctx context.Context, orgID, id string, secrets []string) error {
	r.hit("UpdateWebhookSecrets")
	return r.s.UpdateWebhookSecrets(ctx, orgID, id, secrets)
}

func (r *recorder) DeleteWebhook(ctx context.Context, orgID, id string, at time.Time) error {
	r.hit("DeleteWebhook")
	return r.s.DeleteWebhook(ctx, orgID, id, at)
}

func (r *recorder) QueueEvent(ctx context.Context, orgID string, ev store.Event, at time.Time) error {
	r.hit("QueueEvent")
	return r.s.QueueEvent(ctx, orgID, ev, at)
}

func (r *recorder) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error) {
	r.hit("ClaimOutbox")
	return r.s.ClaimOutbox(ctx, now, lease, limit)
}

func (r *recorder) RecordDelivery(ctx context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error {
	r.hit("RecordDelivery")
	return r.s.RecordDelivery(ctx, m, d, state, next)
}

func (r *recorder) ListDeliveries(ctx context.Context, orgID, webhookID string, p store.Page) ([]store.Delivery, int, error) {
	r.hit("ListDeliveries")
	return r.s.ListDeliveries(ctx, orgID, webhookID, p)
}

func (r *recorder) Redeliver(ctx context.Context, orgID, webhookID, messageID string, at time.Time) error {
	r.hit("Redeliver")
	return r.s.Redeliver(ctx, orgID, webhookID, messageID, at)
}

func (r *recorder) ClaimListener(ctx context.Context, orgID, webhookID string, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error) {
	r.hit("ClaimListener")
	return r.s.ClaimListener(ctx, orgID, webhookID, now, lease, limit)
}

func (r *recorder) RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error {
	r.hit("RenewListener")
	return r.s.RenewListener(ctx, orgID, webhookID, until)
}

func (r *recorder) ExpireListeners(ctx context.Context, now time.Time) (int, error) {
	r.hit("ExpireListeners")
	return r.s.ExpireListeners(ctx, now)
}

func (r *recorder) ReserveIdempotency(ctx context.Context, orgID, key, requestHash string, now time.Time) (*store.Idempotent, error) {
	r.hit("ReserveIdempotency")
	return r.s.ReserveIdempotency(ctx, orgID, key, requestHash, now)
}

func (r *recorder) CompleteIdempotency(ctx context.Context, orgID, key string, status int, body []byte) error {
	r.hit("CompleteIdempotency")
	return r.s.CompleteIdempotency(ctx, orgID, key, status, body)
}

func (r *recorder) ReleaseIdempotency(ctx context.Context, orgID, key string) error {
	r.hit("ReleaseIdempotency")
	return r.s.ReleaseIdempotency(ctx, orgID, key)
}

func (r *recorder) PurgeIdempotency(ctx context.Context, before time.Time) error {
	r.hit("PurgeIdempotency")
	return r.s.PurgeIdempotency(ctx, before)
}

func (r *recorder) AddRateSpend(ctx context.Context, spent map[string]int64, at time.Time) error {
	r.hit("AddRateSpend")
	return r.s.AddRateSpend(ctx, spent, at)
}

func (r *recorder) RateSpend(ctx context.Context, since time.Time) (map[string]int64, error) {
	r.hit("RateSpend")
	return r.s.RateSpend(ctx, since)
}

func (r *recorder) PurgeRateSpend(ctx context.Context, before time.Time) error {
	r.hit("PurgeRateSpend")
	return r.s.PurgeRateSpend(ctx, before)
}

func (r *recorder) CreateOperator(ctx context.Context, op operator.Operator) error {
	r.hit("CreateOperator")
	return r.s.CreateOperator(ctx, op)
}

func (r *recorder) GetOperatorByEmail(ctx context.Context, email string) (operator.Operator, error) {
	r.hit("GetOperatorByEmail")
	return r.s.GetOperatorByEmail(ctx, email)
}

func (r *recorder) ListOperators(ctx context.Context, orgID string) ([]operator.Operator, error) {
	r.hit("ListOperators")
	return r.s.ListOperators(ctx, orgID)
}

func (r *recorder) DeleteOperator(ctx context.Context, id string) error {
	r.hit("DeleteOperator")
	return r.s.DeleteOperator(ctx, id)
}

func (r *recorder) CreateOperatorSession(ctx context.Context, s operator.Session) error {
	r.hit("CreateOperatorSession")
	return r.s.CreateOperatorSession(ctx, s)
}

func (r *recorder) GetOperatorSession(ctx context.Context, tokenHash string) (operator.Session, operator.Operator, error) {
	r.hit("GetOperatorSession")
	return r.s.GetOperatorSession(ctx, tokenHash)
}

func (r *recorder) TouchOperatorSession(ctx context.Context, tokenHash string, idleUntil time.Time) error {
	r.hit("TouchOperatorSession")
	return r.s.TouchOperatorSession(ctx, tokenHash, idleUntil)
}

func (r *recorder) DeleteOperatorSession(ctx context.Context, tokenHash string) error {
	r.hit("DeleteOperatorSession")
	return r.s.DeleteOperatorSession(ctx, tokenHash)
}

func (r *recorder) PurgeOperatorSessions(ctx context.Context, now time.Time) (int, error) {
	r.hit("PurgeOperatorSessions")
	return r.s.PurgeOperatorSessions(ctx, now)
}

// CallCounts implements store.Counter for a wrapped store that does; on
// one that does not, the suite does not call it (see counter).
func (r *recorder) CallCounts(ctx context.Context) (map[call.Status]int64, error) {
	r.hit("CallCounts")
	return r.s.(store.Counter).CallCounts(ctx)
}

func (r *recorder) RegisterNode(ctx context.Context, n store.Node) error {
	r.hit("RegisterNode")
	return r.s.RegisterNode(ctx, n)
}

func (r *recorder) RenewNode(ctx context.Context, id string, now, leaseUntil time.Time, draining bool) error {
	r.hit("RenewNode")
	return r.s.RenewNode(ctx, id, now, leaseUntil, draining)
}

func (r *recorder) GetNode(ctx context.Context, id string) (store.Node, error) {
	r.hit("GetNode")
	return r.s.GetNode(ctx, id)
}

func (r *recorder) ListNodes(ctx context.Context, since time.Time) ([]store.Node, error) {
	r.hit("ListNodes")
	return r.s.ListNodes(ctx, since)
}

func (r *recorder) ClaimLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	r.hit("ClaimLease")
	return r.s.ClaimLease(ctx, name, holder, now, ttl)
}

func (r *recorder) ReleaseLease(ctx context.Context, name, holder string) error {
	r.hit("ReleaseLease")
	return r.s.ReleaseLease(ctx, name, holder)
}

func (r *recorder) OrphanedCalls(ctx context.Context, now time.Time, limit int) ([]call.Call, error) {
	r.hit("OrphanedCalls")
	return r.s.OrphanedCalls(ctx, now, limit)
}

func (r *recorder) AssistantNames(ctx context.Context, orgID string, ids []string) (map[string]string, error) {
	r.hit("AssistantNames")
	return r.s.AssistantNames(ctx, orgID, ids)
}

func (r *recorder) Overview(ctx context.Context, orgID string, f store.OverviewFilter) (store.Overview, error) {
	r.hit("Overview")
	return r.s.Overview(ctx, orgID, f)
}
