package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/llm"
	"switchboard/internal/llm/anthropic"
	"switchboard/internal/llm/llmtest"
	"switchboard/internal/llm/openai"
)

// fakeLine is a phone line's Control: it records the keys sent and the
// transfers asked for in the recorder's events, so tests see them in order
// with the turns, and refuses transfers with refuse when set.
type fakeLine struct {
	rec       *recorder
	mu        sync.Mutex
	sent      []string
	transfers []string
	refuse    error
}

func (l *fakeLine) SendDTMF(ctx context.Context, digits string) error {
	l.mu.Lock()
	l.sent = append(l.sent, digits)
	l.mu.Unlock()
	l.rec.add("keys " + digits)
	return nil
}

func (l *fakeLine) Transfer(ctx context.Context, destination string) error {
	l.mu.Lock()
	l.transfers = append(l.transfers, destination)
	l.mu.Unlock()
	l.rec.add("transfer " + destination)
	return l.refuse
}

// phoneAssistant has a flow (or none) and the sales desk as its transfer destination.
func phoneAssistant(flow string) assistant.Assistant {
	a := testAssistant()
	a.FirstMessage = ""
	if flow != "" {
		a.Flow = json.RawMessage(flow)
	}
	a.Transfer.Destinations = []assistant.TransferDestination{
		{Destination: "+16175550123", Description: "Sales desk", Message: "Transferring you to sales now."},
		{Destination: "sip:support@pbx.example.com", Description: "Technical support"},
	}
	return a
}

// feeder is a text transport that sends the caller's inputs of script[n]
// once n assistant turns are done (script[0] at the start), so a caller
// answers a model only after it has replied.
type feeder struct {
	*recorder
	in     chan Input
	script map[int][]Input
	done   int
}

func (f *feeder) TurnDone(turnID, text string, interrupted bool) {
	f.recorder.TurnDone(turnID, text, interrupted)
	f.done++
	for _, i := range f.script[f.done] {
		f.in <- i
	}
}

// runPhone runs a conversation of a with the brain Brains.New makes, over
// a line (nil: no phone line), fed the inputs and then a hang-up.
func runPhone(t *testing.T, brains *Brains, a assistant.Assistant, line *fakeLine, inputs ...Input) (*recorder, string) {
	t.Helper()
	return runScript(t, brains, a, line, map[int][]Input{0: append(inputs, Input{Kind: Hangup})})
}

// runScript is runPhone with the inputs sent as script says (feeder).
func runScript(t *testing.T, brains *Brains, a assistant.Assistant, line *fakeLine, script map[int][]Input) (*recorder, string) {
	t.Helper()
	rec := &recorder{}
	cfg := Config{Call: call.Call{ID: "call_p", OrgID: "org_p"}, Assistant: a, Turns: rec, Ender: rec}
	if line != nil {
		line.rec = rec
		cfg.Control = line
	}
	brain, err := brains.New(t.Context(), cfg.Call, a)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Brain = brain
	n := 0
	for _, ins := range script {
		n += len(ins)
	}
	f := &feeder{recorder: rec, in: make(chan Input, n), script: script}
	for _, i := range script[0] {
		f.in <- i
	}
	return rec, Run(t.Context(), cfg, f.in, f)
}

func transcript(rec *recorder) []string {
	var out []string
	for _, tn := range rec.turns {
		out = append(out, tn.Role+": "+tn.Text)
	}
	return out
}

const keypadFlow = `{"start": "menu", "nodes": {
	"menu": {"type": "ask", "text": "Press 1 for sales or 2 for your balance.",
		"branches": [
			{"match": {"kind": "dtmf", "value": "1"}, "next": "to_sales"},
			{"match": {"kind": "dtmf", "value": "2"}, "next": "account"}]},
	"to_sales": {"type": "transfer", "destination": "+16175550123", "success": true},
	"account": {"type": "ask", "text": "Enter your account number, then press pound.",
		"branches": [{"match": {"kind": "dtmf", "minDigits": 4, "maxDigits": 8, "terminator": "#"}, "capture": "account", "next": "ivr"}]},
	"ivr": {"type": "sendDTMF", "digits": "9{{account}}#", "next": "bye", "onError": "no_line"},
	"no_line": {"type": "end", "text": "I can't reach the billing system from here. Goodbye."},
	"bye": {"type": "end", "text": "Thank you. Goodbye!", "success": true}}}`

