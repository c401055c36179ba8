package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/gateway/protocol"
	"switchboard/internal/llm"
	"switchboard/internal/llm/llmtest"
)

// wsClient is a web call's client in a test: a real websocket.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	seq  int64
}

// dialWebCall creates a web call for the assistant and connects to its gateway URL.
func (b *testBundle) dialWebCall(assistantID string) (string, *wsClient) {
	b.t.Helper()
	r := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": assistantID, "type": "web"})
	url := r.Body["gateway"].(map[string]any)["url"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.t.Fatalf("dial %s: %v", url, err)
	}
	b.t.Cleanup(func() { conn.CloseNow() })
	return r.Body["callId"].(string), &wsClient{t: b.t, conn: conn}
}

// next reads the next server event, checking seq grows by one.
func (c *wsClient) next() protocol.ServerEvent {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("reading the gateway: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("gateway sent a binary frame in text mode")
	}
	ev, err := protocol.DecodeServer(data)
	if err != nil {
		c.t.Fatalf("gateway sent an invalid event %s: %v", data, err)
	}
	var env struct{ Seq int64 }
	_ = json.Unmarshal(data, &env)
	if env.Seq != c.seq+1 {
		c.t.Errorf("event seq %d after %d: %s", env.Seq, c.seq, data)
	}
	c.seq = env.Seq
	return ev
}

// until reads events until one satisfies done, returning them all.
func (c *wsClient) until(done func(protocol.ServerEvent) bool) []protocol.ServerEvent {
	c.t.Helper()
	var out []protocol.ServerEvent
	for {
		ev := c.next()
		out = append(out, ev)
		if done(ev) {
			return out
		}
	}
}

func (c *wsClient) send(ev protocol.ClientEvent) {
	c.t.Helper()
	b, err := protocol.EncodeClient(ev)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatalf("writing to the gateway: %v", err)
	}
}

func isError(ev protocol.ServerEvent) bool    { _, ok := ev.(protocol.ErrorEvent); return ok }
func isTurnDone(ev protocol.ServerEvent) bool { _, ok := ev.(protocol.TurnDone); return ok }
func isEnded(ev protocol.ServerEvent) bool    { _, ok := ev.(protocol.CallEnded); return ok }

// turnText returns the text of the last TurnDone among evs, and checks the
// deltas of that turn join to it.
func turnText(t *testing.T, evs []protocol.ServerEvent) string {
	t.Helper()
	var done protocol.TurnDone
	var deltas strings.Builder
	for _, ev := range evs {
		switch e := ev.(type) {
		case protocol.TextDelta:
			deltas.WriteString(e.Text)
		case protocol.TurnDone:
			done = e
		}
	}
	if done.Text != "" && !strings.HasSuffix(deltas.String(), done.Text) {
		t.Errorf("deltas %q do not end with the turn's text %q", deltas.String(), done.Text)
	}
	return done.Text
}

// TestWebCallBookingFlow drives a web call over a real websocket in text
// mode through a booking flow, then reads the call, its transcript and its
// analysis.
func TestWebCallBookingFlow(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		asst := b.bookingAssistant(b.key)
		callID, ws := b.dialWebCall(asst)
		if st, ok := ws.next().(protocol.SessionStarted); !ok || st.CallID != callID || st.AssistantID != asst {
			t.Fatalf("first event = %#v, want session.started for %s", st, callID)
		}
		if c := b.must(200, "GET", "/v1/calls/"+callID, nil).data(); c["status"] != 2.0 {
			t.Errorf("connected web call status = %v, want 2 (in-progress)", c["status"])
		}
		greet := turnText(t, ws.until(isTurnDone))
		if !strings.Contains(greet, "What day would suit you?") {
			t.Fatalf("greeting = %q", greet)
		}
		ws.send(protocol.UserText{Text: "next tuesday please"})
		confirm := turnText(t, ws.until(isTurnDone))
		if !strings.Contains(confirm, "Tuesday") || !strings.Contains(confirm, "is that right?") {
			t.Fatalf("confirmation = %q", confirm)
		}
		ws.send(protocol.UserText{Text: "yes"})
		evs := ws.until(isEnded)
		if bye := turnText(t, evs); !strings.Contains(bye, "Goodbye") {
			t.Errorf("last turn = %q, want a goodbye", bye)
		}
		ended := evs[len(evs)-1].(protocol.CallEnded)
		if ended.Outcome != "completed" || ended.EndedReason != "assistant-ended-call" {
			t.Errorf("call.ended = %+v, want completed/assistant-ended-call", ended)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, _, err := ws.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Errorf("after call.ended the socket closed with %v, want a normal close", err)
		}
		b.checkBookingCall(callID)
	})
}

