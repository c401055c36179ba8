package app

import (
	"strings"
	"testing"
	"time"
)

// TestCreatesAnswerDataID: on every create the new resource's id is
// data.id, with its kind's prefix, beside the contract's own fields (web
// initiate: callId and gateway; phone initiate: callId; schedule-call:
// id), which hold the same id; the batch creates list theirs (contacts:
// data.created, do-not-call: data.added by number). docs/api.md, "Envelope
// and errors", lists them.
func TestCreatesAnswerDataID(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		for _, tc := range []struct {
			path, prefix, top string // top: the contract's field holding the id too
			body              any
		}{
			{"/v1/assistants", "asst_", "", map[string]any{"name": "Another"}},
			{"/v1/phone/purchases", "pn_", "", map[string]any{"number": "+14155550101", "provider": "sandbox"}},
			{"/v1/phone/connections", "conn_", "", map[string]any{"provider": "sip", "name": "Main trunk",
				"sip": map[string]any{"address": "sip.example.com", "numbers": []string{"+16175550100"}}}},
			{"/v1/calls/initiate", "call_", "callId", map[string]any{"assistantId": f.assistant, "type": "web"}},
			{"/v1/calls/phone/initiate", "call_", "callId", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155550005"}},
			{"/v1/phone/schedule-call", "sch_", "id", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase,
				"dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}},
			{"/v1/webhooks", "wh_", "", map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"call.ended"}}},
			{"/v1/public-keys", "pkey_", "", map[string]any{"name": "shop", "assistantIds": []string{f.assistant}, "origins": []string{"https://shop.example.com"}}},
		} {
			r := b.must(201, "POST", tc.path, tc.body)
			got, _ := r.data()["id"].(string)
			if !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("POST %s: data.id = %q; want the new %s… id: %s", tc.path, got, tc.prefix, r.Raw)
				continue
			}
			if tc.top != "" && r.Body[tc.top] != got {
				t.Errorf("POST %s: %s = %v, data.id = %s; want the same id in both", tc.path, tc.top, r.Body[tc.top], got)
			}
		}
		r := b.must(201, "POST", "/v1/phone/contacts/"+f.purchase, map[string]any{"contacts": []any{map[string]any{"phoneNumber": "+14155555678"}}})
		if c, _ := r.data()["created"].([]any); len(c) != 1 || !strings.HasPrefix(c[0].(string), "ct_") {
			t.Errorf("POST contacts: data.created = %v; want the new ct_… id", r.data()["created"])
		}
		r = b.must(201, "POST", "/v1/phone/dnc", map[string]any{"numbers": []string{"+14155559999"}})
		if a, _ := r.data()["added"].([]any); len(a) != 1 || a[0].(map[string]any)["number"] != "+14155559999" {
			t.Errorf("POST dnc: data.added = %v; want the number added", r.data()["added"])
		}
	})
}