// TestKeypadReachesFlow: keys reach a flow's dtmf branches, one at a time
// or several per input; typed digits and words do not; the entry is a
// caller turn "Keypad entry: …"; the flow's sendDTMF node sends through
// the line.
func TestKeypadReachesFlow(t *testing.T) {
	line := &fakeLine{}
	rec, reason := runPhone(t, &Brains{}, phoneAssistant(keypadFlow), line,
		Input{Kind: UserText, Text: "2"},   // typed: no dtmf branch takes it
		Input{Kind: UserText, Text: "two"}, // spoken: neither
		Input{Kind: DTMF, Text: "2"},
		Input{Kind: DTMF, Text: "0"}, Input{Kind: DTMF, Text: "0"}, Input{Kind: DTMF, Text: "4x2#"}, // x is no key
	)
	if reason != call.ReasonAssistantEnded {
		t.Fatalf("Run = %q; want %s; events %q", reason, call.ReasonAssistantEnded, rec.events)
	}
	want := []string{
		"assistant: Press 1 for sales or 2 for your balance.",
		"user: 2", "assistant: Sorry, I didn't catch that. Press 1 for sales or 2 for your balance.",
		"user: two", "assistant: Sorry, I didn't catch that. Press 1 for sales or 2 for your balance.",
		"user: Keypad entry: 2", "assistant: Enter your account number, then press pound.",
		"user: Keypad entry: 0042#", "assistant: Thank you. Goodbye!",
	}
	if got := transcript(rec); !slices.Equal(got, want) {
		t.Errorf("transcript:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(line.sent, []string{"90042#"}) {
		t.Errorf("keys sent = %q; want the sendDTMF node's 9{{account}}#", line.sent)
	}
	if rec.result.Vars["account"] != "0042" || rec.result.FlowSuccess == nil || !*rec.result.FlowSuccess {
		t.Errorf("result = %+v; want account 0042 and a successful flow", rec.result)
	}
}

// TestKeypadWithoutLine: on a call without a phone line keys still reach
// the flow (a web client may send them) and a sendDTMF node takes onError.
func TestKeypadWithoutLine(t *testing.T) {
	rec, reason := runPhone(t, &Brains{}, phoneAssistant(keypadFlow), nil, Input{Kind: DTMF, Text: "2"}, Input{Kind: DTMF, Text: "1234#"})
	if reason != call.ReasonAssistantEnded {
		t.Fatalf("Run = %q; events %q", reason, rec.events)
	}
	if got := transcript(rec); got[len(got)-1] != "assistant: I can't reach the billing system from here. Goodbye." {
		t.Errorf("transcript %q; want the sendDTMF node's onError end", got)
	}
}

// TestKeypadEntryEnds: a model hears an entry when '#' is pressed or after
// the pause (2 s), a flow as soon as no longer entry can match; keys cut
// short a spoken turn; the caller's words end an entry in progress first.
func TestKeypadEntryEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &scriptBrain{replies: map[string]Reply{
			"Keypad entry: 12#": {Text: "Got 12."},
			"Keypad entry: 7":   {Text: "Got 7."},
			"Keypad entry: 5":   {Text: "Got 5."},
			"hello":             {Text: "Hi."},
		}}
		rec := &recorder{}
		in := make(chan Input)
		start := time.Now()
		var at []time.Duration
		var wg sync.WaitGroup
		wg.Go(func() {
			send := func(i Input) { in <- i; time.Sleep(100 * time.Millisecond) }
			send(Input{Kind: DTMF, Text: "1"})
			send(Input{Kind: DTMF, Text: "2"})
			send(Input{Kind: DTMF, Text: "#"})
			synctest.Wait()
			at = append(at, time.Since(start))
			send(Input{Kind: DTMF, Text: "7"})
			time.Sleep(3 * time.Second)
			at = append(at, time.Since(start))
			send(Input{Kind: DTMF, Text: "5"})
			send(Input{Kind: UserText, Text: "hello"})
			in <- Input{Kind: Hangup}
		})
		a := testAssistant()
		a.FirstMessage = ""
		Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: b, Turns: rec, Ender: rec}, in, rec)
		wg.Wait()
		want := []string{"user: Keypad entry: 12#", "assistant: Got 12.", "user: Keypad entry: 7", "assistant: Got 7.",
			"user: Keypad entry: 5", "assistant: Got 5.", "user: hello", "assistant: Hi."}
		if got := transcript(rec); !slices.Equal(got, want) {
			t.Errorf("transcript:\n got %q\nwant %q", got, want)
		}
		// "7" waited for the pause: its turn started 2 s after the key.
		if len(rec.turns) < 3 || rec.turns[2].StartedAt.Sub(start) != at[0]+DefaultInterDigitTimeout {
			t.Errorf("the entry 7 was taken at %v; want %v (the key, then the 2 s pause)", rec.turns[2].StartedAt.Sub(start), at[0]+DefaultInterDigitTimeout)
		}
	})

	// A key pressed while a turn is spoken cuts it.
	b := &scriptBrain{open: Reply{Text: "Press 1 for sales, 2 for support, 3 for billing."}, replies: map[string]Reply{"Keypad entry: 1#": {Text: "Sales."}}}
	s, _ := runSpoken(t, b, func(turnID, text string) []Input {
		if turnID == "turn_1" {
			return []Input{{Kind: DTMF, Text: "1#"}}
		}
		return []Input{{Kind: Played, TurnID: turnID}, {Kind: Hangup}}
	})
	if len(s.cuts) == 0 || s.cuts[0] != "turn_1" || !s.turns[0].Interrupted || s.turns[1].Text != "Keypad entry: 1#" {
		t.Errorf("cuts %v, turns %+v: want the menu cut by the key and the entry answered", s.cuts, s.turns)
	}
}