// TestWebCallModelEndsCall: with a fake provider streaming tokens and a
// tool call, a web call's assistant answers and ends the call through
// endCall — for the OpenAI-compatible and the Anthropic wire formats.
func TestWebCallModelEndsCall(t *testing.T) {
	t.Parallel()
	for _, prov := range []string{"openai", "anthropic"} {
		t.Run(prov, func(t *testing.T) {
			script := llmtest.Turn{Text: []string{"Of course", ", I'll ", "hang up now. ", "Goodbye!"},
				ToolCalls: []llm.ToolCall{{Name: "endCall", Arguments: json.RawMessage(`{"reason":"caller asked"}`)}}}
			cfg := testConfig("sqlite:" + t.TempDir() + "/m.db")
			var fake *llmtest.Server
			if prov == "openai" {
				fake = llmtest.NewOpenAI(t, script)
				cfg.OpenAIBaseURL, cfg.OpenAIKey = fake.URL, llmtest.APIKey
			} else {
				fake = llmtest.NewAnthropic(t, script)
				cfg.AnthropicBaseURL, cfg.AnthropicKey = fake.URL, llmtest.APIKey
			}
			defer fake.Close()
			// The call's analysis, by the same model: its first answer's
			// data breaks the schema, the second (after the problems were
			// sent back) keeps it.
			fake.Aside(llmtest.Offers("record_analysis"),
				llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "record_analysis", Arguments: json.RawMessage(`{"summary":"x","successEvaluation":true,"structuredData":{"reason":7}}`)}}},
				llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "record_analysis", Arguments: json.RawMessage(
					`{"summary":"The caller asked to hang up.","successEvaluation":true,"successReasoning":"The assistant did as asked.","structuredData":{"reason":"caller asked"}}`)}}})
			b := start(t, cfg)
			asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Model", "firstMessage": "Hello, how can I help?",
				"systemPrompt": "You are a helpful receptionist.", "model": map[string]any{"provider": prov, "model": "test-model"},
				"analysisPlan": map[string]any{"summaryPrompt": "One sentence.", "successEvaluationRubric": "Success when the caller got what they asked for.",
					"structuredDataSchema": map[string]any{"type": "object", "properties": map[string]any{"reason": map[string]any{"type": "string"}}, "required": []string{"reason"}}}}).data()["id"].(string)
			callID, ws := b.dialWebCall(asst)
			ws.until(isTurnDone) // the first message
			ws.send(protocol.UserText{Text: "Please hang up."})
			evs := ws.until(isEnded)
			deltas := 0
			for _, ev := range evs {
				if _, ok := ev.(protocol.TextDelta); ok {
					deltas++
				}
			}
			if deltas < 4 {
				t.Errorf("got %d text deltas, want the provider's stream (≥ 4)", deltas)
			}
			if txt := turnText(t, evs); txt != "Of course, I'll hang up now. Goodbye!" {
				t.Errorf("assistant said %q", txt)
			}
			if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "assistant-ended-call" || e.Outcome != "completed" {
				t.Errorf("call.ended = %+v", e)
			}
			c := b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
			if c["endedReason"] != "assistant-ended-call" {
				t.Errorf("call endedReason = %v", c["endedReason"])
			}
			turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
			if len(turns) != 3 || turns[1]["role"] != "user" || turns[2]["latencyMs"] == nil {
				t.Errorf("transcript = %v, want assistant, user, assistant (with latency)", turns)
			}
			if reqs := fake.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0]), "You are a helpful receptionist.") {
				t.Errorf("provider requests = %d, want 1 with the system prompt", len(reqs))
			}
			// The analysis comes from the model, its data validated.
			a := b.waitAnalysis(callID, 20*time.Second)
			res, _ := a["result"].(map[string]any)
			if res == nil {
				res = a
			}
			model, _ := res["model"].(map[string]any)
			data, _ := res["structuredData"].(map[string]any)
			if a["state"] != "ready" || res["summary"] != "The caller asked to hang up." || res["successReasoning"] != "The assistant did as asked." ||
				data["reason"] != "caller asked" || model["provider"] != prov || model["model"] != "test-model" || model["requests"] != 2.0 || model["inputTokens"].(float64) <= 0 {
				t.Errorf("analysis = %v, want the model's second answer, with its usage", a)
			}
			if reqs := fake.AsideRequests(); len(reqs) != 2 || !strings.Contains(string(reqs[0]), "One sentence.") || !strings.Contains(string(reqs[1]), "does not match the schema") {
				t.Errorf("analysis requests = %d, want the plan's prompt, then the schema's problems sent back", len(reqs))
			}
		})
	}
}

