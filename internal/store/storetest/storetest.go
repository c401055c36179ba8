// Package storetest is the conformance suite of store.Store, in the style of
// River's riverdrivertest: every implementation under internal/store/ runs
// Run from its own tests, with an opener that returns a fresh, migrated,
// empty store per subtest. The suite asserts only what a user of the
// interface can observe through the interface.
package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// Opener returns a fresh, migrated, empty store for one subtest and
// arranges (with t.Cleanup) for it to be closed.
type Opener = func(t *testing.T) store.Store

// Run runs the whole conformance suite against the stores open returns.
// Every subtest opens its own store, so they all run in parallel. The suite
// fails if it leaves a method of the store uncalled (see recordCoverage).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	open = recordCoverage(t, open)
	groups := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"Bootstrap", testBootstrap},
		{"Keys", testKeys},
		{"PublicKeys", testPublicKeys},
		{"Assistants", testAssistants},
		{"Purchases", testPurchases},
		{"Connections", testConnections},
		{"Contacts", testContacts},
		{"AssistantRequests", testAssistantRequests},
		{"Calls", testCalls},
		{"Turns", testTurns},
		{"Analyses", testAnalyses},
		{"Overview", testOverview},
		{"Webhooks", testWebhooks},
		{"Listeners", testListeners},
		{"Lifecycle", testLifecycle},
		{"Schedules", testSchedules},
		{"Campaigns", testCampaigns},
		{"Idempotency", testIdempotency},
		{"DeliveryLog", testDeliveryLog},
		{"Operators", testOperators},
		{"DoNotCall", testDNC},
		{"RateLimits", testRateLimits},
		{"Nodes", testNodes},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, open)
		})
	}
}

// t0 is the suite's reference time. It has a sub-millisecond part on
// purpose: the schema stores Unix milliseconds, so every time read back is
// compared after truncation to milliseconds.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535_897_932, time.UTC)

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// msTime is t as the store keeps it: UTC, truncated to milliseconds.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Millisecond).UTC()
}

// ---- comparison ----

// norm maps a slice through f, nil when empty, so that nil and empty
// slices compare equal.
func norm[T any](xs []T, f func(T) T) []T {
	if len(xs) == 0 {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func nilIfEmpty[T any](xs []T) []T {
	if len(xs) == 0 {
		return nil
	}
	return xs
}

func normOrg(o auth.Org) auth.Org {
	o.CreatedAt = msTime(o.CreatedAt)
	return o
}

func normKey(k auth.Key) auth.Key {
	k.Scopes = nilIfEmpty(k.Scopes)
	k.Hash = nilIfEmpty(k.Hash)
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = msTime(k.CreatedAt), msTime(k.LastUsedAt), msTime(k.RevokedAt)
	return k
}

func normAssistant(a assistant.Assistant) assistant.Assistant {
	a.CreatedAt, a.UpdatedAt = msTime(a.CreatedAt), msTime(a.UpdatedAt)
	a.Flow = nilIfEmpty(a.Flow)
	a.AnalysisPlan.StructuredDataSchema = nilIfEmpty(a.AnalysisPlan.StructuredDataSchema)
	a.EndCallPhrases = nilIfEmpty(a.EndCallPhrases)
	return a
}

func normPurchase(p phone.Purchase) phone.Purchase {
	p.CreatedAt, p.UpdatedAt = msTime(p.CreatedAt), msTime(p.UpdatedAt)
	return p
}

func normContact(c phone.Contact) phone.Contact {
	c.Metadata = nilIfEmpty(c.Metadata)
	c.CreatedAt = msTime(c.CreatedAt)
	return c
}

func normCall(c call.Call) call.Call {
	c.CreatedAt, c.UpdatedAt, c.StartedAt, c.EndedAt = msTime(c.CreatedAt), msTime(c.UpdatedAt), msTime(c.StartedAt), msTime(c.EndedAt)
	return c
}

func normSchedule(s schedule.Schedule) schedule.Schedule {
	s.Dates = norm(s.Dates, msTime)
	s.ContactIDs = nilIfEmpty(s.ContactIDs)
	s.CreatedAt, s.CanceledAt = msTime(s.CreatedAt), msTime(s.CanceledAt)
	return s
}

func normAttempt(a schedule.Attempt) schedule.Attempt {
	a.DueAt, a.UpdatedAt, a.LeasedUntil, a.RequestedAt = msTime(a.DueAt), msTime(a.UpdatedAt), msTime(a.LeasedUntil), msTime(a.RequestedAt)
	// The linked call's creation time and endedReason are checked by the
	// campaign tests (campaigns.go), which know them.
	a.CallCreatedAt, a.CallEndedReason = time.Time{}, ""
	return a
}

// normAttemptNoUpdated is normAttempt ignoring UpdatedAt, which the
// contract leaves to the implementation until an explicit change.
func normAttemptNoUpdated(a schedule.Attempt) schedule.Attempt {
	a = normAttempt(a)
	a.UpdatedAt = time.Time{}
	return a
}

// equal reports a mismatch of got and want (already normalized) for the
// named call.
func equal(t *testing.T, call string, got, want any) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return true
	}
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	if g.Kind() == reflect.Slice && w.Kind() == reflect.Slice && g.Len() == w.Len() {
		// Same length: name only the elements that differ.
		var b strings.Builder
		for i := range g.Len() {
			if !reflect.DeepEqual(g.Index(i).Interface(), w.Index(i).Interface()) {
				fmt.Fprintf(&b, "\n [%d] got  %+v\n [%d] want %+v", i, g.Index(i).Interface(), i, w.Index(i).Interface())
			}
		}
		t.Errorf("%s: %d elements, some differ:%s", call, g.Len(), b.String())
		return false
	}
	t.Errorf("%s:\n got  %+v\n want %+v", call, got, want)
	return false
}

