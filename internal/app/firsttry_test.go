package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"switchboard/internal/gateway/protocol"
	"switchboard/internal/llm"
	"switchboard/internal/llm/llmtest"
)

// TestModelAssistantFirstTry: on a server whose one model provider is an
// OpenAI-compatible server (a fake that speaks the wire format, as Ollama
// would behind --openai-base-url), the README's model assistant, created
// with only its name, first message, system prompt and model name, gets
// that provider and converses: in a text web call and in a sandbox phone
// call with the persona, each ending through its endCall tool. The model
// receives the system prompt and the model name.
func TestModelAssistantFirstTry(t *testing.T) {
	t.Parallel()
	endCall := []llm.ToolCall{{Name: "endCall", Arguments: json.RawMessage(`{"reason":"done"}`)}}
	fake := llmtest.NewOpenAI(t,
		llmtest.Turn{Text: []string{"We open at nine. ", "Goodbye!"}, ToolCalls: endCall}, // the web call
		llmtest.Turn{Text: []string{"Of course. ", "What day would suit you?"}},           // the phone call
		llmtest.Turn{Text: []string{"You're booked for tomorrow. ", "Goodbye!"}, ToolCalls: endCall},
	)
	defer fake.Close()
	// Each call's analysis, by the same model, beside the conversations.
	recorded := llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "record_analysis", Arguments: json.RawMessage(`{"summary":"A call.","successEvaluation":true}`)}}}
	fake.Aside(llmtest.Offers("record_analysis"), recorded, recorded)
	cfg := testConfig("sqlite:" + t.TempDir() + "/first.db")
	cfg.OpenAIBaseURL, cfg.OpenAIKey = fake.URL, llmtest.APIKey
	b := start(t, cfg)

	r := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Receptionist", "firstMessage": "Hi! This is Acme, how can I help?",
		"systemPrompt": "You are the receptionist of Acme Dental. Answer in one or two short sentences.", "model": map[string]any{"model": "llama3.2"}})
	asst := r.data()["id"].(string)
	if m := r.data()["model"].(map[string]any); m["provider"] != "openai" {
		t.Errorf("model = %v; want openai, the server's only model provider", m)
	}
	if ws, _ := r.Body["warnings"].([]any); len(ws) != 0 {
		t.Errorf("warnings = %v; want none", ws)
	}

	callID, ws := b.dialWebCall(asst)
	if first := turnText(t, ws.until(isTurnDone)); first != "Hi! This is Acme, how can I help?" {
		t.Errorf("web call: first turn %q; want the first message", first)
	}
	ws.send(protocol.UserText{Text: "When do you open?"})
	evs := ws.until(isEnded)
	if txt := turnText(t, evs); txt != "We open at nine. Goodbye!" {
		t.Errorf("web call: the assistant answered %q; want the model's reply", txt)
	}
	if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "assistant-ended-call" {
		t.Errorf("web call ended %+v; want assistant-ended-call", e)
	}
	b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })

	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100", "provider": "sandbox"}).data()["id"].(string)
	b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})
	phoneCall := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"}).Body["callId"].(string)
	c := b.waitCall(b.key, phoneCall, 15*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if c["outcome"] != "completed" || c["endedReason"] != "assistant-ended-call" {
		t.Errorf("phone call = %v/%v; want completed/assistant-ended-call", c["outcome"], c["endedReason"])
	}
	var lines []string
	for _, tr := range b.must(200, "GET", "/v1/calls/"+phoneCall+"/transcripts", nil).list() {
		lines = append(lines, tr["role"].(string)+": "+tr["text"].(string))
	}
	want := []string{"assistant: Hi! This is Acme, how can I help?", "user: I'd like to book an appointment, please.",
		"assistant: Of course. What day would suit you?", "user: Tomorrow, please.", "assistant: You're booked for tomorrow. Goodbye!"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("phone call transcript:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests; want 3", len(reqs))
	}
	for i, rq := range reqs {
		if !strings.Contains(string(rq), `"model":"llama3.2"`) || !strings.Contains(string(rq), "You are the receptionist of Acme Dental.") {
			t.Errorf("model request %d = %s; want model llama3.2 and the system prompt", i+1, rq)
		}
	}
}

// TestNoteTakerFirstTry: on a server without a model, an assistant with
// only a name and a first message is the note taker, which the answer
// says; on a call it says its first message, takes the caller's message,
// thanks them and ends, and the analysis keeps the message.
func TestNoteTakerFirstTry(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/note.db"))
	r := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Receptionist", "firstMessage": "Hi! This is Acme, how can I help?"})
	ws, _ := r.Body["warnings"].([]any)
	if len(ws) != 1 || !strings.Contains(ws[0].(map[string]any)["message"].(string), "it takes a message") {
		t.Errorf("warnings = %v; want one saying the assistant takes a message", ws)
	}
	callID, wc := b.dialWebCall(r.data()["id"].(string))
	wc.until(isTurnDone)
	wc.send(protocol.UserText{Text: "Please ask Dr. Jones to call me back about my crown."})
	evs := wc.until(isEnded)
	if txt := turnText(t, evs); txt != "Thank you, I have noted that. Goodbye." {
		t.Errorf("the note taker answered %q", txt)
	}
	b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	a := b.waitAnalysis(callID, 10*time.Second)
	if s, _ := a["summary"].(string); !strings.Contains(s, "Dr. Jones") {
		t.Errorf("analysis summary %q; want the caller's message kept", s)
	}
}

// TestUnknownTelephonyProvider: a phone call through a provider this
// server does not run names the flag that enables it; a typo lists the
// known providers.
func TestUnknownTelephonyProvider(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/tel.db")) // no SIP
	f := b.fixture(b.key, "+14155550100")
	r := b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234", "provider": "sip"})
	expectFields(t, r, 400, "provider")
	if msg := fieldMessage(r, "provider"); !strings.Contains(msg, `provider "sip" is not configured on this server (it has: sandbox, twilio)`) ||
		!strings.Contains(msg, "--sip-addr / SWITCHBOARD_SIP_ADDR") {
		t.Errorf("provider sip on a server without SIP: %q; want not configured, naming --sip-addr", msg)
	}
	r = b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234", "provider": "twillio"})
	if msg := fieldMessage(r, "provider"); !strings.Contains(msg, `unknown provider "twillio"; known providers: sandbox, sip, twilio`) {
		t.Errorf("provider twillio: %q; want unknown, listing the known ones", msg)
	}
	r = b.req("GET", "/v1/phone/numbers?provider=twillio", b.key, nil)
	if msg := fieldMessage(r, "provider"); !strings.Contains(msg, `unknown provider "twillio"; known providers: sandbox, sip, twilio`) {
		t.Errorf("numbers of provider twillio: %q; want unknown, listing the known ones", msg)
	}
}

// fieldMessage is the message of the error on field in r.
func fieldMessage(r resp, field string) string {
	e, _ := r.Body["error"].(map[string]any)
	fs, _ := e["fields"].([]any)
	for _, f := range fs {
		if f, _ := f.(map[string]any); f["field"] == field {
			s, _ := f["message"].(string)
			return s
		}
	}
	return ""
}
