package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// Event types used by the webhook tests.
const (
	evStarted  = "call.started"
	evEnded    = "call.ended"
	evAnalysis = "call.analysis.ready"
)

// lease is the outbox and analysis lease the tests claim with.
const lease = 2 * time.Minute

func newWebhook(orgID string, created time.Time, events ...string) store.Webhook {
	return store.Webhook{
		ID:        id.New(id.Webhook),
		OrgID:     orgID,
		URL:       "https://hooks.example.com/" + id.Random(4),
		Events:    events,
		Secrets:   []string{"whsec_" + id.Random(16)},
		CreatedAt: created,
	}
}

// mustWebhook stores an endpoint created at t0 subscribed to events.
func mustWebhook(t *testing.T, s store.Store, orgID string, events ...string) store.Webhook {
	t.Helper()
	w := newWebhook(orgID, t0, events...)
	must(t, fmt.Sprintf("CreateWebhook(%s)", w.ID), s.CreateWebhook(t.Context(), w))
	return w
}

func normWebhook(w store.Webhook) store.Webhook {
	w.Events, w.Secrets = nilIfEmpty(w.Events), nilIfEmpty(w.Secrets)
	w.CreatedAt, w.ExpiresAt = msTime(w.CreatedAt), msTime(w.ExpiresAt)
	if w.Kind == "" {
		w.Kind = store.WebhookHTTP
	}
	return w
}

func webhookIDs(ws []store.Webhook) []string {
	return ids(ws, func(w store.Webhook) string { return w.ID })
}

// newEvent is an event of type typ at the given time whose data names it.
func newEvent(typ string, at time.Time) event.Event {
	evID := id.New("evt")
	return event.Event{ID: evID, Type: typ, At: at, Data: []byte(`{"event":"` + evID + `","n":[1,2]}`)}
}

// envelope is the body a receiver gets for an event (docs/api.md, Events).
type envelope struct {
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// wantMessage checks a claimed message against the event ev queued for
// endpoint w (whose secrets are the current ones), in the given state and
// with the given attempts. The message id is the store's.
func wantMessage(t *testing.T, call string, m store.OutboxMessage, w store.Webhook, ev event.Event, attempts int) {
	t.Helper()
	if m.ID == "" || m.OrgID != w.OrgID || m.WebhookID != w.ID || m.URL != w.URL || !slices.Equal(m.Secrets, w.Secrets) ||
		m.Type != ev.Type || m.State != store.OutboxPending || m.Attempts != attempts || !m.CreatedAt.Equal(msTime(ev.At)) {
		t.Errorf("%s: message %s = {org %s, endpoint %s, url %s, secrets %v, type %s, state %s, attempts %d, created %v};\n"+
			" want {org %s, endpoint %s, url %s, secrets %v, type %s, state %s, attempts %d, created %v}",
			call, m.ID, m.OrgID, m.WebhookID, m.URL, m.Secrets, m.Type, m.State, m.Attempts, m.CreatedAt,
			w.OrgID, w.ID, w.URL, w.Secrets, ev.Type, store.OutboxPending, attempts, msTime(ev.At))
	}
	var got envelope
	if err := json.Unmarshal(m.Payload, &got); err != nil {
		t.Errorf("%s: message %s payload %q is not a JSON envelope: %v", call, m.ID, m.Payload, err)
		return
	}
	var data bytes.Buffer
	if err := json.Compact(&data, got.Data); err != nil {
		t.Errorf("%s: message %s payload data %q is not JSON: %v", call, m.ID, got.Data, err)
		return
	}
	want := envelope{Type: ev.Type, Timestamp: ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), Data: ev.Data}
	if got.Type != want.Type || got.Timestamp != want.Timestamp || data.String() != string(want.Data) {
		t.Errorf("%s: message %s payload = {type %s, timestamp %s, data %s}; want {type %s, timestamp %s, data %s}",
			call, m.ID, got.Type, got.Timestamp, data.String(), want.Type, want.Timestamp, want.Data)
	}
}

