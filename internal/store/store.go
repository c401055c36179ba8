// Package store declares the storage contract the service is built on. It
// is the one interface shared across packages (River's shape): one
// implementation per database under internal/store/, and one conformance
// suite (internal/store/storetest) that every implementation must pass.
//
// Every method that reads or changes an organization's data takes the
// organization id and filters by it; a row of another organization is
// reported as apperr.NotFound, exactly as if it did not exist.
package store

import (
	"context"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/operator"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
)

// Page selects one page of a listing; Page is 1-based.
type Page struct {
	Page     int
	PageSize int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.PageSize }

// CallFilter selects calls for a listing. Zero fields do not filter.
type CallFilter struct {
	Type          call.Type
	Status        *call.Status
	Direction     call.Direction
	CreatedAfter  time.Time
	CreatedBefore time.Time
	// Outcome selects calls that ended so (the dashboard's filter; the
	// REST listing does not offer it).
	Outcome call.Outcome
	// CallID selects the call with that id, and Number (E.164) the calls
	// from or to that number: the dashboard's search, each an indexed
	// lookup within the organization.
	CallID string
	Number string
	Page
}

// ScheduleSummary is a schedule with its attempts counted by progress
// (schedule.Progress: pending, calling, completed, canceled, failed), and
// its campaign progress counters.
type ScheduleSummary struct {
	schedule.Schedule
	Attempts map[string]int
	Progress schedule.Counters
}

// ScheduleChange is what a cancel, pause or resume did to a schedule,
// decided in the transaction that did it.
type ScheduleChange struct {
	// Changed is whether the request changed the schedule: false when it
	// was so already, or is over (canceled, or finished: none of its
	// attempts pending nor calling), and nothing was written.
	Changed bool
	// CanceledAttempts is how many pending attempts a cancel canceled.
	CanceledAttempts int
	// Paused and Canceled are whether the schedule is paused, canceled,
	// after the request.
	Paused, Canceled bool
	// State is the schedule's state after the request (schedule.State).
	State string
}

// AttemptEnd is what EndAttemptCall does to the attempt of a call that
// ends: a retry, or nothing (the attempt stays dialed, final).
type AttemptEnd struct {
	// Retry sends the attempt back to pending, due at DueAt (the
	// effective time; RequestedAt is the time asked for), its ending try
	// appended to its tries; Retrying is queued with it. A schedule
	// canceled meanwhile is not retried.
	Retry       bool
	RequestedAt time.Time
	DueAt       time.Time
	Retrying    Event
}

// NewCall is a call for CreateCalls, with the events queued if its number
// turns out to be on the do-not-call list (CreateCall's suppressed).
type NewCall struct {
	Call       call.Call
	Suppressed []Event
}

// CallUpdate is one call's change for Store.UpdateCalls: Call is saved if
// the stored status is still Prev, with Events queued.
type CallUpdate struct {
	Call   call.Call
	Prev   call.Status
	Events []Event
}

// Dial is an attempt a dialer claimed (ClaimDials), with its schedule's
// number and its contact's phone number.
type Dial struct {
	schedule.Attempt
	// PurchaseID is the schedule's number, the call's caller ID.
	PurchaseID string
	// To is the contact's phone number; "" when the contact was deleted.
	To string
}

// DNCAdded is what AddDNC did.
type DNCAdded struct {
	// Added are the entries stored, in the order given.
	Added []phone.DNCEntry
	// Listed are the indexes of the entries whose number was already listed.
	Listed []int
	// LiveCalls are, by added number, the ids of its calls that were not
	// ended when it was added (a call in progress is not cut; the caller
	// may end it).
	LiveCalls map[string][]string
}

// Idempotent is a stored response to a request made with an Idempotency-Key.
type Idempotent struct {
	RequestHash string
	// Status is 0 while the first request is still being handled.
	Status    int
	Body      []byte
	CreatedAt time.Time
}

