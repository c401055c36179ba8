package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/auth"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/secret"
)

// startLogged is start with the server's log, at debug level, kept.
func startLogged(t *testing.T, cfg Config) (*testBundle, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	m, err := Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), &syncBuffer{})
	if err != nil {
		t.Fatalf("Start(%s): %v", cfg.DB, err)
	}
	b := &testBundle{t: t, m: m, cfg: cfg, key: m.BootstrapKey, org: m.OrgID, http: testClient()}
	t.Cleanup(func() { b.stop() })
	return b, &logs
}

// sealedPassword reads a connection's stored password column.
func (b *testBundle) sealedPassword(connID string) string {
	b.t.Helper()
	var v string
	var err error
	db := b.m.DB()
	if db.lite != nil {
		err = db.lite.Writer.QueryRowContext(context.Background(), `SELECT password_sealed FROM phone_connections WHERE id = ?`, connID).Scan(&v)
	} else {
		err = db.pg.Pool.QueryRow(context.Background(), `SELECT password_sealed FROM phone_connections WHERE id = $1`, connID).Scan(&v)
	}
	if err != nil {
		b.t.Fatalf("read the stored password of %s: %v", connID, err)
	}
	return v
}

func trunk(name, password string, numbers ...string) map[string]any {
	sip := map[string]any{"address": "sip.example.com", "numbers": numbers, "inboundSources": []string{"203.0.113.0/24", "198.51.100.7"}}
	if password != "" {
		sip["username"], sip["password"] = "acme", password
	}
	return map[string]any{"provider": "sip", "name": name, "sip": sip}
}