// claimOutbox claims with ClaimOutbox, failing the test on an error.
func claimOutbox(t *testing.T, s store.Store, now time.Time, limit int) []store.OutboxMessage {
	t.Helper()
	ms, err := s.ClaimOutbox(t.Context(), now, lease, limit)
	must(t, fmt.Sprintf("ClaimOutbox(now %v, lease %v, limit %d)", now, lease, limit), err)
	return ms
}

// claimNone checks that ClaimOutbox at now claims nothing.
func claimNone(t *testing.T, s store.Store, step string, now time.Time) {
	t.Helper()
	if ms := claimOutbox(t, s, now, 100); len(ms) != 0 {
		t.Errorf("%s: ClaimOutbox(now %v) claimed %d message(s) %v; want none", step, now, len(ms), msgIDs(ms))
	}
}

// claimOne claims at now and checks that exactly one message was claimed.
func claimOne(t *testing.T, s store.Store, step string, now time.Time) store.OutboxMessage {
	t.Helper()
	ms := claimOutbox(t, s, now, 100)
	if len(ms) != 1 {
		t.Fatalf("%s: ClaimOutbox(now %v) claimed %d message(s) %v; want 1", step, now, len(ms), msgIDs(ms))
	}
	return ms[0]
}

func msgIDs(ms []store.OutboxMessage) []string {
	return ids(ms, func(m store.OutboxMessage) string { return m.ID })
}

// byEndpoint indexes claimed messages by endpoint, failing on two messages
// for one endpoint.
func byEndpoint(t *testing.T, call string, ms []store.OutboxMessage) map[string]store.OutboxMessage {
	t.Helper()
	out := map[string]store.OutboxMessage{}
	for _, m := range ms {
		if _, dup := out[m.WebhookID]; dup {
			t.Errorf("%s: two messages for endpoint %s", call, m.WebhookID)
		}
		out[m.WebhookID] = m
	}
	return out
}

// endpoints lists the endpoint ids of claimed messages.
func endpoints(ms []store.OutboxMessage) []string {
	return ids(ms, func(m store.OutboxMessage) string { return m.WebhookID })
}

// delivery is the record of attempt n of m, finished at.
func delivery(m store.OutboxMessage, n, status int, at time.Time) store.Delivery {
	d := store.Delivery{ID: id.New(id.Delivery), MessageID: m.ID, WebhookID: m.WebhookID, OrgID: m.OrgID, Type: m.Type,
		Attempt: n, Status: status, Duration: 1234*time.Millisecond + 567*time.Microsecond, At: at}
	if status/100 != 2 {
		d.Response, d.Error = "boom", fmt.Sprintf("endpoint answered %d", status)
	}
	return d
}

func normDelivery(d store.Delivery) store.Delivery {
	d.Duration = d.Duration.Truncate(time.Millisecond)
	d.At = msTime(d.At)
	return d
}

// listDeliveries checks one page of an endpoint's delivery log.
func listDeliveries(t *testing.T, s store.Store, orgID, webhookID string, p store.Page, want []store.Delivery, wantTotal int) {
	t.Helper()
	got, total, err := s.ListDeliveries(t.Context(), orgID, webhookID, p)
	call := fmt.Sprintf("ListDeliveries(%s, %s)", webhookID, describePage(p))
	must(t, call, err)
	equal(t, call, norm(got, normDelivery), norm(want, normDelivery))
	if total != wantTotal {
		t.Errorf("%s: total = %d; want %d", call, total, wantTotal)
	}
}

