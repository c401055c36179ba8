package campaign

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
)

// testBundle is a campaign Service on a fresh SQLite store, a provider
// that records what it is asked to dial, and a clock the test moves.
type testBundle struct {
	svc      *Service
	store    store.Store
	provider *recordingProvider
	clock    time.Time
	handed   []schedule.Attempt // every attempt promote handed out, in order
	orgID    string
	purchase phone.Purchase
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sched.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b := &testBundle{store: db, provider: &recordingProvider{}, clock: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	calls := callctl.New(callctl.Config{Store: db, Providers: []telephony.Network{b.provider}, Log: log})
	b.svc = New(db, calls, cfg, log)
	b.svc.now = func() time.Time { return b.clock }

	now := b.clock
	org := auth.Org{ID: id.New(id.Org), Name: "Acme", CreatedAt: now}
	must(t, db.CreateOrg(ctx, org))
	b.orgID = org.ID
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), org.ID, "Caller", now, now
	must(t, db.CreateAssistant(ctx, a))
	b.purchase = phone.Purchase{ID: id.New(id.Purchase), OrgID: org.ID, Number: "+14155550100", Provider: b.provider.Name(),
		OutboundAssistantID: a.ID, CreatedAt: now, UpdatedAt: now}
	must(t, db.CreatePurchase(ctx, b.purchase))
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// schedule stores n contacts and a schedule that calls each once, due now.
func (b *testBundle) schedule(t *testing.T, n int) []string {
	t.Helper()
	var cs []phone.Contact
	for i := range n {
		cs = append(cs, phone.Contact{ID: id.New(id.Contact), OrgID: b.orgID, PurchaseID: b.purchase.ID, Name: "c",
			PhoneNumber: fmt.Sprintf("+1415555%04d", 1000+i), CreatedAt: b.clock})
	}
	created, _, err := b.store.AddContacts(t.Context(), b.orgID, b.purchase.ID, cs)
	must(t, err)
	cids := make([]string, len(created))
	for i, c := range created {
		cids[i] = c.ID
	}
	_, err = b.svc.Create(t.Context(), Request{OrgID: b.orgID, Name: "s", PurchaseID: b.purchase.ID, Timezone: "UTC", Dates: []time.Time{b.clock}, ContactIDs: cids})
	must(t, err)
	return cids
}

// dial dials each attempt once, as a dialer that claimed it would.
func (b *testBundle) dial(t *testing.T, as []schedule.Attempt) {
	t.Helper()
	for _, a := range as {
		must(t, b.svc.DialAttempts(t.Context(), []store.Dial{b.dialOf(t, a)}))
	}
}

// dialOf is what a dialer's claim (ClaimDials) returns for a.
func (b *testBundle) dialOf(t *testing.T, a schedule.Attempt) store.Dial {
	t.Helper()
	ct, err := b.store.GetContact(t.Context(), a.OrgID, a.ContactID)
	must(t, err)
	return store.Dial{Attempt: a, PurchaseID: b.purchase.ID, To: ct.PhoneNumber}
}

// promote runs one promotion and returns what it handed out.
func (b *testBundle) promote(t *testing.T) []schedule.Attempt {
	t.Helper()
	got, err := b.svc.promote(t.Context())
	must(t, err)
	b.handed = append(b.handed, got...)
	return got
}

// TestLeaseRunsOut: an attempt handed out and never dialed (every dialer
// died) stays pending; once its hand-out ends it is handed out again as a
// new lease, which dials it. A dialer of the first hand-out that was only
// slow, dialing late, places nothing: one call per attempt.
func TestLeaseRunsOut(t *testing.T) {
	b := setup(t, Config{})
	b.schedule(t, 3)
	first := b.promote(t)
	if len(first) != 3 || first[0].Leases != 1 {
		t.Fatalf("Promote() of 3 due attempts handed out %+v; want 3, lease 1", first)
	}
	b.clock = b.clock.Add(DefaultDialLease - time.Millisecond)
	if again := b.promote(t); len(again) != 0 {
		t.Fatalf("Promote() within the lease handed out %+v; want nothing", again)
	}
	// The node that held the jobs is gone: nothing ran them.
	b.clock = b.clock.Add(time.Millisecond)
	second := b.promote(t)
	if len(second) != 3 {
		t.Fatalf("Promote() once the lease ran out handed out %+v; want the 3 attempts again", second)
	}
	for _, a := range second {
		if a.Leases != 2 {
			t.Errorf("Promote() after the lease ran out: attempt %+v; want lease 2", a)
		}
	}
	b.dial(t, second)
	b.dial(t, first) // the slow dialer of the first hand-out
	if got := b.provider.placed(); len(got) != 3 || len(unique(got)) != 3 {
		t.Errorf("provider placed %v; want 3 distinct calls, one per attempt", got)
	}
	if again := b.promote(t); len(again) != 0 {
		t.Errorf("Promote() after every attempt was dialed handed out %+v; want nothing", again)
	}
}

// TestEitherLeaseDials: when an attempt was handed out twice (its first
// hand-out ended while a dialer was slow), whichever dial runs first dials
// it and the other places nothing.
func TestEitherLeaseDials(t *testing.T) {
	for _, order := range []string{"older first", "newer first"} {
		t.Run(order, func(t *testing.T) {
			b := setup(t, Config{})
			b.schedule(t, 1)
			first := b.promote(t)
			b.clock = b.clock.Add(DefaultDialLease)
			second := b.promote(t)
			if order == "newer first" {
				first, second = second, first
			}
			b.dial(t, first)
			if got := b.provider.placed(); len(got) != 1 {
				t.Fatalf("%s: the first job to run placed %v; want one call", order, got)
			}
			b.dial(t, second)
			if got := b.provider.placed(); len(got) != 1 {
				t.Fatalf("%s: after both jobs ran the provider placed %v; want one call", order, got)
			}
		})
	}
}

// TestConcurrentDials: dials of one attempt at the same moment (a node
// thought dead that was only slow, and the node that took over) pass the
// pending check together; the claim in CreateCall's transaction lets one
// call through.
func TestConcurrentDials(t *testing.T) {
	b := setup(t, Config{})
	b.schedule(t, 1)
	js := b.promote(t)
	d := b.dialOf(t, js[0])
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := b.svc.DialAttempts(context.Background(), []store.Dial{d}); err != nil {
				t.Errorf("DialAttempts: %v", err)
			}
		})
	}
	wg.Wait()
	if got := b.provider.placed(); len(got) != 1 {
		t.Errorf("8 concurrent DialAttempts of one attempt placed %v; want one call", got)
	}
	a, _, err := b.store.GetAttempt(t.Context(), js[0].ID)
	must(t, err)
	if a.State != schedule.Dialed || a.CallID == "" {
		t.Errorf("attempt after concurrent dials: state %s, call %q; want dialed with its call", a.State, a.CallID)
	}
}

