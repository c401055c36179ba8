package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"switchboard/internal/webhook"
)

// receiver is a webhook endpoint under test: it records what it gets and
// answers 500 to the first delivery of each message when told to.
type receiver struct {
	mu       sync.Mutex
	got      []received
	failOnce bool
	seen     map[string]int
}

type received struct {
	header http.Header
	body   []byte
	typ    string
	status int
}

func newReceiver(t *testing.T, failOnce bool) (*receiver, *httptest.Server) {
	r := &receiver{failOnce: failOnce, seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var env struct{ Type string }
		_ = json.Unmarshal(body, &env)
		r.mu.Lock()
		defer r.mu.Unlock()
		id := req.Header.Get("webhook-id")
		r.seen[id]++
		status := 204
		if r.failOnce && r.seen[id] == 1 {
			status = 500
		}
		r.got = append(r.got, received{header: req.Header.Clone(), body: body, typ: env.Type, status: status})
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

// wait returns the first delivery of typ answered with a 2xx.
func (r *receiver) wait(t *testing.T, typ string, within time.Duration) received {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, g := range r.got {
			if g.typ == typ && g.status < 300 {
				r.mu.Unlock()
				return g
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no successful %s delivery within %s", typ, within)
	return received{}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		rec, srv := newReceiver(t, true)
		r := b.must(201, "POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hooks", "events": []string{"call.started", "call.ended", "call.analysis.ready"}})
		secret, _ := r.data()["secret"].(string)
		whID, _ := r.data()["id"].(string)
		if len(secret) < 10 || secret[:6] != "whsec_" {
			t.Fatalf("created webhook secret = %q, want whsec_…", secret)
		}
		if l := b.must(200, "GET", "/v1/webhooks", nil).list(); len(l) != 1 || l[0]["secret"] != nil {
			t.Errorf("GET /v1/webhooks = %v, want one endpoint without its secret", l)
		}
		f := b.fixture(b.key, "+14155550100")
		callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"}).Body["callId"].(string)

		// call.ended arrives (after one 500 and a retry 5 s later), signed.
		ended := rec.wait(t, "call.ended", 15*time.Second)
		if err := webhook.Verify([]string{secret}, ended.header, ended.body, time.Now(), 0); err != nil {
			t.Errorf("call.ended signature does not verify: %v", err)
		}
		var env struct {
			Data struct {
				Call struct{ ID, EndedReason string }
			}
		}
		_ = json.Unmarshal(ended.body, &env)
		if env.Data.Call.ID != callID {
			t.Errorf("call.ended data = %s, want call %s", ended.body, callID)
		}
		rec.mu.Lock()
		attempts := rec.seen[ended.header.Get("webhook-id")]
		rec.mu.Unlock()
		if attempts != 2 {
			t.Errorf("call.ended was delivered %d times, want 2 (a 500, then the retry)", attempts)
		}
		// Forged or stale signatures fail the verifier.
		forged := append([]byte(nil), ended.body...)
		forged[len(forged)-2] ^= 1
		if err := webhook.Verify([]string{secret}, ended.header, forged, time.Now(), 0); err == nil {
			t.Errorf("a forged body verified")
		}
		if err := webhook.Verify([]string{secret}, ended.header, ended.body, time.Now().Add(10*time.Minute), 0); err == nil {
			t.Errorf("a stale signature verified")
		}
		if err := webhook.Verify([]string{webhook.NewSecret()}, ended.header, ended.body, time.Now(), 0); err == nil {
			t.Errorf("another secret verified")
		}
		// The delivery log shows both attempts (the second is logged just
		// after the receiver answered it).
		var statuses map[float64]int
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			statuses = map[float64]int{}
			for _, d := range b.must(200, "GET", "/v1/webhooks/"+whID+"/deliveries", nil).list() {
				if d["event"] == "call.ended" {
					statuses[d["status"].(float64)]++
				}
			}
			if statuses[204] == 1 {
				break
			}
		}
		if statuses[500] != 1 || statuses[204] != 1 {
			t.Errorf("delivery log for call.ended = %v, want one 500 and one 204", statuses)
		}
		// Redelivery sends the same message again.
		b.must(200, "POST", "/v1/webhooks/"+whID+"/deliveries/"+ended.header.Get("webhook-id")+"/redeliver", nil)
		deadline := time.Now().Add(5 * time.Second)
		for {
			rec.mu.Lock()
			n := rec.seen[ended.header.Get("webhook-id")]
			rec.mu.Unlock()
			if n == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redelivery did not arrive (deliveries of the message: %d)", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Rotation: the new secret and the previous one both verify.
		rot := b.must(200, "POST", "/v1/webhooks/"+whID+"/rotate-secret", nil).data()["secret"].(string)
		b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155559876"})
		var next received
		deadline = time.Now().Add(15 * time.Second)
		for next.body == nil && time.Now().Before(deadline) {
			rec.mu.Lock()
			for _, g := range rec.got {
				if g.typ == "call.started" && webhook.Verify([]string{rot}, g.header, g.body, time.Now(), 0) == nil {
					next = g
				}
			}
			rec.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		if next.body == nil {
			t.Fatalf("no delivery signed with the rotated secret")
		}
		if err := webhook.Verify([]string{secret}, next.header, next.body, time.Now(), 0); err != nil {
			t.Errorf("during rotation the previous secret no longer verifies: %v", err)
		}
		b.must(200, "DELETE", "/v1/webhooks/"+whID, nil)
		expectStatus(t, b.req("GET", "/v1/webhooks/"+whID+"/deliveries", b.key, nil), 404, "not_found")
	})
}

func TestWebhookURLGuard(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/g.db")
	cfg.WebhookAllowPrivate = false
	b := start(t, cfg)
	for _, u := range []string{"http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://10.0.0.1/", "ftp://example.com/"} {
		expectFields(t, b.req("POST", "/v1/webhooks", b.key, map[string]any{"url": u, "events": []string{"call.ended"}}), 400, "url")
	}
	expectFields(t, b.req("POST", "/v1/webhooks", b.key, map[string]any{"url": "http://93.184.216.34/", "events": []string{"call.exploded"}}), 400, "events[0]")
}