func testWebhooks(t *testing.T, open Opener) {
	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w1 := newWebhook(o.ID, at(time.Second+300*time.Microsecond), evEnded)
		w2 := newWebhook(o.ID, at(2*time.Second), evStarted, evEnded, evAnalysis)
		w2.Secrets = []string{"whsec_new", "whsec_old"}
		wo := newWebhook(other.ID, at(time.Second), evEnded)
		for _, w := range []store.Webhook{w2, wo, w1} {
			must(t, fmt.Sprintf("CreateWebhook(%s)", w.ID), s.CreateWebhook(ctx, w))
		}

		for _, w := range []store.Webhook{w1, w2} {
			got, err := s.GetWebhook(ctx, o.ID, w.ID)
			must(t, "GetWebhook", err)
			equal(t, fmt.Sprintf("GetWebhook(%s)", w.ID), normWebhook(got), normWebhook(w))
			_, err = s.GetWebhook(ctx, other.ID, w.ID)
			wantKind(t, fmt.Sprintf("GetWebhook(other org, %s)", w.ID), err, apperr.NotFound)
		}
		_, err := s.GetWebhook(ctx, o.ID, id.New(id.Webhook))
		wantKind(t, "GetWebhook(unknown id)", err, apperr.NotFound)

		list, err := s.ListWebhooks(ctx, o.ID)
		must(t, "ListWebhooks", err)
		equal(t, "ListWebhooks(org) (oldest first)", norm(list, normWebhook), norm([]store.Webhook{w1, w2}, normWebhook))
		list, err = s.ListWebhooks(ctx, other.ID)
		must(t, "ListWebhooks(other org)", err)
		equal(t, "ListWebhooks(other org)", norm(list, normWebhook), norm([]store.Webhook{wo}, normWebhook))
		list, err = s.ListWebhooks(ctx, id.New(id.Org))
		must(t, "ListWebhooks(org without endpoints)", err)
		if len(list) != 0 {
			t.Errorf("ListWebhooks(org without endpoints) = %v; want none", webhookIDs(list))
		}
	})

	t.Run("RotateSecrets", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, evEnded)
		orig := w

		wantKind(t, "UpdateWebhookSecrets(other org, id)", s.UpdateWebhookSecrets(ctx, other.ID, w.ID, []string{"whsec_evil"}), apperr.NotFound)
		wantKind(t, "UpdateWebhookSecrets(unknown id)", s.UpdateWebhookSecrets(ctx, o.ID, id.New(id.Webhook), []string{"whsec_x"}), apperr.NotFound)
		got, err := s.GetWebhook(ctx, o.ID, w.ID)
		must(t, "GetWebhook", err)
		equal(t, "GetWebhook after refused UpdateWebhookSecrets (must be unchanged)", normWebhook(got), normWebhook(orig))

		w.Secrets = []string{"whsec_second", orig.Secrets[0]}
		must(t, "UpdateWebhookSecrets", s.UpdateWebhookSecrets(ctx, o.ID, w.ID, w.Secrets))
		got, err = s.GetWebhook(ctx, o.ID, w.ID)
		must(t, "GetWebhook", err)
		equal(t, "GetWebhook after UpdateWebhookSecrets", normWebhook(got), normWebhook(w))

		// A message already queued is signed with the current secrets.
		ev := newEvent(evEnded, at(time.Second))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		w.Secrets = []string{"whsec_third", "whsec_second"}
		must(t, "UpdateWebhookSecrets", s.UpdateWebhookSecrets(ctx, o.ID, w.ID, w.Secrets))
		m := claimOne(t, s, "after a rotation", ev.At)
		wantMessage(t, "ClaimOutbox after a rotation", m, w, ev, 0)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		gone := mustWebhook(t, s, o.ID, evEnded)
		kept := mustWebhook(t, s, o.ID, evEnded)

		// A delivered message, and one pending, before the delete.
		ev1 := newEvent(evEnded, at(time.Second))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev1, ev1.At))
		ms := byEndpoint(t, "ClaimOutbox", claimOutbox(t, s, ev1.At, 10))
		m := ms[gone.ID]
		d := delivery(m, 1, 200, at(2*time.Second))
		must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, m, d, store.OutboxDelivered, d.At))
		dk := delivery(ms[kept.ID], 1, 200, d.At)
		must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, ms[kept.ID], dk, store.OutboxDelivered, d.At))
		ev2 := newEvent(evEnded, at(3*time.Second))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev2, ev2.At))

		wantKind(t, "DeleteWebhook(other org, id)", s.DeleteWebhook(ctx, other.ID, gone.ID, at(4*time.Second)), apperr.NotFound)
		wantKind(t, "DeleteWebhook(unknown id)", s.DeleteWebhook(ctx, o.ID, id.New(id.Webhook), at(4*time.Second)), apperr.NotFound)
		if _, err := s.GetWebhook(ctx, o.ID, gone.ID); err != nil {
			t.Fatalf("GetWebhook after refused DeleteWebhooks: %v; want the endpoint still there", err)
		}

		must(t, "DeleteWebhook", s.DeleteWebhook(ctx, o.ID, gone.ID, at(4*time.Second)))
		_, err := s.GetWebhook(ctx, o.ID, gone.ID)
		wantKind(t, "GetWebhook after DeleteWebhook", err, apperr.NotFound)
		list, err := s.ListWebhooks(ctx, o.ID)
		must(t, "ListWebhooks", err)
		sameIDs(t, "ListWebhooks after DeleteWebhook", webhookIDs(list), []string{kept.ID})
		wantKind(t, "DeleteWebhook(again)", s.DeleteWebhook(ctx, o.ID, gone.ID, at(5*time.Second)), apperr.NotFound)
		wantKind(t, "UpdateWebhookSecrets(deleted endpoint)", s.UpdateWebhookSecrets(ctx, o.ID, gone.ID, []string{"whsec_x"}), apperr.NotFound)
		_, _, err = s.ListDeliveries(ctx, o.ID, gone.ID, page(1, 10))
		wantKind(t, "ListDeliveries(deleted endpoint)", err, apperr.NotFound)

		// Its pending message is dropped, it gets no new event, and its
		// messages cannot be sent again; the other endpoint is untouched.
		ev3 := newEvent(evEnded, at(5*time.Second))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev3, ev3.At))
		wantKind(t, "Redeliver(message of a deleted endpoint)", s.Redeliver(ctx, o.ID, gone.ID, m.ID, at(6*time.Second)), apperr.NotFound)
		got := claimOutbox(t, s, at(time.Hour), 100)
		sameIDs(t, "ClaimOutbox after DeleteWebhook: endpoints of the messages claimed", endpoints(got), []string{kept.ID, kept.ID})
		listDeliveries(t, s, o.ID, kept.ID, page(1, 10), []store.Delivery{dk}, 1)
	})

	t.Run("QueueEventFanOut", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		both := mustWebhook(t, s, o.ID, evStarted, evEnded)
		ended := mustWebhook(t, s, o.ID, evEnded)
		mustWebhook(t, s, o.ID, evStarted)
		deleted := mustWebhook(t, s, o.ID, evEnded)
		must(t, "DeleteWebhook", s.DeleteWebhook(ctx, o.ID, deleted.ID, t0))
		foreign := mustWebhook(t, s, other.ID, evEnded)

		ev := newEvent(evEnded, at(time.Second+700*time.Microsecond))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		// Nobody subscribes to this type; an org without endpoints gets nothing.
		must(t, "QueueEvent(unsubscribed type)", s.QueueEvent(ctx, o.ID, newEvent(evAnalysis, ev.At), ev.At))
		must(t, "QueueEvent(org without endpoints)", s.QueueEvent(ctx, id.New(id.Org), newEvent(evEnded, ev.At), ev.At))

		got := claimOutbox(t, s, ev.At, 100)
		call := fmt.Sprintf("ClaimOutbox after QueueEvent(%s)", ev.Type)
		sameIDSet(t, call+": endpoints", endpoints(got), []string{both.ID, ended.ID})
		ms := byEndpoint(t, call, got)
		for _, w := range []store.Webhook{both, ended} {
			if m, ok := ms[w.ID]; ok {
				wantMessage(t, call, m, w, ev, 0)
			}
		}
		if len(got) == 2 && got[0].ID == got[1].ID {
			t.Errorf("%s: both endpoints' messages have id %s; want one message per endpoint", call, got[0].ID)
		}

		evo := newEvent(evEnded, at(2*time.Second))
		must(t, "QueueEvent(other org)", s.QueueEvent(ctx, other.ID, evo, evo.At))
		m := claimOne(t, s, "after QueueEvent(other org)", evo.At)
		wantMessage(t, "ClaimOutbox after QueueEvent(other org)", m, foreign, evo, 0)
	})

	t.Run("UpdateCallQueuesEvents", func(t *testing.T) {
		// Call events are queued in the call update's transaction: if and
		// only if the update is stored.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		w := mustWebhook(t, s, o.ID, evStarted, evEnded)
		c := mustCall(t, s, newCall(o.ID, call.Web, t0))

		c.Status, c.StartedAt, c.UpdatedAt = call.InProgress, at(time.Second), at(time.Second)
		refused := newEvent(evStarted, c.UpdatedAt)
		wantKind(t, "UpdateCall(stale prev status, with an event)", s.UpdateCall(ctx, c, call.Ringing, refused), apperr.Conflict)
		claimNone(t, s, "after a refused UpdateCall with an event", at(time.Hour))

		started := newEvent(evStarted, c.UpdatedAt)
		must(t, "UpdateCall(queued → in progress)", s.UpdateCall(ctx, c, call.Queued, started))
		m := claimOne(t, s, "after UpdateCall with an event", c.UpdatedAt)
		wantMessage(t, "ClaimOutbox after UpdateCall", m, w, started, 0)
	})

	t.Run("ClaimLease", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		w := mustWebhook(t, s, o.ID, evEnded)
		for i := range 5 {
			ev := newEvent(evEnded, at(time.Duration(i)*time.Second))
			must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		}
		later := newEvent(evEnded, at(time.Hour))
		must(t, "QueueEvent(due in an hour)", s.QueueEvent(ctx, o.ID, later, later.At))

		now := at(time.Minute)
		first := claimOutbox(t, s, now, 2)
		if len(first) != 2 {
			t.Fatalf("ClaimOutbox(limit 2) of 5 due = %d messages; want 2", len(first))
		}
		rest := claimOutbox(t, s, now, 10)
		due := append(msgIDs(first), msgIDs(rest)...)
		if len(due) != 5 || len(rest) != 3 {
			t.Fatalf("ClaimOutbox(limit 10) after claiming 2 of 5 = %d messages; want the 3 others (the one due in an hour is not due)", len(rest))
		}
		if dup := duplicates(due); len(dup) > 0 {
			t.Errorf("ClaimOutbox claimed %v twice within one lease", dup)
		}
		claimNone(t, s, "all due messages leased", now)
		claimNone(t, s, "just before the lease ends", now.Add(lease-time.Millisecond))
		again := claimOutbox(t, s, now.Add(lease+time.Millisecond), 10)
		sameIDSet(t, "ClaimOutbox after the lease expired", msgIDs(again), due)
		for _, m := range again {
			if m.Attempts != 0 {
				t.Errorf("ClaimOutbox after an expired lease: message %s attempts = %d; want 0 (a lease is not an attempt)", m.ID, m.Attempts)
			}
		}
		for _, m := range again {
			d := delivery(m, 1, 200, now.Add(lease+time.Second))
			must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, m, d, store.OutboxDelivered, d.At))
		}
		claimNone(t, s, "the due messages delivered, the later one not yet due", later.At.Add(-time.Millisecond))
		m := claimOne(t, s, "when the later message is due", later.At)
		wantMessage(t, "ClaimOutbox when the later message is due", m, w, later, 0)
	})

	t.Run("RecordDelivery", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		w := mustWebhook(t, s, o.ID, evEnded)
		ev := newEvent(evEnded, t0)
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		m := claimOne(t, s, "queued", t0)

		// A failed attempt, retried in 10 s: due again then, although its
		// lease would run for 2 minutes.
		d1 := delivery(m, 1, 500, at(time.Second))
		retry := d1.At.Add(10 * time.Second)
		must(t, "RecordDelivery(500, pending, retry in 10 s)", s.RecordDelivery(ctx, m, d1, store.OutboxPending, retry))
		listDeliveries(t, s, o.ID, w.ID, page(1, 10), []store.Delivery{d1}, 1)
		claimNone(t, s, "before the retry is due", retry.Add(-time.Millisecond))
		m2 := claimOne(t, s, "when the retry is due", retry)
		wantMessage(t, "ClaimOutbox of the retry", m2, w, ev, 1)
		if m2.ID != m.ID {
			t.Errorf("ClaimOutbox of the retry = message %s; want the same message %s", m2.ID, m.ID)
		}

		// Delivered: never claimed again, and logged newest first.
		d2 := delivery(m2, 2, 204, retry.Add(time.Second))
		must(t, "RecordDelivery(204, delivered)", s.RecordDelivery(ctx, m2, d2, store.OutboxDelivered, d2.At))
		claimNone(t, s, "after delivery", at(24*time.Hour))
		listDeliveries(t, s, o.ID, w.ID, page(1, 10), []store.Delivery{d2, d1}, 2)

		// Failed for good: never claimed again.
		ev2 := newEvent(evEnded, at(time.Hour))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev2, ev2.At))
		f := claimOne(t, s, "second message", ev2.At)
		d3 := delivery(f, 1, 0, at(time.Hour+time.Second))
		must(t, "RecordDelivery(failed)", s.RecordDelivery(ctx, f, d3, store.OutboxFailed, d3.At))
		claimNone(t, s, "after a final failure", at(48*time.Hour))
		listDeliveries(t, s, o.ID, w.ID, page(1, 10), []store.Delivery{d3, d2, d1}, 3)
	})

	t.Run("CallMessages", func(t *testing.T) {
		// The messages of a call's events are listed with the call,
		// oldest first, with their delivery state; another call's,
		// another organization's and events of no call are not.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, evEnded)
		mustWebhook(t, s, other.ID, evEnded)
		ev1, ev2, noCall, elsewhere := newEvent(evEnded, t0), newEvent(evEnded, at(time.Second)), newEvent(evEnded, at(2*time.Second)), newEvent(evEnded, at(3*time.Second))
		ev1.CallID, ev2.CallID, elsewhere.CallID = "call_one", "call_one", "call_two"
		for _, ev := range []event.Event{ev1, ev2, noCall, elsewhere} {
			must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		}
		theirs := newEvent(evEnded, at(4*time.Second))
		theirs.CallID = "call_one"
		must(t, "QueueEvent(other org)", s.QueueEvent(ctx, other.ID, theirs, theirs.At))

		m := claimOne(t, s, "the first message", t0)
		must(t, "RecordDelivery(503, pending)", s.RecordDelivery(ctx, m, delivery(m, 1, 503, at(time.Millisecond)), store.OutboxPending, at(time.Minute)))
		got, err := s.ListCallMessages(ctx, o.ID, "call_one", 10)
		must(t, "ListCallMessages", err)
		if len(got) != 2 || got[0].ID != m.ID || got[0].WebhookID != w.ID || got[0].URL != w.URL || got[0].Type != evEnded ||
			got[0].Attempts != 1 || got[0].LastStatus != 503 || got[0].State != store.OutboxPending || !got[0].CreatedAt.Equal(msTime(ev1.At)) ||
			got[1].Attempts != 0 || !got[1].CreatedAt.Equal(msTime(ev2.At)) {
			t.Errorf("ListCallMessages(call_one) = %+v; want its two messages, the first tried once (503)", got)
		}
		if got, err := s.ListCallMessages(ctx, o.ID, "call_one", 1); err != nil || len(got) != 1 {
			t.Errorf("ListCallMessages(limit 1) = %d messages, %v; want 1", len(got), err)
		}
		if got, err := s.ListCallMessages(ctx, other.ID, "call_two", 10); err != nil || len(got) != 0 {
			t.Errorf("ListCallMessages(another organization, call_two) = %+v, %v; want none", got, err)
		}
		if got, err := s.ListCallMessages(ctx, o.ID, "", 10); err != nil || len(got) != 0 {
			t.Errorf("ListCallMessages(no call) = %+v, %v; want none", got, err)
		}
	})

	t.Run("ListDeliveries", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, evStarted, evEnded)
		sibling := mustWebhook(t, s, o.ID, evEnded)
		foreign := mustWebhook(t, s, other.ID, evEnded)
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, newEvent(evStarted, t0), t0))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, newEvent(evEnded, t0), t0))
		must(t, "QueueEvent", s.QueueEvent(ctx, other.ID, newEvent(evEnded, t0), t0))
		ms := claimOutbox(t, s, t0, 10)
		if len(ms) != 4 {
			t.Fatalf("ClaimOutbox = %d messages; want 4 (2 for %s, 1 for %s, 1 for %s)", len(ms), w.ID, sibling.ID, foreign.ID)
		}
		// d[i] is attempt i+1 of one of w's messages, at t0+i s (logged
		// out of order); the sibling and the foreign endpoint log one each.
		var d []store.Delivery
		var mine []store.OutboxMessage
		for _, m := range ms {
			switch m.WebhookID {
			case w.ID:
				mine = append(mine, m)
			default:
				must(t, "RecordDelivery", s.RecordDelivery(ctx, m, delivery(m, 1, 500, at(3*time.Second)), store.OutboxPending, at(time.Hour)))
			}
		}
		if len(mine) != 2 {
			t.Fatalf("ClaimOutbox = %d messages for %s; want 2", len(mine), w.ID)
		}
		for i := range 5 {
			m := mine[i%2]
			d = append(d, delivery(m, i/2+1, 500, at(time.Duration(i)*time.Second+time.Duration(i)*100*time.Microsecond)))
		}
		for _, i := range []int{2, 0, 4, 1, 3} {
			must(t, "RecordDelivery", s.RecordDelivery(ctx, mine[i%2], d[i], store.OutboxPending, at(time.Hour)))
		}
		newest := func(xs ...store.Delivery) []store.Delivery { out := slices.Clone(xs); slices.Reverse(out); return out }
		listDeliveries(t, s, o.ID, w.ID, page(1, 10), newest(d...), 5)
		listDeliveries(t, s, o.ID, w.ID, page(1, 2), newest(d[3:]...), 5)
		listDeliveries(t, s, o.ID, w.ID, page(2, 2), newest(d[1:3]...), 5)
		listDeliveries(t, s, o.ID, w.ID, page(3, 2), newest(d[0]), 5)
		listDeliveries(t, s, o.ID, w.ID, page(4, 2), nil, 5)
		got, _, err := s.ListDeliveries(ctx, o.ID, sibling.ID, page(1, 10))
		must(t, "ListDeliveries(sibling)", err)
		if len(got) != 1 || got[0].WebhookID != sibling.ID {
			t.Errorf("ListDeliveries(sibling endpoint) = %+v; want its one delivery", got)
		}

		_, _, err = s.ListDeliveries(ctx, other.ID, w.ID, page(1, 10))
		wantKind(t, "ListDeliveries(other org, endpoint)", err, apperr.NotFound)
		_, _, err = s.ListDeliveries(ctx, o.ID, foreign.ID, page(1, 10))
		wantKind(t, "ListDeliveries(org, the other org's endpoint)", err, apperr.NotFound)
		_, _, err = s.ListDeliveries(ctx, o.ID, id.New(id.Webhook), page(1, 10))
		wantKind(t, "ListDeliveries(unknown endpoint)", err, apperr.NotFound)
	})

	t.Run("Redeliver", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, evEnded)
		sibling := mustWebhook(t, s, o.ID, evStarted)
		foreign := mustWebhook(t, s, other.ID, evEnded)
		evs := []event.Event{newEvent(evEnded, t0), newEvent(evEnded, at(time.Millisecond)), newEvent(evEnded, at(2*time.Millisecond))}
		for _, ev := range evs {
			must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		}
		must(t, "QueueEvent(other org)", s.QueueEvent(ctx, other.ID, newEvent(evEnded, t0), t0))
		ms := claimOutbox(t, s, at(time.Second), 10)
		if len(ms) != 4 {
			t.Fatalf("ClaimOutbox = %d messages; want 4", len(ms))
		}
		var mine []store.OutboxMessage
		var theirs store.OutboxMessage
		eventOf := map[string]event.Event{} // message id → its event
		for _, m := range ms {
			if m.WebhookID == foreign.ID {
				theirs = m
				continue
			}
			mine = append(mine, m)
			for _, ev := range evs {
				if m.CreatedAt.Equal(msTime(ev.At)) {
					eventOf[m.ID] = ev
				}
			}
		}
		if len(mine) != 3 || len(eventOf) != 3 {
			t.Fatalf("ClaimOutbox = %d messages for %s, %d of them matching the events; want 3", len(mine), w.ID, len(eventOf))
		}
		// One delivered, one failed for good, one waiting for a retry in a day.
		delivered, failed, waiting := mine[0], mine[1], mine[2]
		rec := at(2 * time.Second)
		must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, delivered, delivery(delivered, 1, 200, rec), store.OutboxDelivered, rec))
		must(t, "RecordDelivery(failed)", s.RecordDelivery(ctx, failed, delivery(failed, 8, 500, rec), store.OutboxFailed, rec))
		must(t, "RecordDelivery(retry)", s.RecordDelivery(ctx, waiting, delivery(waiting, 3, 500, rec), store.OutboxPending, at(24*time.Hour)))
		must(t, "RecordDelivery(other org)", s.RecordDelivery(ctx, theirs, delivery(theirs, 1, 200, rec), store.OutboxDelivered, rec))

		// Refused: another org, an unknown message, another endpoint's
		// message, an unknown endpoint. Nothing is queued.
		now := at(time.Minute)
		wantKind(t, "Redeliver(other org, endpoint, message)", s.Redeliver(ctx, other.ID, w.ID, delivered.ID, now), apperr.NotFound)
		wantKind(t, "Redeliver(org, the other org's endpoint and message)", s.Redeliver(ctx, o.ID, foreign.ID, theirs.ID, now), apperr.NotFound)
		wantKind(t, "Redeliver(unknown message)", s.Redeliver(ctx, o.ID, w.ID, id.New(id.Message), now), apperr.NotFound)
		wantKind(t, "Redeliver(message of another endpoint)", s.Redeliver(ctx, o.ID, sibling.ID, delivered.ID, now), apperr.NotFound)
		wantKind(t, "Redeliver(unknown endpoint)", s.Redeliver(ctx, o.ID, id.New(id.Webhook), delivered.ID, now), apperr.NotFound)
		claimNone(t, s, "after refused Redelivers", now)

		// Each is queued for now, whatever its state; attempts go on counting.
		for _, m := range []store.OutboxMessage{delivered, failed, waiting} {
			must(t, fmt.Sprintf("Redeliver(%s)", m.ID), s.Redeliver(ctx, o.ID, w.ID, m.ID, now))
		}
		claimNone(t, s, "before the redelivery time", now.Add(-time.Millisecond))
		again := claimOutbox(t, s, now, 10)
		sameIDSet(t, "ClaimOutbox after Redeliver of a delivered, a failed and a waiting message", msgIDs(again), msgIDs(mine))
		attempts := map[string]int{delivered.ID: 1, failed.ID: 8, waiting.ID: 3}
		for _, m := range again {
			if ev, ok := eventOf[m.ID]; ok {
				wantMessage(t, "ClaimOutbox after Redeliver", m, w, ev, attempts[m.ID])
			}
		}
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		claimOutboxRace(t, s, s)
	})
	t.Run("RaceRedeliverDelete", func(t *testing.T) { raceRedeliverDelete(t, open) })
}

// duplicates lists the ids that appear more than once.
func duplicates(xs []string) []string {
	seen := map[string]int{}
	var out []string
	for _, x := range xs {
		if seen[x]++; seen[x] == 2 {
			out = append(out, x)
		}
	}
	return out
}
