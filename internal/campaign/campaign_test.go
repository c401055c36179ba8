package campaign

import (
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/telephony"
)

// TestCreateDueInEachContactsHours: at 12:00 UTC, with hours 09:00–17:00,
// a contact in Asia/Kolkata (17:30 there) is due at 09:00 Kolkata the next
// day, a contact in America/Los_Angeles (04:00 there) at 09:00 Los Angeles
// that day, and one with no timezone, read in the schedule's (UTC), at its
// date. Each keeps its date as its requested time.
func TestCreateDueInEachContactsHours(t *testing.T) {
	b := setup(t, Config{})
	zones := []string{"Asia/Kolkata", "America/Los_Angeles", ""}
	var cs []phone.Contact
	for i, z := range zones {
		cs = append(cs, phone.Contact{ID: id.New(id.Contact), OrgID: b.orgID, PurchaseID: b.purchase.ID, Name: "c",
			PhoneNumber: "+1415555200" + string(rune('0'+i)), Timezone: z, CreatedAt: b.clock})
	}
	created, _, err := b.store.AddContacts(t.Context(), b.orgID, b.purchase.ID, cs)
	must(t, err)
	hours := schedule.CallingHours{Start: "09:00", End: "17:00", Days: schedule.DefaultHours().Days}
	var ids []string
	for _, c := range created {
		ids = append(ids, c.ID)
	}
	sc, err := b.svc.Create(t.Context(), Request{OrgID: b.orgID, Name: "zones", PurchaseID: b.purchase.ID, Timezone: "UTC",
		Dates: []time.Time{b.clock}, ContactIDs: ids, Hours: &hours})
	must(t, err)
	_, as, err := b.store.GetSchedule(t.Context(), b.orgID, sc.ID)
	must(t, err)
	want := map[string]time.Time{
		ids[0]: time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC), // 09:00 IST on 2026-03-02
		ids[1]: time.Date(2026, 3, 1, 17, 0, 0, 0, time.UTC), // 09:00 PST on 2026-03-01
		ids[2]: b.clock,
	}
	for _, a := range as {
		if !a.DueAt.Equal(want[a.ContactID]) || !a.RequestedAt.Equal(b.clock) {
			t.Errorf("attempt of contact %s: requested %s due %s; want requested %s, due %s", a.ContactID, a.RequestedAt, a.DueAt, b.clock, want[a.ContactID])
		}
	}
	if got := b.promote(t); len(got) != 1 || got[0].ID != attemptOf(as, ids[2]) {
		t.Errorf("Promote() at 12:00 UTC enqueued %+v; want only the attempt of the contact read in UTC", got)
	}
}

func attemptOf(as []schedule.Attempt, contactID string) string {
	for _, a := range as {
		if a.ContactID == contactID {
			return a.ID
		}
	}
	return ""
}

// TestRetryCountsLeasesPerTry: an attempt whose first try took two leases
// (MaxLeases 2) ends busy and is retried: its retry is handed out (lease 3
// is the retry's first) and dialed, not given up; one attempt, two calls.
func TestRetryCountsLeasesPerTry(t *testing.T) {
	b := setup(t, Config{MaxLeases: 2})
	b.schedule(t, 1)
	b.promote(t)
	b.clock = b.clock.Add(DefaultDialLease)
	second := b.promote(t)
	if len(second) != 1 || second[0].Leases != 2 {
		t.Fatalf("Promote() after the lease ran out = %+v; want lease 2", second)
	}
	b.dial(t, second)
	a, _, err := b.store.GetAttempt(t.Context(), second[0].ID)
	must(t, err)
	ended := b.clock.Add(time.Second)
	b.svc.calls.HandleEvent(telephony.Event{CallID: a.CallID, Kind: telephony.Ended, Outcome: string(call.Busy), Reason: call.ReasonCustomerBusy, At: ended})
	a, _, err = b.store.GetAttempt(t.Context(), a.ID)
	must(t, err)
	if a.State != schedule.Pending || len(a.Tries) != 1 || !a.RequestedAt.Equal(ended.Add(15*time.Minute)) || a.LeaseBase != 2 {
		t.Fatalf("attempt after a busy end = %s, %d tries, requested %s, lease base %d; want pending, 1 try, requested 15 min after the end, base 2",
			a.State, len(a.Tries), a.RequestedAt, a.LeaseBase)
	}
	if got := b.promote(t); len(got) != 0 {
		t.Fatalf("Promote() before the retry is due enqueued %+v", got)
	}
	b.clock = a.DueAt
	retry := b.promote(t)
	if len(retry) != 1 || retry[0].Leases != 3 {
		t.Fatalf("Promote() at the retry's due time = %+v; want one job of lease 3", retry)
	}
	b.dial(t, retry)
	if got := b.provider.placed(); len(got) != 2 {
		t.Errorf("provider placed %v; want 2 calls (the try and its retry)", got)
	}
	a, _, err = b.store.GetAttempt(t.Context(), a.ID)
	must(t, err)
	if a.State != schedule.Dialed || len(a.AllTries()) != 2 {
		t.Errorf("attempt after its retry was dialed = %s with %d tries; want dialed, 2 tries", a.State, len(a.AllTries()))
	}
}
