package storetest

import (
	"fmt"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// newListener is a listener endpoint (no URL) of orgID expiring at expires.
func newListener(orgID string, expires time.Time, events ...string) store.Webhook {
	w := newWebhook(orgID, t0, events...)
	w.Kind, w.URL, w.ExpiresAt = store.WebhookListener, "", expires
	return w
}

// claimListener claims a listener's messages at now, failing on an error.
func claimListener(t *testing.T, s store.Store, step, orgID, webhookID string, now time.Time) []store.OutboxMessage {
	t.Helper()
	ms, err := s.ClaimListener(t.Context(), orgID, webhookID, now, lease, 100)
	must(t, step+": ClaimListener", err)
	return ms
}

// testListeners: a listener endpoint's messages are claimed only by
// ClaimListener, for that endpoint of that organization; renewed, it
// lives; idle past its expiry, ExpireListeners deletes it and drops its
// undelivered messages, and never touches an HTTP endpoint.
func testListeners(t *testing.T, open Opener) {
	s, ctx := open(t), t.Context()
	o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
	hook := mustWebhook(t, s, o.ID, evEnded)
	lis := newListener(o.ID, at(10*time.Minute), evEnded)
	foreign := newListener(other.ID, at(30*time.Minute), evEnded)
	for _, w := range []store.Webhook{lis, foreign} {
		must(t, fmt.Sprintf("CreateWebhook(listener %s)", w.ID), s.CreateWebhook(ctx, w))
	}
	got, err := s.GetWebhook(ctx, o.ID, lis.ID)
	must(t, "GetWebhook(listener)", err)
	equal(t, "GetWebhook(listener)", normWebhook(got), normWebhook(lis))
	got, err = s.GetWebhook(ctx, o.ID, hook.ID)
	must(t, "GetWebhook(http)", err)
	if got.Kind != store.WebhookHTTP || !got.ExpiresAt.IsZero() {
		t.Errorf("GetWebhook(endpoint created without a kind) = kind %q, expires %v; want %q, never", got.Kind, got.ExpiresAt, store.WebhookHTTP)
	}

	ev := newEvent(evEnded, at(time.Second))
	must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
	evo := newEvent(evEnded, at(time.Second))
	must(t, "QueueEvent(other org)", s.QueueEvent(ctx, other.ID, evo, evo.At))

	// The dispatcher never takes a listener's message.
	ms := claimOutbox(t, s, ev.At, 100)
	sameIDs(t, "ClaimOutbox with a listener subscribed: endpoints of the messages claimed", endpoints(ms), []string{hook.ID})

	for _, c := range []struct{ name, org, webhook string }{
		{"another organization's listener", o.ID, foreign.ID},
		{"a listener, named by another organization", other.ID, lis.ID},
		{"an HTTP endpoint", o.ID, hook.ID},
		{"an unknown id", o.ID, id.New(id.Webhook)},
	} {
		ms, err := s.ClaimListener(ctx, c.org, c.webhook, ev.At, lease, 100)
		if wantKind(t, "ClaimListener("+c.name+")", err, apperr.NotFound) && len(ms) != 0 {
			t.Errorf("ClaimListener(%s) claimed %v", c.name, msgIDs(ms))
		}
	}

	ms = claimListener(t, s, "first claim", o.ID, lis.ID, ev.At)
	if len(ms) != 1 {
		t.Fatalf("ClaimListener(listener, now %v) claimed %d messages %v; want its one", ev.At, len(ms), msgIDs(ms))
	}
	wantMessage(t, "ClaimListener", ms[0], lis, ev, 0)
	if again := claimListener(t, s, "while leased", o.ID, lis.ID, ev.At.Add(lease-time.Millisecond)); len(again) != 0 {
		t.Errorf("ClaimListener while its message is leased claimed %v; want none", msgIDs(again))
	}
	// A stream that went away leaves the message to the next one, after the lease.
	again := claimListener(t, s, "after the lease", o.ID, lis.ID, ev.At.Add(lease+time.Millisecond))
	if len(again) != 1 || again[0].ID != ms[0].ID {
		t.Fatalf("ClaimListener after the lease lapsed claimed %v; want %s again", msgIDs(again), ms[0].ID)
	}
	d := delivery(again[0], 1, 0, ev.At.Add(lease+time.Second))
	must(t, "RecordDelivery(listener, delivered)", s.RecordDelivery(ctx, again[0], d, store.OutboxDelivered, d.At))
	if left := claimListener(t, s, "after delivery", o.ID, lis.ID, at(time.Hour)); len(left) != 0 {
		t.Errorf("ClaimListener after its message was delivered claimed %v; want none", msgIDs(left))
	}
	listDeliveries(t, s, o.ID, lis.ID, page(1, 10), []store.Delivery{d}, 1)
	fm := claimListener(t, s, "other org", other.ID, foreign.ID, evo.At)
	if len(fm) != 1 {
		t.Fatalf("ClaimListener(other org's listener) claimed %v; want its one message", msgIDs(fm))
	}
	wantMessage(t, "ClaimListener(other org)", fm[0], foreign, evo, 0)

	// Renewal: only the organization's own live listener.
	wantKind(t, "RenewListener(other org)", s.RenewListener(ctx, other.ID, lis.ID, at(20*time.Minute)), apperr.NotFound)
	wantKind(t, "RenewListener(http endpoint)", s.RenewListener(ctx, o.ID, hook.ID, at(20*time.Minute)), apperr.NotFound)
	must(t, "RenewListener", s.RenewListener(ctx, o.ID, lis.ID, at(20*time.Minute)))
	lis.ExpiresAt = at(20 * time.Minute)
	got, err = s.GetWebhook(ctx, o.ID, lis.ID)
	must(t, "GetWebhook after RenewListener", err)
	equal(t, "GetWebhook after RenewListener", normWebhook(got), normWebhook(lis))

	// A message waiting when the listener expires is dropped with it.
	ev2 := newEvent(evEnded, at(2*time.Minute))
	ev2.CallID = "call_" + id.Random(8)
	must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev2, ev2.At))
	n, err := s.ExpireListeners(ctx, at(15*time.Minute))
	must(t, "ExpireListeners before any expiry", err)
	if n != 0 {
		t.Errorf("ExpireListeners(15 min) = %d; want 0 (the listener was renewed to 20 min, the other's is 30)", n)
	}
	n, err = s.ExpireListeners(ctx, at(25*time.Minute))
	must(t, "ExpireListeners", err)
	if n != 1 {
		t.Errorf("ExpireListeners(25 min) = %d; want 1", n)
	}
	_, err = s.GetWebhook(ctx, o.ID, lis.ID)
	wantKind(t, "GetWebhook(expired listener)", err, apperr.NotFound)
	_, err = s.ClaimListener(ctx, o.ID, lis.ID, at(26*time.Minute), lease, 10)
	wantKind(t, "ClaimListener(expired listener)", err, apperr.NotFound)
	wantKind(t, "RenewListener(expired listener)", s.RenewListener(ctx, o.ID, lis.ID, at(40*time.Minute)), apperr.NotFound)
	cms, err := s.ListCallMessages(ctx, o.ID, ev2.CallID, 10)
	must(t, "ListCallMessages", err)
	var states []string
	for _, m := range cms {
		if m.WebhookID == lis.ID {
			states = append(states, m.State)
		}
	}
	sameIDs(t, "states of the expired listener's waiting message", states, []string{store.OutboxFailed})
	for _, w := range []store.Webhook{hook, foreign} {
		if _, err := s.GetWebhook(ctx, w.OrgID, w.ID); err != nil {
			t.Errorf("GetWebhook(%s) after ExpireListeners: %v; want it kept (an HTTP endpoint, a listener not expired)", w.ID, err)
		}
	}
}