// sameIDs compares two lists of ids in order.
func sameIDs(t *testing.T, call string, got, want []string) bool {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: ids\n got  %v\n want %v", call, got, want)
		return false
	}
	return true
}

// sameIDSet compares two lists of ids ignoring order.
func sameIDSet(t *testing.T, call string, got, want []string) bool {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	sort.Strings(g)
	sort.Strings(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s: ids (any order)\n got  %v\n want %v", call, g, w)
		return false
	}
	return true
}

func ids[T any](xs []T, f func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func callIDs(cs []call.Call) []string { return ids(cs, func(c call.Call) string { return c.ID }) }
func attemptIDs(as []schedule.Attempt) []string {
	return ids(as, func(a schedule.Attempt) string { return a.ID })
}

func dialIDs(ds []store.Dial) []string {
	return ids(ds, func(d store.Dial) string { return d.ID })
}

// ---- errors ----

// must fails the test now when err is not nil.
func must(t *testing.T, call string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", call, err)
	}
}

func kindName(err error) string {
	if err == nil {
		return "<nil error>"
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		return "unclassified (internal)"
	}
	return e.Kind.Code()
}

// wantKind checks that err is an apperr of the given kind.
func wantKind(t *testing.T, call string, err error, kind apperr.Kind) bool {
	t.Helper()
	if !apperr.Is(err, kind) {
		t.Errorf("%s: error = %v (%s); want a %s error", call, err, kindName(err), kind.Code())
		return false
	}
	return true
}

// wantErr checks that err is not nil (the contract names no kind).
func wantErr(t *testing.T, call string, err error) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: error = nil; want an error", call)
		return false
	}
	return true
}

// fieldNames lists the Fields of an apperr.Error, sorted.
func fieldNames(err error) []string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return nil
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	sort.Strings(out)
	return out
}

// ---- fixtures ----

func newOrg(name string, created time.Time) auth.Org {
	return auth.Org{ID: id.New(id.Org), Name: name, CreatedAt: created}
}

func newKey(orgID, name string, created time.Time) auth.Key {
	k, _ := auth.NewKey(orgID, name, []string{auth.CallsRead, auth.PhoneWrite, auth.AssistantsRead}, created)
	return k
}

// mustOrg stores a new organization.
func mustOrg(t *testing.T, s store.Store, name string) auth.Org {
	t.Helper()
	o := newOrg(name, t0)
	must(t, fmt.Sprintf("CreateOrg(%s)", o.ID), s.CreateOrg(t.Context(), o))
	return o
}

func newAssistant(orgID, name string, created time.Time) assistant.Assistant {
	temp := 0.7
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID = id.New(id.Assistant)
	a.OrgID = orgID
	a.Name = name
	a.FirstMessage = "Hello from " + name
	a.SystemPrompt = "Be brief."
	a.Model = assistant.Model{Provider: "flow", Temperature: &temp, MaxTokens: 256}
	a.Flow = []byte(`{"start":"greet"}`)
	a.EndCallPhrases = []string{"goodbye", "bye now"}
	a.AnalysisPlan = assistant.AnalysisPlan{SummaryPrompt: "Summarize.", StructuredDataSchema: []byte(`{"type":"object"}`)}
	a.CreatedAt, a.UpdatedAt = created, created
	return a
}

