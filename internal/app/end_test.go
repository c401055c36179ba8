package app

import (
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/gateway/protocol"
)

// endAtOnce sends n POST /v1/calls/{id}/end of one call at once, spread
// over nodes, and returns the answers.
func endAtOnce(nodes []*testBundle, key, callID string, n int) []resp {
	out := make([]resp, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = nodes[i%len(nodes)].req("POST", "/v1/calls/"+callID+"/end", key, nil) })
	}
	wg.Wait()
	return out
}

// TestRepeatedEnd: of many POST /v1/calls/{id}/end of one live call at
// once, exactly one answers 200 (the one whose end was recorded) and every
// other 409 "already ended" with the outcome and endedReason, whatever the
// timing; so does every end after. For a connected web call and an
// answered sandbox phone call; on PostgreSQL the ends are spread over two
// nodes, so that half are carried to the node that holds the call.
func TestRepeatedEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		b := start(t, cfg)
		nodes := []*testBundle{b}
		if strings.HasPrefix(dbURL, "postgres") {
			nodes = append(nodes, start(t, cfg))
		}
		f := b.fixture(b.key, "+14155550100")
		booking := b.bookingAssistant(b.key)
		// A flow asking a question, to a persona that stays silent
		// (…0005): the call stays in progress until it is ended.
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": f.purchase, "outboundAssistantId": booking})

		webID, ws := b.dialWebCall(booking)
		if _, ok := ws.next().(protocol.SessionStarted); !ok {
			t.Fatalf("web call %s: the first event is not session.started", webID)
		}
		phID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155550005"}).data()["id"].(string)
		b.waitCall(b.key, phID, 10*time.Second, func(c map[string]any) bool { return c["statusText"] == "in-progress" })

		const n = 12
		for _, tc := range []struct{ kind, id string }{{"web", webID}, {"phone", phID}} {
			var won []resp
			for i, r := range endAtOnce(nodes, b.key, tc.id, n) {
				switch {
				case r.Status == 200:
					won = append(won, r)
				case r.Status == 409 && r.code() == "conflict" &&
					strings.Contains(r.Body["message"].(string), "has already ended (completed, api-ended-call)"):
				default:
					t.Errorf("%s call: end #%d (node %d) = %d %s; want 200 once, else 409 conflict \"… has already ended (completed, api-ended-call)\"",
						tc.kind, i, i%len(nodes), r.Status, r.Raw)
				}
			}
			if len(won) != 1 {
				t.Fatalf("%s call: %d concurrent ends answered 200 %d times; want exactly once", tc.kind, n, len(won))
			}
			d := won[0].data()
			if d["outcome"] != "completed" || d["endedReason"] != "api-ended-call" || d["endedAt"] == nil {
				t.Errorf("%s call: the 200 end's call = %v; want ended completed, api-ended-call", tc.kind, d)
			}
			for i, node := range nodes {
				if r := node.req("POST", "/v1/calls/"+tc.id+"/end", b.key, nil); r.Status != 409 || r.code() != "conflict" {
					t.Errorf("%s call: an end after the end, on node %d = %d %s; want 409 conflict", tc.kind, i, r.Status, r.Raw)
				}
			}
			if c := b.must(200, "GET", "/v1/calls/"+tc.id, nil).data(); c["endedAt"] != d["endedAt"] || c["endedReason"] != "api-ended-call" {
				t.Errorf("%s call after the ends = %v; want it as the 200 end answered (endedAt %v)", tc.kind, c, d["endedAt"])
			}
		}
	})
}