// modelFor starts a fake provider with script and makes the brains for it.
func modelFor(t *testing.T, prov string, script ...llmtest.Turn) (*llmtest.Server, *Brains) {
	t.Helper()
	var srv *llmtest.Server
	var client llm.Client
	if prov == "openai" {
		srv = llmtest.NewOpenAI(t, script...)
		client = openai.New(srv.URL, llmtest.APIKey, nil)
	} else {
		srv = llmtest.NewAnthropic(t, script...)
		client = anthropic.New(srv.URL, llmtest.APIKey, nil)
	}
	t.Cleanup(srv.Close)
	return srv, &Brains{Models: map[string]llm.Client{prov: client}}
}

func modelAssistant(prov string) assistant.Assistant {
	a := phoneAssistant("")
	a.Model = assistant.Model{Provider: prov, Model: "test-model"}
	return a
}

// offered lists the tool names a provider request offered.
func offered(t *testing.T, req json.RawMessage) []string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Name+tl.Function.Name)
	}
	slices.Sort(names)
	return names
}

// TestModelKeypadAndSendDTMF: a model hears keys as the caller's turn and
// presses keys with sendDTMF, which reaches the line; bad keys are refused
// as the tool's answer without touching the line.
func TestModelKeypadAndSendDTMF(t *testing.T) {
	for _, prov := range []string{"openai", "anthropic"} {
		t.Run(prov, func(t *testing.T) {
			srv, brains := modelFor(t, prov,
				llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "sendDTMF", Arguments: json.RawMessage(`{"digits":"12x"}`)}}},
				llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "sendDTMF", Arguments: json.RawMessage(`{"digits":"1 2 #"}`)}}},
				llmtest.Turn{Text: []string{"I pressed 1, 2 and pound."}},
			)
			line := &fakeLine{}
			rec, _ := runScript(t, brains, modelAssistant(prov), line, map[int][]Input{
				0: {{Kind: DTMF, Text: "4"}, {Kind: DTMF, Text: "#"}}, 1: {{Kind: Hangup}}})
			if !slices.Equal(line.sent, []string{"12#"}) {
				t.Errorf("keys sent = %q; want only the valid 12#", line.sent)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("provider requests = %d; want 3", len(reqs))
			}
			for _, want := range []string{"Keypad entry: 4#", "sendDTMF", "transferCall", `+16175550123`, `Sales desk`} {
				if !strings.Contains(string(reqs[0]), want) {
					t.Errorf("first request lacks %q: %s", want, reqs[0])
				}
			}
			if !strings.Contains(string(reqs[1]), `digits must be 1 to 32 keys`) || !strings.Contains(string(reqs[2]), `\"sent\":\"12#\"`) {
				t.Errorf("tool answers: second request %s\nthird %s", reqs[1], reqs[2])
			}
			if got := transcript(rec); !slices.Equal(got, []string{"user: Keypad entry: 4#", "assistant: I pressed 1, 2 and pound."}) {
				t.Errorf("transcript %q", got)
			}
		})
	}
}