// Store is everything the service persists.
type Store interface {
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the connections.
	Close() error

	// Bootstrap creates org and key if and only if there is no organization
	// yet; it reports whether it did. Safe to race from several nodes.
	Bootstrap(ctx context.Context, org auth.Org, key auth.Key) (bool, error)
	CreateOrg(ctx context.Context, org auth.Org) error
	GetOrg(ctx context.Context, id string) (auth.Org, error)
	// CreateKey stores key; NotFound when its organization does not exist.
	CreateKey(ctx context.Context, key auth.Key) error
	// GetKey finds a key by id, revoked or not; it is not org-scoped because
	// it is how a request's organization is learned.
	GetKey(ctx context.Context, id string) (auth.Key, error)
	ListKeys(ctx context.Context, orgID string) ([]auth.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
	// TouchKeys records when keys were last used (id → time), in one batch.
	TouchKeys(ctx context.Context, used map[string]time.Time) error

	// Publishable keys (pk_…): keys a web page may hold, which only start
	// web calls for their assistants from their origins.
	//
	// CreatePublicKey stores k. Each of k.AssistantIDs must name an
	// assistant of k.OrgID, checked in the same transaction: otherwise
	// nothing is stored and the error is a NotFound naming the field of
	// each missing one (assistantIds[i]).
	CreatePublicKey(ctx context.Context, k auth.PublicKey) error
	// GetPublicKey finds a publishable key by id, revoked or not; it is not
	// org-scoped because it is how a request's organization is learned.
	GetPublicKey(ctx context.Context, id string) (auth.PublicKey, error)
	// ListPublicKeys returns a page of the organization's publishable
	// keys, revoked ones included, newest first, and their total.
	ListPublicKeys(ctx context.Context, orgID string, p Page) ([]auth.PublicKey, int, error)
	// RevokePublicKey revokes one of the organization's publishable keys
	// and returns it; revoking twice keeps the first time.
	RevokePublicKey(ctx context.Context, orgID, id string, at time.Time) (auth.PublicKey, error)
	// PublicOriginAllowed reports whether origin is an origin of some
	// publishable key that is not revoked, of any organization (a CORS
	// preflight names no key).
	PublicOriginAllowed(ctx context.Context, origin string) (bool, error)

	CreateAssistant(ctx context.Context, a assistant.Assistant) error
	// AssistantNames gives the names of the organization's assistants
	// among ids, by id (an id not the organization's is absent).
	AssistantNames(ctx context.Context, orgID string, ids []string) (map[string]string, error)
	// Overview sums the organization's ended calls created on f's UTC
	// days, from the rollups kept with each call's end and analysis
	// (docs/ARCHITECTURE.md, "The overview and the calls console").
	Overview(ctx context.Context, orgID string, f OverviewFilter) (Overview, error)
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	ListAssistants(ctx context.Context, orgID string, p Page) ([]assistant.Assistant, int, error)
	UpdateAssistant(ctx context.Context, a assistant.Assistant) error
	// DeleteAssistant is a Conflict while a purchased number uses the assistant.
	DeleteAssistant(ctx context.Context, orgID, id string) error

	// CreatePurchase is a Conflict when the number is held by anyone.
	// When p.ConnectionID is set, the number must be one of that
	// connection's numbers, the connection one of p.OrgID's of provider
	// p.Provider, checked in the same transaction (NotFound otherwise);
	// the connection cannot be deleted while the purchase is held.
	CreatePurchase(ctx context.Context, p phone.Purchase) error
	GetPurchase(ctx context.Context, orgID, id string) (phone.Purchase, error)
	ListPurchases(ctx context.Context, orgID string) ([]phone.Purchase, error)
	// HeldNumbers lists the numbers of a provider that are currently purchased, by anyone.
	HeldNumbers(ctx context.Context, provider string) (map[string]bool, error)
	// AllocateAssistants sets the purchase's assistants and message. Each
	// non-empty assistant id must name an assistant of the organization,
	// checked in the same transaction (NotFound naming the field otherwise).
	AllocateAssistants(ctx context.Context, orgID, purchaseID, inboundID, outboundID, message string, at time.Time) (phone.Purchase, error)
	// ReleasePurchase gives the number up and deletes its contacts. It is a
	// Conflict while a schedule of the number has pending attempts.
	ReleasePurchase(ctx context.Context, orgID, id string, at time.Time) error

	// CreateConnection stores a connection and its numbers. A number
	// already on a connection of the same provider, of any organization,
	// is a Conflict (code number_taken) naming the field of each such
	// number (sip.numbers[i]); nothing is stored then.
	CreateConnection(ctx context.Context, c phone.Connection) error
	GetConnection(ctx context.Context, orgID, id string) (phone.Connection, error)
	// GetConnectionAnyOrg reads a connection by id alone, for a provider's
	// callback that names it (a Twilio webhook's path) before anything
	// says whose it is.
	GetConnectionAnyOrg(ctx context.Context, id string) (phone.Connection, error)
	// ListConnections returns a page of the organization's connections,
	// newest first, and their total.
	ListConnections(ctx context.Context, orgID string, p Page) ([]phone.Connection, int, error)
	// DeleteConnection deletes a connection and frees its numbers. It is a
	// Conflict, naming them, while numbers of it are purchased.
	DeleteConnection(ctx context.Context, orgID, id string) error
	// ConnectionNumbers lists the numbers of the organization's
	// connections of a provider, oldest connection first and in each in
	// its order, with the purchase that holds each one, if any.
	ConnectionNumbers(ctx context.Context, orgID, provider string) ([]phone.ConnectionNumber, error)
	// FindInboundNumber finds, across organizations, the held purchase of
	// number on a connection of provider, and that connection: where an
	// inbound call to the number goes. NotFound when there is none.
	FindInboundNumber(ctx context.Context, provider, number string) (phone.Purchase, phone.Connection, error)

	// AddContacts adds contacts to a purchase in one transaction. Contacts
	// whose number is already on the purchase (or earlier in the batch) are
	// not added; their indexes in cs are returned as duplicates.
	AddContacts(ctx context.Context, orgID, purchaseID string, cs []phone.Contact) (created []phone.Contact, duplicates []int, err error)
	ListContacts(ctx context.Context, orgID, purchaseID string, p Page) ([]phone.Contact, int, error)
	DeleteContact(ctx context.Context, orgID, purchaseID, contactID string) error
	// MissingContacts returns the ids in ids that are not contacts of the purchase.
	MissingContacts(ctx context.Context, orgID, purchaseID string, ids []string) ([]string, error)
	GetContact(ctx context.Context, orgID, id string) (phone.Contact, error)

	// CreateCall stores a new call. When c.AttemptID is set it also moves
	// that attempt from pending to dialed, linked to the call, in the same
	// transaction; a Conflict means the attempt was no longer pending, or
	// its schedule is paused (the attempt's lease is then given back), and
	// no call was stored.
	//
	// An outbound phone call to a number on the organization's do-not-call
	// list is not stored: the error is phone.Suppressed (a Conflict with
	// code suppressed), and a pending attempt c.AttemptID names becomes
	// schedule.Suppressed, with the suppressed events queued, in the same
	// transaction. The list is read under the lock AddDNC takes on the
	// number, so a dial and an add of one number are ordered: a number
	// added before the claim is never dialed.
	CreateCall(ctx context.Context, c call.Call, suppressed ...Event) error
	// CreateCalls is CreateCall for many calls in one transaction (a
	// dialer's batch): each call is decided as CreateCall decides it, and
	// its outcome is at its index in the returned errors (nil: stored). The
	// second error, when set, means nothing was stored.
	CreateCalls(ctx context.Context, calls []NewCall) ([]error, error)
	GetCall(ctx context.Context, orgID, id string) (call.Call, error)
	// GetCallAnyOrg is for provider events, which know only the call id.
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)
	// GetCallsAnyOrg is GetCallAnyOrg for many ids at once (a batch of
	// provider events); ids not found are left out, in no given order.
	GetCallsAnyOrg(ctx context.Context, ids []string) ([]call.Call, error)
	// ListCalls returns a page of calls, newest first, and the total matching.
	ListCalls(ctx context.Context, orgID string, f CallFilter) ([]call.Call, int, error)
	// UpdateCall saves c if the stored status is still prev (Conflict
	// otherwise). In the same transaction it queues events for the
	// organization's subscribed webhook endpoints and, when c has just
	// ended, its analysis (state pending).
	UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...Event) error
	// UpdateCalls is UpdateCall for many calls in one transaction (a batch
	// of provider events): each is saved as UpdateCall saves it, and its
	// outcome is at its index in the returned errors (nil: saved; a call
	// named twice is a Conflict the second time). The second error, when
	// set, means nothing was saved.
	UpdateCalls(ctx context.Context, updates []CallUpdate) ([]error, error)
	// SetCallRecording records that the call has a recording at path
	// (relative to the data directory); NotFound when the organization has
	// no such call. Only this method sets Call.Recording.
	SetCallRecording(ctx context.Context, orgID, callID, path string) error
	// StaleCalls lists calls of any organization that are not ended and were
	// last updated before the given time.
	StaleCalls(ctx context.Context, updatedBefore time.Time, limit int) ([]call.Call, error)

	// Do-not-call list (phone.DNCEntry), one per (organization, number).
	//
	// AddDNC lists the entries' numbers (E.164, each once) for orgID in
	// one transaction. A number already listed keeps its first entry (its
	// index is in Listed). It takes the lock CreateCall's check takes on
	// each number, in sorted order, and reports the calls to the added
	// numbers that were live (not ended) then: every dial of them claimed
	// later is suppressed.
	AddDNC(ctx context.Context, orgID string, entries []phone.DNCEntry) (DNCAdded, error)
	// ListDNC returns a page of the organization's list, newest first, and
	// its total; search, when not empty, keeps the numbers that contain it.
	ListDNC(ctx context.Context, orgID, search string, p Page) ([]phone.DNCEntry, int, error)
	// DeleteDNC takes number off the organization's list; NotFound when
	// it is not on it.
	DeleteDNC(ctx context.Context, orgID, number string) error

	// CreateSchedule stores the schedule and all its attempts atomically;
	// NotFound when the purchase is not (or no longer) held.
	CreateSchedule(ctx context.Context, s schedule.Schedule, attempts []schedule.Attempt) error
	GetSchedule(ctx context.Context, orgID, id string) (schedule.Schedule, []schedule.Attempt, error)
	ListSchedules(ctx context.Context, orgID string, p Page) ([]ScheduleSummary, int, error)
	// CancelSchedule cancels the pending attempts (Canceled says how
	// many: CanceledAttempts) and marks the schedule canceled; a schedule with none pending
	// is left as it is (Changed false), unless a call of it is live: it is
	// then marked canceled all the same, so that the call's end does not
	// retry its attempt (EndAttemptCall).
	CancelSchedule(ctx context.Context, orgID, id string, at time.Time) (ScheduleChange, error)
	// GetAttempt reads an attempt and its schedule's settings (without
	// its Dates and ContactIDs), for the dialer and a call's end.
	GetAttempt(ctx context.Context, id string) (schedule.Attempt, schedule.Schedule, error)
	// FailAttempt moves a pending attempt to failed with a reason.
	FailAttempt(ctx context.Context, id, reason string, at time.Time) error
	// LeaseAttempts hands out up to limit pending attempts that are due by
	// now and not leased (never, or their lease ran out), earliest due
	// first: each is leased until now+lease and its lease count raised, and
	// is returned with the new count (Leases) and LeasedUntil. Two callers,
	// on any nodes, never lease the same attempt at once.
	LeaseAttempts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]schedule.Attempt, error)
	// LeasedAttempts counts pending attempts whose lease runs past now: the
	// dials handed out and not yet made.
	LeasedAttempts(ctx context.Context, now time.Time) (int, error)
	// ClaimDials gives a node's dialer up to limit attempts the promoter
	// has handed out (pending, leased past now) that no dialer holds
	// (their hold ended by now), earliest due first, each held until
	// now+hold: two dialers, on any nodes, never hold the same attempt at
	// once. An attempt whose dialer died is claimed again once its hold
	// ends, while its hand-out lasts (after that the promoter hands it out
	// again). The claim is not the dial: CreateCall's claim of the attempt
	// decides that.
	// Each comes with what placing its call needs (Dial).
	ClaimDials(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]Dial, error)

	// Campaign settings (docs/ARCHITECTURE.md, "Campaign settings").
	//
	// ContactZones returns the timezone of each id in ids that is a
	// contact of the purchase ("" when it has none); other ids are absent.
	ContactZones(ctx context.Context, orgID, purchaseID string, ids []string) (map[string]string, error)
	// LeaseAttemptsUnder is LeaseAttempts that also keeps every cap: it
	// leases only attempts whose schedule is not paused, that are inside
	// their calling hours at now (one due but outside is moved to the next
	// opening instead, never dropped), and whose lease keeps the live
	// calls of their schedule (MaxConcurrentCalls), number and
	// organization under the caps (caps: the server's; an organization's
	// own lower them; 0 is none). Live calls are phone calls not ended,
	// on any node, plus attempts leased and not dialed. An attempt over a
	// cap stays pending, unleased. LeaseAttempts is LeaseAttemptsUnder
	// with no server caps.
	LeaseAttemptsUnder(ctx context.Context, now time.Time, lease time.Duration, limit int, caps schedule.Caps) ([]schedule.Attempt, error)
	// EndAttemptCall is UpdateCall for a call placed by an attempt: in
	// the same transaction, when the call has just ended, it does end to
	// the attempt (a retry) and queues end's events.
	EndAttemptCall(ctx context.Context, c call.Call, prev call.Status, end AttemptEnd, events ...Event) error
	// DoneSchedules lists up to limit schedules, oldest first, not marked
	// completed whose attempts are all final: none pending, none with a
	// live call; each with its settings (as GetAttempt's, no dates nor
	// contacts) and its attempts counted as ListSchedules counts them.
	DoneSchedules(ctx context.Context, limit int) ([]ScheduleSummary, error)
	// CompleteSchedule marks one of the organization's schedules
	// completed at `at` and queues ev in the same transaction, if its
	// attempts are still all final and it was not marked yet; it reports
	// whether it marked it. A schedule is marked once.
	CompleteSchedule(ctx context.Context, orgID, id string, at time.Time, ev Event) (bool, error)
	// SetSchedulePaused pauses (paused) or resumes one of the
	// organization's schedules and reports whether that changed it; ev is
	// queued in the same transaction when it did. A schedule that is
	// canceled or finished (none of its attempts pending nor calling) is
	// over: it is left as it is (Changed false). A paused schedule's
	// attempts are not leased, and a claim (CreateCall) of one already
	// leased gives it back undialed.
	SetSchedulePaused(ctx context.Context, orgID, id string, paused bool, at time.Time, ev Event) (ScheduleChange, error)
	// GetOrgCaps reads the organization's own caps (0: none of its own).
	GetOrgCaps(ctx context.Context, orgID string) (schedule.Caps, error)
	// SetOrgCaps stores the organization's own caps; NotFound when there
	// is no such organization.
	SetOrgCaps(ctx context.Context, orgID string, caps schedule.Caps) error

	// AppendTurn stores one transcript turn (Conflict if its seq is taken),
	// with its Breakdown when it has one. A turn is stored once, complete:
	// a voice turn when it has been heard, with the text the caller heard,
	// Interrupted set on a barge-in, and its Breakdown.
	AppendTurn(ctx context.Context, t call.Turn) error
	// ListTurns returns a call's turns in order, each with its Breakdown
	// (nil when none was stored). Durations are kept to the microsecond.
	ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error)

	// GetAnalysis reads a call's analysis (NotFound before the call ended).
	GetAnalysis(ctx context.Context, orgID, callID string) (Analysis, error)
	// ClaimAnalyses leases up to limit pending analyses until now+lease.
	ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Analysis, error)
	// FinishAnalysis stores a claimed analysis's outcome (ready or failed)
	// and queues events in the same transaction.
	FinishAnalysis(ctx context.Context, a Analysis, events ...Event) error

	// CreateWebhook stores an endpoint.
	CreateWebhook(ctx context.Context, w Webhook) error
	ListWebhooks(ctx context.Context, orgID string) ([]Webhook, error)
	GetWebhook(ctx context.Context, orgID, id string) (Webhook, error)
	// UpdateWebhookSecrets replaces an endpoint's signing secrets (rotation).
	UpdateWebhookSecrets(ctx context.Context, orgID, id string, secrets []string) error
	// DeleteWebhook deletes an endpoint; its undelivered messages are dropped.
	DeleteWebhook(ctx context.Context, orgID, id string, at time.Time) error
	// QueueEvent queues an event outside a call update (e.g. schedule events).
	QueueEvent(ctx context.Context, orgID string, ev Event, at time.Time) error
	// ClaimOutbox leases up to limit messages due at now until now+lease.
	ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]OutboxMessage, error)
	// RecordDelivery logs one delivery attempt and sets the message's next
	// state: delivered, pending again at next (a retry), or failed.
	RecordDelivery(ctx context.Context, m OutboxMessage, d Delivery, state string, next time.Time) error
	ListDeliveries(ctx context.Context, orgID, webhookID string, p Page) ([]Delivery, int, error)
	// ListCallMessages lists the webhook messages about one of the
	// organization's calls, oldest first, at most limit.
	ListCallMessages(ctx context.Context, orgID, callID string, limit int) ([]CallMessage, error)
	// Redeliver queues a message of the endpoint again, now.
	Redeliver(ctx context.Context, orgID, webhookID, messageID string, at time.Time) error
	// ClaimListener leases up to limit messages due at now of one listener
	// endpoint (kind WebhookListener) of the organization, until
	// now+lease: the messages its stream sends (ClaimOutbox never claims
	// them). NotFound when the organization has no such listener.
	ClaimListener(ctx context.Context, orgID, webhookID string, now time.Time, lease time.Duration, limit int) ([]OutboxMessage, error)
	// RenewListener moves a listener endpoint's expiry to until, while a
	// stream is attached; NotFound once it is deleted (or expired).
	RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error
	// ExpireListeners deletes, as DeleteWebhook does, the listener
	// endpoints of any organization whose expiry is before now; it returns
	// how many.
	ExpireListeners(ctx context.Context, now time.Time) (int, error)

	// ReserveIdempotency claims key for a request with the given hash. It
	// returns nil when the caller should go on and handle the request, or
	// the record already stored under the key.
	ReserveIdempotency(ctx context.Context, orgID, key, requestHash string, now time.Time) (*Idempotent, error)
	// CompleteIdempotency stores the response of a reserved request.
	CompleteIdempotency(ctx context.Context, orgID, key string, status int, body []byte) error
	// ReleaseIdempotency forgets a reservation whose request failed.
	ReleaseIdempotency(ctx context.Context, orgID, key string) error
	// PurgeIdempotency deletes records created before the given time.
	PurgeIdempotency(ctx context.Context, before time.Time) error

	// Rate limits shared by the nodes on one database (issue 12,
	// internal/httpapi/ratelimit.go): a count per API key of the requests
	// all nodes have admitted, which only grows.
	//
	// AddRateSpend adds each key's requests admitted by this node (key id
	// → count) to the key's count, in one transaction, and marks the keys
	// changed at at. Counts of zero or less are ignored.
	AddRateSpend(ctx context.Context, spent map[string]int64, at time.Time) error
	// RateSpend returns the count of every key changed at or after since
	// (key id → count): what a node reads back to learn what the others
	// admitted.
	RateSpend(ctx context.Context, since time.Time) (map[string]int64, error)
	// PurgeRateSpend forgets the counts of keys unchanged since before.
	PurgeRateSpend(ctx context.Context, before time.Time) error

	// Dashboard operators (internal/operator) and their sessions.
	//
	// CreateOperator stores an operator: NotFound when its organization
	// does not exist, Conflict when its email is taken in any organization.
	CreateOperator(ctx context.Context, op operator.Operator) error
	// GetOperatorByEmail finds an operator by normalized email, in any
	// organization: signing in is how an operator's organization is learned.
	GetOperatorByEmail(ctx context.Context, email string) (operator.Operator, error)
	// ListOperators lists an organization's operators, oldest first.
	ListOperators(ctx context.Context, orgID string) ([]operator.Operator, error)
	// DeleteOperator deletes an operator and all its sessions.
	DeleteOperator(ctx context.Context, id string) error
	// CreateOperatorSession stores a session; NotFound when its operator
	// does not exist.
	CreateOperatorSession(ctx context.Context, s operator.Session) error
	// GetOperatorSession reads a session by its token hash, with its
	// operator. It does not check expiry (operator.Session.Live does).
	GetOperatorSession(ctx context.Context, tokenHash string) (operator.Session, operator.Operator, error)
	// TouchOperatorSession moves a session's IdleUntil, never past its
	// ExpiresAt.
	TouchOperatorSession(ctx context.Context, tokenHash string, idleUntil time.Time) error
	// DeleteOperatorSession ends a session (sign-out); NotFound when there
	// is none.
	DeleteOperatorSession(ctx context.Context, tokenHash string) error
	// PurgeOperatorSessions deletes the sessions no longer live at now and
	// returns how many.
	PurgeOperatorSessions(ctx context.Context, now time.Time) (int, error)

	// Nodes (internal/cluster): the serve processes sharing the database.
	//
	// RegisterNode stores a node that starts (its lease already running);
	// registering an id again replaces the row.
	RegisterNode(ctx context.Context, n Node) error
	// RenewNode moves a node's heartbeat to now and its lease to
	// leaseUntil, and sets its draining flag. NotFound when the node has no
	// row (it was purged as long dead).
	RenewNode(ctx context.Context, id string, now, leaseUntil time.Time, draining bool) error
	// GetNode reads one node.
	GetNode(ctx context.Context, id string) (Node, error)
	// ListNodes lists the nodes whose lease runs past since (every node
	// with the zero time), oldest first.
	ListNodes(ctx context.Context, since time.Time) ([]Node, error)
	// ClaimLease takes or renews the lease called name for holder until
	// now+ttl and reports whether holder holds it: yes when nobody held it,
	// holder already did, or the holder's lease ran out before now. Two
	// callers, on any nodes, never both hold a lease at the same now.
	ClaimLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (Lease, bool, error)
	// ReleaseLease gives up the lease called name if holder holds it, so
	// that another may claim it at once.
	ReleaseLease(ctx context.Context, name, holder string) error
	// OrphanedCalls lists up to limit live calls (queued, ringing, in
	// progress) of any organization whose node (Call.NodeID) has no lease
	// running past now: it died, so nothing will end them.
	OrphanedCalls(ctx context.Context, now time.Time, limit int) ([]call.Call, error)
}