func strs(v any) []string {
	arr, _ := v.([]any)
	out := []string{}
	for _, x := range arr {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestConnections: SIP connections are created, listed, read and deleted
// per organization; the password is sealed under the server's key, shown
// only as hasPassword and never logged; bad input is a 400 naming the
// field; a number is on one connection of any organization.
func TestConnections(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b, logs := startLogged(t, testConfig(dbURL))
		const password = "Tr0ub4dor&3-correct-horse"

		r := b.must(201, "POST", "/v1/phone/connections", trunk("Main trunk", password, "+1 617 555 0100", "+16175550101"))
		main := r.data()
		id, _ := main["id"].(string)
		if !strings.HasPrefix(id, "conn_") {
			t.Fatalf("POST /v1/phone/connections: data.id = %q, want conn_…", id)
		}
		sip, _ := main["sip"].(map[string]any)
		if main["provider"] != "sip" || main["name"] != "Main trunk" || sip["address"] != "sip.example.com:5060" || sip["transport"] != "udp" ||
			sip["username"] != "acme" || sip["hasPassword"] != true ||
			!slices.Equal(strs(sip["numbers"]), []string{"+16175550100", "+16175550101"}) ||
			!slices.Equal(strs(sip["inboundSources"]), []string{"203.0.113.0/24", "198.51.100.7/32"}) {
			t.Errorf("created connection = %s; want the normalized trunk (default port 5060, udp, E.164, prefixes) with hasPassword true", r.Raw)
		}
		time.Sleep(2 * time.Millisecond) // creation times are in milliseconds: "newest" needs a later one
		open := b.must(201, "POST", "/v1/phone/connections", trunk("Open trunk", "", "+16175550102")).data()
		if s, _ := open["sip"].(map[string]any); s["hasPassword"] != false || s["username"] != "" || s["address"] != "sip.example.com:5060" {
			t.Errorf("connection without credentials = %v; want hasPassword false, no username", open)
		}

		got := b.must(200, "GET", "/v1/phone/connections/"+id, nil).data()
		if got["id"] != id || got["createdAt"] != main["createdAt"] || got["sip"].(map[string]any)["hasPassword"] != true {
			t.Errorf("GET the connection = %v; want what POST answered: %v", got, main)
		}
		page := b.must(200, "GET", "/v1/phone/connections?pageSize=1", nil)
		if l := page.list(); len(l) != 1 || l[0]["id"] != open["id"] || page.Body["pagination"].(map[string]any)["total"] != float64(2) {
			t.Errorf("GET /v1/phone/connections?pageSize=1 = %s; want the newest of 2", page.Raw)
		}
		expectFields(t, b.req("GET", "/v1/phone/connections?pageSize=0", b.key, nil), 400, "pageSize")

		// The password: sealed with the server's key for this connection,
		// never in an answer or a log line.
		stored := b.sealedPassword(id)
		raw, err := base64.StdEncoding.DecodeString(stored)
		if err != nil || strings.Contains(stored, password) || strings.Contains(string(raw), password) {
			t.Errorf("stored password column %q: want base64 of sealed bytes without the password (decode error %v)", stored, err)
		}
		sealer, _ := secret.New(testSecretKey)
		if plain, err := sealer.Open(raw, []byte(id)); err != nil || string(plain) != password {
			t.Errorf("the stored password does not open with the server's key for %s: %q, %v", id, plain, err)
		}
		if b.sealedPassword(open["id"].(string)) != "" {
			t.Errorf("a connection without a password stored one")
		}

		// Another organization sees none of it.
		other := createOrg(t, b.m.DB(), "other")
		ok := b.newKey(other, auth.AllScopes...)
		for _, m := range []string{"GET", "DELETE"} {
			expectStatus(t, b.req(m, "/v1/phone/connections/"+id, ok, nil), 404, "not_found")
		}
		if l := b.req("GET", "/v1/phone/connections", ok, nil).list(); len(l) != 0 {
			t.Errorf("another org lists %d connections, want 0", len(l))
		}
		// A number on a connection of any organization is taken.
		r = b.req("POST", "/v1/phone/connections", ok, trunk("Theirs", "", "+16175550199", "+1 617 555 0101", "+16175550198", "+16175550100"))
		expectFields(t, r, 409, "sip.numbers[1]", "sip.numbers[3]")
		if r.code() != "number_taken" {
			t.Errorf("connection with taken numbers: code %q, want number_taken", r.code())
		}
		time.Sleep(2 * time.Millisecond) // "oldest connection first" needs a later creation time
		b.must(201, "POST", "/v1/phone/connections", trunk("Mine too", "", "+16175550199"))
		theirConn := b.req("POST", "/v1/phone/connections", ok, trunk("Theirs", "", "+16175550198"))
		if theirConn.Status != 201 {
			t.Fatalf("other org's own connection = %d: %s", theirConn.Status, theirConn.Raw)
		}

		// Bad input: 400 naming each field, nothing stored.
		for _, tc := range []struct {
			body   any
			fields []string
		}{
			{map[string]any{"provider": "twilio", "name": "T", "sip": map[string]any{}}, []string{"twilio"}},
			{map[string]any{"provider": "twilio", "name": "T", "twilio": map[string]any{"accountSid": "AC123", "authToken": "t", "region": "ie1"}},
				[]string{"twilio.accountSid", "twilio.region"}},
			{map[string]any{"provider": "pstn", "name": "T"}, []string{"provider"}},
			{map[string]any{"name": "T"}, []string{"provider"}},
			{map[string]any{"provider": "sip", "name": "T"}, []string{"sip"}},
			{map[string]any{"provider": "sip", "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150"}}}, []string{"name"}},
			{map[string]any{"provider": "sip", "name": strings.Repeat("n", 201), "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150"}}}, []string{"name"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h:99999", "transport": "sctp", "numbers": []string{"+16175550150"}}},
				[]string{"sip.address", "sip.transport"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"numbers": []string{"+16175550150"}}}, []string{"sip.address"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "[2001:db8::1", "numbers": []string{"+16175550150"}}}, []string{"sip.address"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150", "+16175550151", "617-555-0152", "+1 617 555 0150"}}},
				[]string{"sip.numbers[2]", "sip.numbers[3]"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": []string{}}}, []string{"sip.numbers"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": "+16175550150"}}, []string{"sip.numbers"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150"}, "inboundSources": []string{"203.0.113.5/24", "10.0.0.0/8"}}},
				[]string{"sip.inboundSources[0]"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150"}, "password": password}}, []string{"sip.username"}},
			{map[string]any{"provider": "sip", "name": "T", "sip": map[string]any{"address": "h", "numbers": []string{"+16175550150"}, "passwd": password}}, []string{"sip.passwd"}},
		} {
			r := b.req("POST", "/v1/phone/connections", b.key, tc.body)
			expectFields(t, r, 400, tc.fields...)
			if strings.Contains(r.Raw, password) {
				t.Errorf("a refused connection's answer repeats the password: %s", r.Raw)
			}
		}
		if n := len(b.must(200, "GET", "/v1/phone/connections", nil).list()); n != 3 {
			t.Errorf("connections after refused requests = %d, want 3", n)
		}

		// Numbers and purchases on connections.
		nums := b.must(200, "GET", "/v1/phone/numbers?provider=sip", nil).list()
		var listed []string
		for _, n := range nums {
			listed = append(listed, n["number"].(string))
			if n["provider"] != "sip" || n["region"] != "US" || n["connectionId"] == nil || n["connectionId"] == "" {
				t.Errorf("SIP number %v: want provider sip, region US and its connectionId", n)
			}
		}
		if !slices.Equal(listed, []string{"+16175550100", "+16175550101", "+16175550102", "+16175550199"}) {
			t.Errorf("GET /v1/phone/numbers?provider=sip lists %v; want this org's four connection numbers, oldest connection first", listed)
		}
		if l := b.req("GET", "/v1/phone/numbers?provider=sip", ok, nil).list(); len(l) != 1 || l[0]["number"] != "+16175550198" {
			t.Errorf("the other org's SIP numbers = %v; want only its own +16175550198", l)
		}
		for _, n := range b.must(200, "GET", "/v1/phone/numbers", nil).list() {
			if n["provider"] != "sandbox" || n["connectionId"] != nil {
				t.Errorf("GET /v1/phone/numbers without provider lists %v; want the sandbox inventory only, as before", n)
			}
		}
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+1 617 555 0101", "provider": "sip"}).data()
		if p["connectionId"] != id || p["provider"] != "sip" || p["number"] != "+16175550101" {
			t.Errorf("SIP purchase = %v; want provider sip, +16175550101 and connectionId %s", p, id)
		}
		expectStatus(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+16175550101", "provider": "sip"}), 409, "number_taken")
		expectFields(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+16175550198", "provider": "sip"}), 400, "number")
		expectFields(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+16175550177", "provider": "sip"}), 400, "number")
		if l := b.must(200, "GET", "/v1/phone/purchases", nil).list(); len(l) != 1 || l[0]["connectionId"] != id {
			t.Errorf("purchases = %v; want the SIP purchase with its connectionId", l)
		}
		for _, n := range b.must(200, "GET", "/v1/phone/numbers?provider=sip", nil).list() {
			if n["number"] == "+16175550101" {
				t.Errorf("a purchased SIP number is still listed as available")
			}
		}

		// A connection with a purchased number stays until it is released.
		r = b.req("DELETE", "/v1/phone/connections/"+id, b.key, nil)
		expectStatus(t, r, 409, "conflict")
		if !strings.Contains(r.Raw, p["id"].(string)) {
			t.Errorf("DELETE of a connection with a purchased number: %s; want the purchase %s named", r.Raw, p["id"])
		}
		b.must(200, "DELETE", "/v1/phone/purchases/"+p["id"].(string), nil)
		del := b.must(200, "DELETE", "/v1/phone/connections/"+id, nil).data()
		if del["id"] != id {
			t.Errorf("DELETE answered %v; want the connection as it was", del)
		}
		expectStatus(t, b.req("GET", "/v1/phone/connections/"+id, b.key, nil), 404, "not_found")
		expectStatus(t, b.req("DELETE", "/v1/phone/connections/"+id, b.key, nil), 404, "not_found")
		// Its numbers are free for anyone now.
		b.must(201, "POST", "/v1/phone/connections", trunk("Again", "", "+16175550100"))

		if strings.Contains(logs.String(), password) {
			t.Errorf("the password appears in the server log")
		}
		if !strings.Contains(logs.String(), "/v1/phone/connections") {
			t.Errorf("the log has no request line of the connections routes; the password check read nothing")
		}
	})
}

// TestCallDirectionAndEnd: phone calls show their direction and are
// filtered by it; POST /v1/calls/{id}/end hangs up live calls.
func TestCallDirectionAndEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100")
		// A flow that asks a question, to a sandbox persona that stays
		// silent (…0005): the call stays in progress until it is ended.
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": f.purchase, "outboundAssistantId": b.bookingAssistant(b.key)})
		ph := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155550005"}).data()
		phID := ph["id"].(string)
		if ph["direction"] != "outbound" {
			t.Errorf("placed phone call direction = %v, want outbound", ph["direction"])
		}
		web := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant}).Body["callId"].(string)
		if _, has := b.must(200, "GET", "/v1/calls/"+web, nil).data()["direction"]; has {
			t.Errorf("a web call shows a direction")
		}
		ids := func(r resp) []string {
			var out []string
			for _, c := range r.list() {
				out = append(out, c["id"].(string))
			}
			return out
		}
		if got := ids(b.must(200, "GET", "/v1/calls?direction=outbound", nil)); !slices.Equal(got, []string{phID}) {
			t.Errorf("GET /v1/calls?direction=outbound = %v, want [%s]", got, phID)
		}
		if r := b.must(200, "GET", "/v1/calls?direction=inbound", nil); len(r.list()) != 0 || r.Body["pagination"].(map[string]any)["total"] != float64(0) {
			t.Errorf("GET /v1/calls?direction=inbound = %s, want none", r.Raw)
		}
		expectFields(t, b.req("GET", "/v1/calls?direction=sideways", b.key, nil), 400, "direction")

		// End: a queued web call is canceled.
		r := b.must(200, "POST", "/v1/calls/"+web+"/end", nil).data()
		if r["status"] != float64(3) || r["outcome"] != "canceled" || r["endedReason"] != "api-ended-call" {
			t.Errorf("POST end (queued web call) = %v, want ended, canceled, api-ended-call", r)
		}
		expectStatus(t, b.req("POST", "/v1/calls/"+web+"/end", b.key, nil), 409, "conflict")

		// An answered sandbox call is completed and hung up.
		b.waitCall(b.key, phID, 5*time.Second, func(c map[string]any) bool { return c["statusText"] == "in-progress" })
		other := createOrg(t, b.m.DB(), "other")
		expectStatus(t, b.req("POST", "/v1/calls/"+phID+"/end", b.newKey(other, auth.CallsWrite), nil), 404, "not_found")
		expectStatus(t, b.req("POST", "/v1/calls/"+phID+"/end", b.newKey(b.org, auth.CallsRead), nil), 403, "permission_denied")
		r = b.must(200, "POST", "/v1/calls/"+phID+"/end", nil).data()
		if r["outcome"] != "completed" || r["endedReason"] != "api-ended-call" || r["direction"] != "outbound" {
			t.Errorf("POST end (in-progress phone call) = %v, want completed, api-ended-call", r)
		}
		time.Sleep(300 * time.Millisecond) // the conversation and the sandbox hear of it
		c := b.must(200, "GET", "/v1/calls/"+phID, nil).data()
		if c["outcome"] != "completed" || c["endedReason"] != "api-ended-call" || c["endedAt"] != r["endedAt"] {
			t.Errorf("the call after its end settled = %v; want it as POST end answered", c)
		}
		expectStatus(t, b.req("POST", "/v1/calls/"+phID+"/end", b.key, nil), 409, "conflict")
		// Live control of an ended call is a conflict; bad bodies are 400s.
		expectStatus(t, b.req("POST", "/v1/calls/"+phID+"/say", b.key, map[string]any{"text": "hello"}), 409, "conflict")
		expectStatus(t, b.req("POST", "/v1/calls/"+phID+"/transfer", b.key, map[string]any{"destination": "sip:desk@pbx.example.com"}), 409, "conflict")
		expectFields(t, b.req("POST", "/v1/calls/"+phID+"/say", b.key, map[string]any{"text": ""}), 400, "text")
		expectFields(t, b.req("POST", "/v1/calls/"+phID+"/transfer", b.key, map[string]any{"destination": "desk"}), 400, "destination")
	})
}