// TestModelToolsNeedLine: without a phone line neither built-in is
// offered; with one but no destinations, only sendDTMF.
func TestModelToolsNeedLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		line  *fakeLine
		dests bool
		want  []string
	}{
		{"web call", nil, true, []string{"endCall"}},
		{"phone line, no destinations", &fakeLine{}, false, []string{"endCall", "sendDTMF"}},
		{"phone line and destinations", &fakeLine{}, true, []string{"endCall", "sendDTMF", "transferCall"}},
	} {
		srv, brains := modelFor(t, "openai", llmtest.Turn{Text: []string{"Hello."}})
		a := modelAssistant("openai")
		if !tc.dests {
			a.Transfer.Destinations = nil
		}
		runScript(t, brains, a, tc.line, map[int][]Input{0: {{Kind: UserText, Text: "hi"}}, 1: {{Kind: Hangup}}})
		if reqs := srv.Requests(); len(reqs) != 1 || !slices.Equal(offered(t, reqs[0]), tc.want) {
			t.Errorf("%s: tools offered %q; want %q", tc.name, offered(t, reqs[0]), tc.want)
		}
	}
}

// TestModelTransfer: the reply is said, then the destination's message,
// then the line transfers and the call ends assistant-transferred-call.
func TestModelTransfer(t *testing.T) {
	for _, prov := range []string{"openai", "anthropic"} {
		t.Run(prov, func(t *testing.T) {
			srv, brains := modelFor(t, prov, llmtest.Turn{Text: []string{"Sure."},
				ToolCalls: []llm.ToolCall{{Name: "transferCall", Arguments: json.RawMessage(`{"destination":"+16175550123"}`)}}})
			line := &fakeLine{}
			rec, reason := runScript(t, brains, modelAssistant(prov), line, map[int][]Input{0: {{Kind: UserText, Text: "Sales please"}}})
			if reason != call.ReasonAssistantTransferred || rec.outcome != call.Completed {
				t.Fatalf("Run = %q (%s); want completed %s; events %q", reason, rec.outcome, call.ReasonAssistantTransferred, rec.events)
			}
			want := "transcript user Sales please|done turn_2 Sure.|transcript assistant Sure.|" +
				"done turn_3 Transferring you to sales now.|transcript assistant Transferring you to sales now.|" +
				"transfer +16175550123|ended completed assistant-transferred-call"
			if got := strings.Join(rec.events, "|"); got != want {
				t.Errorf("events:\n got %s\nwant %s", got, want)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("provider requests = %d; want 1", n)
			}
		})
	}
}