// Node is one server process sharing the database (a cluster member).
type Node struct {
	ID string
	// Addr is the node's listen address, for operators.
	Addr        string
	StartedAt   time.Time
	HeartbeatAt time.Time
	// LeaseUntil is when the node counts as dead unless it renews.
	LeaseUntil time.Time
	// Draining is set from SIGTERM on: the node takes no new calls.
	Draining bool
}

// Alive reports whether n's lease runs past now.
func (n Node) Alive(now time.Time) bool { return n.LeaseUntil.After(now) }

// Lease is a named lease as stored.
type Lease struct {
	Name       string
	Holder     string
	LeaseUntil time.Time
	// Term grows by one each time another holder takes the lease.
	Term int64
}

// Counter is implemented by stores that can total calls by status across
// organizations cheaply (for metrics).
type Counter interface {
	CallCounts(ctx context.Context) (map[call.Status]int64, error)
}

// Event is a webhook event to queue for an organization's endpoints that
// subscribe to its type.
type Event struct {
	// ID names the event in logs. The store does not keep it: each
	// subscribed endpoint gets a message of its own (msg_…), whose id is
	// the webhook-id of every delivery attempt.
	ID   string
	Type string
	At   time.Time
	// Data is the event's JSON payload ("data" of the webhook body).
	Data []byte
	// CallID is the call the event is about, if any: its messages are
	// listed with the call (ListCallMessages).
	CallID string
}