// TestWebCallBadFrames: bad frames get errors and the call goes on.
func TestWebCallBadFrames(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/bad.db"))
	asst := b.bookingAssistant(b.key)
	callID, ws := b.dialWebCall(asst)
	ws.until(isTurnDone)
	for _, frame := range []string{`not json`, `{"type":"user.text","text":5}`, `{"type":"teleport"}`, `[]`} {
		if err := ws.conn.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		evs := ws.until(func(ev protocol.ServerEvent) bool { return isError(ev) || isEnded(ev) })
		if e, ok := evs[len(evs)-1].(protocol.ErrorEvent); !ok || e.Fatal {
			t.Errorf("frame %q: got %#v, want a non-fatal error event", frame, evs[len(evs)-1])
		}
	}
	ws.send(protocol.UserText{Text: "next tuesday"})
	if txt := turnText(t, ws.until(isTurnDone)); !strings.Contains(txt, "is that right?") {
		t.Errorf("after bad frames the call answered %q, want the flow to go on", txt)
	}
	ws.send(protocol.Hangup{})
	evs := ws.until(isEnded)
	if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "customer-ended-call" {
		t.Errorf("hangup: call.ended = %+v", e)
	}
	b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 && c["endedReason"] == "customer-ended-call" })
}

// TestWebCallRefusals: the gateway refuses unknown, mismatched and second connections.
func TestWebCallRefusals(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/ref.db"))
	asst := b.bookingAssistant(b.key)
	r := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst})
	url := r.Body["gateway"].(map[string]any)["url"].(string)
	dial := func(u string) int {
		_, res, err := websocket.Dial(context.Background(), u, nil)
		if err == nil {
			return 101
		}
		if res == nil {
			t.Fatalf("dial %s: %v", u, err)
		}
		return res.StatusCode
	}
	if st := dial(strings.Replace(url, "call_id=", "call_id=x", 1)); st != 404 {
		t.Errorf("unknown call id: %d, want 404", st)
	}
	other := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Other", "firstMessage": "Hi"}).data()["id"].(string)
	if st := dial(strings.Replace(url, "assistant_id="+asst, "assistant_id="+other, 1)); st != 404 {
		t.Errorf("mismatched assistant: %d, want 404", st)
	}
	conn, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if st := dial(url); st != 409 {
		t.Errorf("second connection to a live call: %d, want 409", st)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	b.waitCall(b.key, r.Body["callId"].(string), 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if st := dial(url); st != 410 {
		t.Errorf("connection to an ended call: %d, want 410", st)
	}
}

// TestWebCallNeverJoined: a web call nobody joins ends failed.
func TestWebCallNeverJoined(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/nj.db")
	cfg.JoinTimeout = time.Second
	b := start(t, cfg)
	asst := b.bookingAssistant(b.key)
	callID := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst}).Body["callId"].(string)
	c := b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if c["outcome"] != "failed" || c["endedReason"] != "client-never-connected" {
		t.Errorf("unjoined web call = %v/%v, want failed/client-never-connected", c["outcome"], c["endedReason"])
	}
}
