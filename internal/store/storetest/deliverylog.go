package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"switchboard/internal/id"
	"switchboard/internal/store"
)

// testDeliveryLog: RecordDelivery stores what a webhook receiver answered
// whatever bytes the answer holds. PostgreSQL's TEXT refuses NUL and invalid
// UTF-8 that SQLite accepts; the contract is that the store keeps such text
// readable instead of failing, so a hostile receiver cannot keep a delivered
// message from reaching its final state.
func testDeliveryLog(t *testing.T, open Opener) {
	tests := []struct {
		name            string
		response, error string
		// wantResponse and wantError are what ListDeliveries must return.
		wantResponse, wantError string
	}{
		{"plain", "ok", "", "ok", ""},
		{"NUL", "accepted\x00id=42", "endpoint answered 500 B\x00d", "accepted\uFFFDid=42", "endpoint answered 500 B\uFFFDd"},
		{"invalid UTF-8", "re\xe7u \xff ok", "x\xc3", "re\uFFFDu \uFFFD ok", "x\uFFFD"},
		{"lone surrogate", "a\xed\xa0\x80b", "", "a\uFFFD\uFFFD\uFFFDb", ""},
		{"only NULs", "\x00\x00\x00", "\x00", "\uFFFD\uFFFD\uFFFD", "\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			m, w := claimLogMessage(t, s)
			d := store.Delivery{ID: id.New(id.Delivery), MessageID: m.ID, WebhookID: m.WebhookID, OrgID: m.OrgID, Type: m.Type,
				Attempt: 1, Status: 200, Response: tt.response, Error: tt.error, Duration: 12 * time.Millisecond, At: at(2 * time.Second)}
			desc := fmt.Sprintf("RecordDelivery(response %q, error %q)", tt.response, tt.error)
			must(t, desc, s.RecordDelivery(t.Context(), m, d, store.OutboxDelivered, at(2*time.Second)))

			got, total, err := s.ListDeliveries(t.Context(), w.OrgID, w.ID, store.Page{Page: 1, PageSize: 10})
			must(t, "ListDeliveries", err)
			if total != 1 || len(got) != 1 {
				t.Fatalf("after %s: ListDeliveries = %d of %d, want 1 of 1", desc, len(got), total)
			}
			if got[0].Response != tt.wantResponse || got[0].Error != tt.wantError {
				t.Errorf("after %s: ListDeliveries response %q, error %q; want %q, %q", desc, got[0].Response, got[0].Error, tt.wantResponse, tt.wantError)
			}
			if got[0].ID != d.ID || got[0].Status != 200 || got[0].Attempt != 1 {
				t.Errorf("after %s: ListDeliveries = %+v, want id %s, status 200, attempt 1", desc, got[0], d.ID)
			}
			// Delivered is final: not claimed again, even long after the lease.
			if again, err := s.ClaimOutbox(t.Context(), at(time.Hour), 2*time.Minute, 10); err != nil || len(again) != 0 {
				t.Errorf("after %s (delivered): ClaimOutbox an hour later = %d messages, %v; want none", desc, len(again), err)
			}
		})
	}

	t.Run("long answer", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		m, w := claimLogMessage(t, s)
		long := strings.Repeat("é", 100_000) // 200 KB
		d := store.Delivery{ID: id.New(id.Delivery), MessageID: m.ID, WebhookID: m.WebhookID, OrgID: m.OrgID, Type: m.Type,
			Attempt: 1, Status: 500, Response: long, Error: long, At: at(2 * time.Second)}
		must(t, "RecordDelivery(200 KB answer)", s.RecordDelivery(t.Context(), m, d, store.OutboxPending, at(time.Minute)))
		got, _, err := s.ListDeliveries(t.Context(), w.OrgID, w.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListDeliveries", err)
		if len(got) != 1 {
			t.Fatalf("ListDeliveries after RecordDelivery(200 KB answer) = %d deliveries, want 1", len(got))
		}
		for field, v := range map[string]string{"Response": got[0].Response, "Error": got[0].Error} {
			if len(v) > store.MaxDeliveryText || !utf8.ValidString(v) || !strings.HasPrefix(long, v) || len(v) < store.MaxDeliveryText-utf8.UTFMax {
				t.Errorf("RecordDelivery(200 KB %s) stored %d bytes (valid UTF-8 %v, a prefix %v); want a valid prefix of %d bytes at most, cut at a rune",
					field, len(v), utf8.ValidString(v), strings.HasPrefix(long, v), store.MaxDeliveryText)
			}
		}
		// Pending again at next: claimed then, not before.
		if early, err := s.ClaimOutbox(t.Context(), at(59*time.Second), 2*time.Minute, 10); err != nil || len(early) != 0 {
			t.Errorf("ClaimOutbox before the retry is due = %d messages, %v; want none", len(early), err)
		}
		if due, err := s.ClaimOutbox(t.Context(), at(time.Minute), 2*time.Minute, 10); err != nil || len(due) != 1 || due[0].Attempts != 1 {
			t.Errorf("ClaimOutbox when the retry is due = %+v, %v; want the message with 1 attempt", due, err)
		}
	})
}

// claimLogMessage stores an organization, an endpoint subscribed to call.ended and
// one call.ended event, and claims the message it queued.
func claimLogMessage(t *testing.T, s store.Store) (store.OutboxMessage, store.Webhook) {
	t.Helper()
	o := mustOrg(t, s, "Hooks")
	w := mustWebhook(t, s, o.ID, evEnded)
	ev := newEvent(evEnded, t0)
	must(t, "QueueEvent(call.ended)", s.QueueEvent(t.Context(), o.ID, ev, t0))
	m := claimOne(t, s, "claimLogMessage", at(time.Second))
	if m.WebhookID != w.ID || m.Type != evEnded {
		t.Fatalf("claimLogMessage: claimed %+v, want the call.ended message for %s", m, w.ID)
	}
	return m, w
}