// TestModelTransferRefused: a refusal is the tool's answer, the model
// answers the caller, and the call goes on; a destination not configured
// is refused without touching the line.
func TestModelTransferRefused(t *testing.T) {
	srv, brains := modelFor(t, "openai",
		llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "transferCall", Arguments: json.RawMessage(`{"destination":"+15550000000"}`)}}},
		llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "transferCall", Arguments: json.RawMessage(`{"destination":"sip:support@pbx.example.com"}`)}}},
		llmtest.Turn{Text: []string{"Support is busy right now. Can I help instead?"}},
		llmtest.Turn{Text: []string{"Of course."}},
	)
	line := &fakeLine{refuse: errors.New("486 Busy Here")}
	rec, reason := runScript(t, brains, modelAssistant("openai"), line, map[int][]Input{
		0: {{Kind: UserText, Text: "Support please"}}, 1: {{Kind: UserText, Text: "ok then"}}, 2: {{Kind: Hangup}}})
	if reason != call.ReasonCustomerEnded {
		t.Fatalf("Run = %q; want the call to go on until the caller hangs up; events %q", reason, rec.events)
	}
	if !slices.Equal(line.transfers, []string{"sip:support@pbx.example.com"}) {
		t.Errorf("transfers = %q; want only the configured destination", line.transfers)
	}
	want := []string{"user: Support please", "assistant: Support is busy right now. Can I help instead?", "user: ok then", "assistant: Of course."}
	if got := transcript(rec); !slices.Equal(got, want) {
		t.Errorf("transcript:\n got %q\nwant %q", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("provider requests = %d; want 4", len(reqs))
	}
	if !strings.Contains(string(reqs[1]), `+15550000000\\\"; choose one of: +16175550123, sip:support@pbx.example.com`) {
		t.Errorf("second request lacks the refusal of the unknown destination: %s", reqs[1])
	}
	if !strings.Contains(string(reqs[2]), `the transfer was refused: 486 Busy Here; the caller is still on the line`) {
		t.Errorf("third request lacks the line's refusal: %s", reqs[2])
	}
}

// TestModelTransferLimit: a model may try 3 transfers a call; the fourth
// is refused as the tool's answer without touching the line.
func TestModelTransferLimit(t *testing.T) {
	var script []llmtest.Turn
	for range 4 {
		script = append(script, llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "transferCall"}}})
	}
	script = append(script, llmtest.Turn{Text: []string{"I can't transfer you today."}})
	a := modelAssistant("openai")
	a.Transfer.Destinations = a.Transfer.Destinations[:1] // one destination: the argument is optional
	srv, brains := modelFor(t, "openai", script...)
	line := &fakeLine{refuse: errors.New("no answer")}
	// Each refused try says the message (a turn); the model's last reply is the fourth turn.
	rec, reason := runScript(t, brains, a, line, map[int][]Input{0: {{Kind: UserText, Text: "Sales"}}, 4: {{Kind: Hangup}}})
	if reason != call.ReasonCustomerEnded || len(line.transfers) != 3 {
		t.Errorf("Run = %q with %d transfers; want the call to go on after 3; events %q", reason, len(line.transfers), rec.events)
	}
	if reqs := srv.Requests(); !strings.Contains(string(reqs[4]), "3 transfers were already refused") {
		t.Errorf("fifth request lacks the limit: %s", reqs[4])
	}
	if got := transcript(rec); got[len(got)-1] != "assistant: I can't transfer you today." {
		t.Errorf("transcript %q", got)
	}
	if n := strings.Count(strings.Join(rec.events, "|"), "done turn_"); n < 4 {
		t.Errorf("events %q; want the message said before each of the 3 transfers", rec.events)
	}
}

const transferFlow = `{"start": "menu", "nodes": {
	"menu": {"type": "ask", "text": "Press 1 for sales or 0 for the desk.",
		"branches": [
			{"match": {"kind": "dtmf", "value": "1"}, "next": "to_sales"},
			{"match": {"kind": "dtmf", "value": "0"}, "next": "to_desk"}]},
	"to_sales": {"type": "transfer", "destination": "+16175550123", "success": true},
	"to_desk": {"type": "transfer", "destination": "sip:desk@pbx.example.com", "text": "Connecting you to the desk.", "onError": "desk_busy"},
	"desk_busy": {"type": "end", "text": "The desk is busy. Goodbye."}}}`