// CallMessage is a webhook message about a call, as its page lists it:
// which endpoint, which event, and how its delivery stands.
type CallMessage struct {
	ID         string // msg_…, the webhook-id of its deliveries
	WebhookID  string
	URL        string
	Type       string
	State      string // OutboxPending, delivered, failed
	Attempts   int
	LastStatus int // the last attempt's HTTP status, 0 when none answered
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Analysis states.
const (
	AnalysisPending = "pending"
	AnalysisReady   = "ready"
	AnalysisFailed  = "failed"
)

// Analysis is a call's post-call analysis record.
type Analysis struct {
	CallID    string
	OrgID     string
	State     string
	Result    []byte // JSON of the analysis result when ready
	Error     string
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Webhook is an organization's endpoint.
type Webhook struct {
	ID    string
	OrgID string
	// Kind is WebhookHTTP (deliveries POSTed to URL by the dispatcher) or
	// WebhookListener (no URL: streamed to `switchboard webhooks listen`);
	// "" is stored as WebhookHTTP.
	Kind      string
	URL       string
	Events    []string
	Secrets   []string // newest first; more than one during a rotation
	CreatedAt time.Time
	// ExpiresAt is when a listener that no stream renews is deleted
	// (ExpireListeners); zero for an HTTP endpoint.
	ExpiresAt time.Time
}

// Webhook kinds.
const (
	WebhookHTTP     = "http"
	WebhookListener = "listener"
)

// Outbox message states.
const (
	OutboxPending   = "pending"
	OutboxDelivered = "delivered"
	OutboxFailed    = "failed"
)

// OutboxMessage is one event for one endpoint.
type OutboxMessage struct {
	ID        string
	OrgID     string
	WebhookID string
	URL       string
	Secrets   []string
	Type      string
	Payload   []byte
	State     string
	Attempts  int
	CreatedAt time.Time
}

// Delivery is one attempt to deliver a message.
type Delivery struct {
	ID        string
	MessageID string
	WebhookID string
	OrgID     string
	Type      string
	Attempt   int
	Status    int
	// Response and Error come from the receiver (its answer, its status
	// line), so they may hold any bytes. RecordDelivery stores them as text
	// whatever they hold, which PostgreSQL's TEXT would otherwise refuse:
	// each NUL and each byte of invalid UTF-8 becomes U+FFFD, and each is
	// cut to MaxDeliveryText bytes at a rune boundary.
	Response string
	Error    string
	Duration time.Duration
	At       time.Time
}

// MaxDeliveryText bounds a stored Delivery's Response and Error, in bytes.
const MaxDeliveryText = 8 << 10