// TestEndWebCallInProgress: a web call runs on the call runtime like a
// phone call, so live control reaches it: say makes the assistant say a
// turn the client sees, a transfer is refused (a web call has no phone
// line), and an end through the API tells its client call.ended
// (completed, api-ended-call) and closes 4410.
func TestEndWebCallInProgress(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		callID, ws := b.dialWebCall(b.bookingAssistant(b.key))
		ws.until(isTurnDone) // the first question: the call waits for the caller
		b.must(200, "POST", "/v1/calls/"+callID+"/say", map[string]any{"text": "One moment, please."})
		evs := ws.until(isTurnDone)
		if d := evs[len(evs)-1].(protocol.TurnDone); d.Text != "One moment, please." {
			t.Errorf("after POST say the client saw turn %+v, want the said text", d)
		}
		expectStatus(t, b.req("POST", "/v1/calls/"+callID+"/transfer", b.key, map[string]any{"destination": "+14155550123"}), 409, "conflict")
		r := b.must(200, "POST", "/v1/calls/"+callID+"/end", nil).data()
		if r["outcome"] != "completed" || r["endedReason"] != "api-ended-call" {
			t.Errorf("POST end (connected web call) = %v, want completed, api-ended-call", r)
		}
		evs = ws.until(isEnded)
		if e := evs[len(evs)-1].(protocol.CallEnded); e.Outcome != "completed" || e.EndedReason != "api-ended-call" {
			t.Errorf("call.ended = %+v, want completed/api-ended-call", e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, _, err := ws.conn.Read(ctx); websocket.CloseStatus(err) != protocol.CloseCallEnded {
			t.Errorf("after call.ended the socket closed with %v, want %d (call ended elsewhere)", err, protocol.CloseCallEnded)
		}
		c := b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if c["endedReason"] != "api-ended-call" || c["endedAt"] != r["endedAt"] {
			t.Errorf("the call after its session closed = %v; want it as POST end answered", c)
		}
	})
}