// mustAssistant stores a new assistant created at the given time.
func mustAssistant(t *testing.T, s store.Store, orgID, name string, created time.Time) assistant.Assistant {
	t.Helper()
	a := newAssistant(orgID, name, created)
	must(t, fmt.Sprintf("CreateAssistant(%s)", a.ID), s.CreateAssistant(t.Context(), a))
	return a
}

const provider = "sandbox"

func newPurchase(orgID, number string, created time.Time) phone.Purchase {
	return phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: number, Provider: provider, CreatedAt: created, UpdatedAt: created}
}

// mustPurchase stores a new purchase of number.
func mustPurchase(t *testing.T, s store.Store, orgID, number string) phone.Purchase {
	t.Helper()
	p := newPurchase(orgID, number, t0)
	must(t, fmt.Sprintf("CreatePurchase(%s, %s)", p.ID, number), s.CreatePurchase(t.Context(), p))
	return p
}

func newContact(number string, created time.Time) phone.Contact {
	return phone.Contact{
		ID:          id.New(id.Contact),
		Name:        "Contact " + number,
		PhoneNumber: number,
		Timezone:    "Europe/Paris",
		Metadata:    []byte(`{"tier":"gold"}`),
		CreatedAt:   created,
	}
}

// mustContacts adds one contact per number (none may be a duplicate) and
// returns them as stored.
func mustContacts(t *testing.T, s store.Store, orgID, purchaseID string, numbers ...string) []phone.Contact {
	t.Helper()
	var cs []phone.Contact
	for _, n := range numbers {
		cs = append(cs, newContact(n, t0))
	}
	created, dups, err := s.AddContacts(t.Context(), orgID, purchaseID, cs)
	must(t, fmt.Sprintf("AddContacts(%s, %d contacts)", purchaseID, len(cs)), err)
	if len(created) != len(cs) || len(dups) != 0 {
		t.Fatalf("AddContacts(%s, %d new numbers) = %d created, duplicates %v; want %d created, no duplicates", purchaseID, len(cs), len(created), dups, len(cs))
	}
	return created
}

func newCall(orgID string, typ call.Type, created time.Time) call.Call {
	c := call.Call{
		ID:          id.New(id.Call),
		OrgID:       orgID,
		Type:        typ,
		Status:      call.Queued,
		AssistantID: id.New(id.Assistant),
		CreatedAt:   created,
		UpdatedAt:   created,
	}
	if typ == call.Phone {
		c.PurchaseID = id.New(id.Purchase)
		c.From, c.To, c.Provider, c.Direction = "+15550100", "+33612345678", provider, call.Outbound
	}
	return c
}

// mustCall stores c.
func mustCall(t *testing.T, s store.Store, c call.Call) call.Call {
	t.Helper()
	must(t, fmt.Sprintf("CreateCall(%s)", c.ID), s.CreateCall(t.Context(), c))
	return c
}

// number returns a distinct E.164 number for index i.
func number(i int) string { return fmt.Sprintf("+1555%07d", i) }

func numbers(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = number(from + i)
	}
	return out
}

func describePage(p store.Page) string { return fmt.Sprintf("page %d size %d", p.Page, p.PageSize) }

func describeFilter(f store.CallFilter) string {
	var parts []string
	if f.Type != "" {
		parts = append(parts, "type="+string(f.Type))
	}
	if f.Status != nil {
		parts = append(parts, "status="+f.Status.Text())
	}
	if f.Direction != "" {
		parts = append(parts, "direction="+string(f.Direction))
	}
	if f.Outcome != "" {
		parts = append(parts, "outcome="+string(f.Outcome))
	}
	if !f.CreatedAfter.IsZero() {
		parts = append(parts, "createdAfter="+f.CreatedAfter.Format(time.RFC3339Nano))
	}
	if !f.CreatedBefore.IsZero() {
		parts = append(parts, "createdBefore="+f.CreatedBefore.Format(time.RFC3339Nano))
	}
	parts = append(parts, describePage(f.Page))
	return "{" + strings.Join(parts, " ") + "}"
}