// TestMaxLeased: no more than MaxLeased attempts are leased and undialed at
// once, so a backlog stays in the database, not with the dialers.
func TestMaxLeased(t *testing.T) {
	b := setup(t, Config{MaxLeased: 4})
	b.schedule(t, 10)
	if got := b.promote(t); len(got) != 4 {
		t.Fatalf("Promote() with MaxLeased 4 and 10 due handed out %d jobs; want 4", len(got))
	}
	if got := b.promote(t); len(got) != 0 {
		t.Fatalf("Promote() again with 4 leased handed out %d jobs; want 0", len(got))
	}
	b.dial(t, b.handed[:3])
	if got := b.promote(t); len(got) != 3 {
		t.Fatalf("Promote() after 3 of 4 dialed handed out %d jobs; want 3", len(got))
	}
}

// TestGiveUp: an attempt handed out MaxLeases times without a call is
// failed, with the reason, instead of being handed out forever.
func TestGiveUp(t *testing.T) {
	b := setup(t, Config{MaxLeases: 2})
	b.schedule(t, 1)
	for i := range 2 {
		if got := b.promote(t); len(got) != 1 {
			t.Fatalf("Promote() #%d handed out %+v; want 1 job", i+1, got)
		}
		b.clock = b.clock.Add(DefaultDialLease)
	}
	if got := b.promote(t); len(got) != 0 {
		t.Fatalf("Promote() past MaxLeases handed out %+v; want nothing", got)
	}
	a, _, err := b.store.GetAttempt(t.Context(), b.handed[0].ID)
	must(t, err)
	if a.State != schedule.Failed || !strings.Contains(a.Error, "not dialed after 2 tries") {
		t.Errorf("attempt after MaxLeases: state %s, error %q; want failed, not dialed after 2 tries", a.State, a.Error)
	}
}

func unique(xs []string) []string {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return slices.Compact(ys)
}

// recordingProvider accepts every call and records its destination.
type recordingProvider struct {
	mu    sync.Mutex
	calls []string
}

func (p *recordingProvider) Name() string { return "recording" }
func (p *recordingProvider) Inventory(context.Context) ([]telephony.Number, error) {
	return nil, nil
}
func (p *recordingProvider) Purchase(context.Context, string) error { return nil }
func (p *recordingProvider) Release(context.Context, string) error  { return nil }
func (p *recordingProvider) Place(_ context.Context, req telephony.PlaceRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, req.To)
	return nil
}
func (p *recordingProvider) Hangup(context.Context, string) error { return nil }
func (p *recordingProvider) Close() error                         { return nil }

func (p *recordingProvider) placed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}