// TestConnectionIdempotency: a connection created with an Idempotency-Key
// is replayed, and the key's record keeps a keyed digest of the request,
// not a plain hash that a copy of the database could test passwords with.
func TestConnectionIdempotency(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		body := `{"provider":"sip","name":"T","sip":{"address":"sip.example.com","username":"u","password":"guessable1","numbers":["+16175550100"]}}`
		r1 := b.req("POST", "/v1/phone/connections", b.key, body, "Idempotency-Key", "conn-1")
		r2 := b.req("POST", "/v1/phone/connections", b.key, body, "Idempotency-Key", "conn-1")
		if r1.Status != 201 || r2.Raw != r1.Raw || r2.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s then %d %s; want the same 201, replayed", r1.Status, r1.Raw, r2.Status, r2.Raw)
		}
		expectStatus(t, b.req("POST", "/v1/phone/connections", b.key, strings.Replace(body, "guessable1", "guessable2", 1), "Idempotency-Key", "conn-1"),
			409, "idempotency_key_reused")
		var stored string
		var err error
		db := b.m.DB()
		if db.lite != nil {
			err = db.lite.Writer.QueryRowContext(context.Background(), `SELECT request_hash FROM idempotency_keys WHERE key = 'conn-1'`).Scan(&stored)
		} else {
			err = db.pg.Pool.QueryRow(context.Background(), `SELECT request_hash FROM idempotency_keys WHERE key = 'conn-1'`).Scan(&stored)
		}
		if err != nil {
			t.Fatal(err)
		}
		plain := sha256.Sum256([]byte("POST /v1/phone/connections?\n" + body))
		if stored == hex.EncodeToString(plain[:]) || !strings.HasPrefix(stored, "k1:") {
			t.Errorf("idempotency record of a connection = %q; want a keyed digest (k1:…), not the plain SHA-256 of the request", stored)
		}
	})
}
