package httpapi

import (
	"slices"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/id"
)

// TestDNCConformsToOpenAPI: the do-not-call answers are what openapi.json
// describes (an add with a live call to the number, a re-add, a listing,
// a delete), and liveCalls names the live call.
func TestDNCConformsToOpenAPI(t *testing.T) {
	b := newAPI(t, assistant.DefaultProviders())
	k, secret := auth.NewKey(b.org, "phone", []string{auth.PhoneRead, auth.PhoneWrite}, time.Now())
	if err := b.db.CreateKey(t.Context(), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	b.key = secret
	now := time.Now().UTC()
	live := call.Call{ID: id.New(id.Call), OrgID: b.org, Type: call.Phone, Status: call.Queued, AssistantID: id.New(id.Assistant),
		PurchaseID: id.New(id.Purchase), From: "+12125550100", To: "+14155551234", Provider: "sandbox", Direction: call.Outbound,
		CreatedAt: now, UpdatedAt: now}
	if err := b.db.CreateCall(t.Context(), live); err != nil {
		t.Fatalf("CreateCall: %v", err)
	}

	body := `{"numbers":["+1 415 555 1234","+14155550199"],"reason":"asked by letter"}`
	conformsTo(t, "DNCAddRequest", []byte(body))
	st, raw := b.raw("POST", "/v1/phone/dnc", body)
	if st != 201 {
		t.Fatalf("POST /v1/phone/dnc = %d: %s", st, raw)
	}
	conformsTo(t, "DNCAddedResponse", raw)
	data := jsonOf(t, string(raw)).(map[string]any)["data"].(map[string]any)
	lc, _ := data["liveCalls"].(map[string]any)["+14155551234"].([]any)
	if len(lc) != 1 || lc[0] != live.ID || len(data["liveCalls"].(map[string]any)) != 1 {
		t.Errorf("liveCalls = %v; want only +14155551234: [%s]", data["liveCalls"], live.ID)
	}

	st, raw = b.raw("POST", "/v1/phone/dnc", `{"numbers":["+14155550199"]}`)
	if st != 200 {
		t.Fatalf("POST /v1/phone/dnc of a listed number = %d: %s", st, raw)
	}
	conformsTo(t, "DNCAddedResponse", raw)

	st, raw = b.raw("GET", "/v1/phone/dnc?search=%2B1415&pageSize=1", "")
	if st != 200 {
		t.Fatalf("GET /v1/phone/dnc = %d: %s", st, raw)
	}
	conformsTo(t, "DNCListResponse", raw)
	env := jsonOf(t, string(raw)).(map[string]any)
	if p := env["pagination"].(map[string]any); p["total"] != 2.0 || len(env["data"].([]any)) != 1 {
		t.Errorf("GET /v1/phone/dnc?search=%%2B1415&pageSize=1 = %s; want one of 2", raw)
	}

	st, raw = b.raw("DELETE", "/v1/phone/dnc/%2B14155550199", "")
	if st != 200 {
		t.Fatalf("DELETE /v1/phone/dnc/%%2B14155550199 = %d: %s", st, raw)
	}
	conformsTo(t, "MessageResponse", raw)
	_, raw = b.raw("GET", "/v1/phone/dnc", "")
	var left []string
	for _, e := range jsonOf(t, string(raw)).(map[string]any)["data"].([]any) {
		left = append(left, e.(map[string]any)["number"].(string))
	}
	if !slices.Equal(left, []string{"+14155551234"}) {
		t.Errorf("list after the delete = %v; want [+14155551234]", left)
	}
}