// TestFlowTransfer: a transfer node says the destination's message (or its
// own text), the line transfers, and the flow ends with the node's verdict;
// refused, it goes to onError or back to the question; without a line it
// is refused the same way.
func TestFlowTransfer(t *testing.T) {
	line := &fakeLine{}
	rec, reason := runScript(t, &Brains{}, phoneAssistant(transferFlow), line, map[int][]Input{0: {{Kind: DTMF, Text: "1"}}})
	if reason != call.ReasonAssistantTransferred || rec.result.FlowSuccess == nil || !*rec.result.FlowSuccess {
		t.Fatalf("Run = %q, result %+v; want %s with a successful flow; events %q", reason, rec.result, call.ReasonAssistantTransferred, rec.events)
	}
	if got := strings.Join(rec.events[len(rec.events)-4:], "|"); got != "done turn_3 Transferring you to sales now.|transcript assistant Transferring you to sales now.|transfer +16175550123|ended completed assistant-transferred-call" {
		t.Errorf("events end %s; want the destination's message, then the transfer", got)
	}

	for _, tc := range []struct {
		name string
		line *fakeLine
	}{{"refused", &fakeLine{refuse: errors.New("603 Decline")}}, {"no line", nil}} {
		rec, reason := runScript(t, &Brains{}, phoneAssistant(transferFlow), tc.line, map[int][]Input{
			0: {{Kind: DTMF, Text: "1"}}, 3: {{Kind: DTMF, Text: "0"}}})
		if reason != call.ReasonAssistantEnded {
			t.Fatalf("%s: Run = %q; events %q", tc.name, reason, rec.events)
		}
		want := []string{
			"assistant: Press 1 for sales or 0 for the desk.",
			"user: Keypad entry: 1", "assistant: Transferring you to sales now.",
			"assistant: Sorry, I couldn't transfer your call. Press 1 for sales or 0 for the desk.",
			"user: Keypad entry: 0", "assistant: Connecting you to the desk.", "assistant: The desk is busy. Goodbye.",
		}
		if got := transcript(rec); !slices.Equal(got, want) {
			t.Errorf("%s: transcript:\n got %q\nwant %q", tc.name, got, want)
		}
		if tc.line != nil && !slices.Equal(tc.line.transfers, []string{"+16175550123", "sip:desk@pbx.example.com"}) {
			t.Errorf("%s: transfers %q", tc.name, tc.line.transfers)
		}
	}
}

// TestTransferStoppedByHangup: a caller who hangs up while the transfer
// message plays is not transferred.
func TestTransferStoppedByHangup(t *testing.T) {
	line := &fakeLine{}
	brain := &scriptBrain{replies: map[string]Reply{"sales": {Text: "Sure.", Transfer: &Transfer{Destination: "+16175550123", Message: "Hold on."}}}}
	s := &speakerRec{recorder: &recorder{}, in: make(chan Input, 16)}
	line.rec = s.recorder
	s.react = func(turnID, text string) []Input {
		if text == "Hold on." {
			return []Input{{Kind: Hangup}}
		}
		return []Input{{Kind: Played, TurnID: turnID}}
	}
	s.in <- Input{Kind: UserText, Text: "sales"}
	a := testAssistant()
	a.FirstMessage = ""
	reason := Run(t.Context(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: brain, Turns: s, Ender: s, Control: line}, s.in, s)
	if reason != call.ReasonCustomerEnded || len(line.transfers) != 0 {
		t.Errorf("Run = %q with transfers %q; want %s and none", reason, line.transfers, call.ReasonCustomerEnded)
	}
}

// TestKeypadKeys: what a DTMF input may hold.
func TestKeypadKeys(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "12#": "12#", "a*d": "A*D", " 9 x 8": "98", "": "", strings.Repeat("5", 40): strings.Repeat("5", MaxKeypadEntry)} {
		if got := keypadKeys(in); got != want {
			t.Errorf("keypadKeys(%q) = %q; want %q", in, got, want)
		}
	}
	if got := KeypadText("0042#"); got != "Keypad entry: 0042#" {
		t.Errorf("KeypadText = %q", got)
	}
	tool := TransferCallTool(assistant.Transfer{Destinations: []assistant.TransferDestination{{Destination: "+16175550123", Description: "Sales"}}})
	if strings.Contains(string(tool.Parameters), "required") || !strings.Contains(string(tool.Parameters), `"enum":["+16175550123"]`) {
		t.Errorf("TransferCallTool(one destination) parameters = %s; want the enum, the argument optional", tool.Parameters)
	}
	_ = fmt.Sprint
}
