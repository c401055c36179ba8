package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/id"
)

// conformsTo checks that an answer is valid under a schema of openapi.json
// ("#/components/schemas/" + name), so the document says what the server sends.
func conformsTo(t *testing.T, name string, answer []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(OpenAPI()))
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	sch, err := c.Compile("openapi.json#/components/schemas/" + name)
	if err != nil {
		t.Fatalf("compile schema %s: %v", name, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(answer))
	if err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, answer)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("answer does not conform to openapi.json's %s: %v\n%s", name, err, answer)
	}
}

// TestCallLatencyViews: GET /v1/calls/{id} shows the latency summary and
// the transcript each voice turn's latency, as openapi.json describes them.
func TestCallLatencyViews(t *testing.T) {
	b := newAPI(t, assistant.DefaultProviders())
	ctx := t.Context()
	now := time.Now().UTC()
	c := call.Call{ID: id.New(id.Call), OrgID: b.org, Type: call.Web, Status: call.Queued, AssistantID: id.New(id.Assistant), CreatedAt: now, UpdatedAt: now}
	if err := b.db.CreateCall(ctx, c); err != nil {
		t.Fatalf("CreateCall: %v", err)
	}
	path := "/v1/calls/" + c.ID

	st, raw := b.raw("GET", path, "")
	if st != 200 {
		t.Fatalf("GET %s = %d: %s", path, st, raw)
	}
	conformsTo(t, "CallResponse", raw)
	if d := b.must(200, "GET", path, ""); d["latency"] != nil || d["id"] != c.ID {
		t.Errorf("GET %s without turns: id %v, latency %v; want the call with latency null", path, d["id"], d["latency"])
	}

	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	turns := []call.Turn{
		{Seq: 1, Role: call.RoleAssistant, Text: "Hello!"},
		{Seq: 2, Role: call.RoleUser, Text: "Hi."},
		{Seq: 3, Role: call.RoleAssistant, Text: "How can I help?", Latency: us(812_500),
			Breakdown: &call.Breakdown{Endpointing: us(250_000), Transcriber: us(90_125), Model: us(310_000), Voice: us(150_000), Platform: us(12_375), Total: us(812_500)}},
		{Seq: 4, Role: call.RoleUser, Text: "Book me in."},
		{Seq: 5, Role: call.RoleAssistant, Text: "Do", Latency: us(612_500), Interrupted: true,
			Breakdown: &call.Breakdown{Endpointing: us(250_000), Transcriber: us(70_000), Model: us(200_000), Voice: us(80_000), Platform: us(12_500), Total: us(612_500)}},
	}
	for _, tn := range turns {
		tn.ID, tn.OrgID, tn.CallID, tn.StartedAt, tn.EndedAt = id.New("turn"), b.org, c.ID, now, now
		if err := b.db.AppendTurn(ctx, tn); err != nil {
			t.Fatalf("AppendTurn(seq %d): %v", tn.Seq, err)
		}
	}

	st, raw = b.raw("GET", path, "")
	if st != 200 {
		t.Fatalf("GET %s = %d: %s", path, st, raw)
	}
	conformsTo(t, "CallResponse", raw)
	var got struct {
		Data struct {
			Latency json.RawMessage `json:"latency"`
		} `json:"data"`
	}
	_ = json.Unmarshal(raw, &got)
	want := `{"turns":2,
		"p50":{"endpointingMs":250,"transcriberMs":70,"modelMs":200,"voiceMs":80,"platformMs":12.375,"totalMs":612.5},
		"p95":{"endpointingMs":250,"transcriberMs":90.125,"modelMs":310,"voiceMs":150,"platformMs":12.5,"totalMs":812.5}}`
	if !reflect.DeepEqual(jsonOf(t, string(got.Data.Latency)), jsonOf(t, want)) {
		t.Errorf("GET %s latency = %s; want %s", path, got.Data.Latency, want)
	}

	st, raw = b.raw("GET", path+"/transcripts", "")
	if st != 200 {
		t.Fatalf("GET %s/transcripts = %d: %s", path, st, raw)
	}
	conformsTo(t, "TranscriptResponse", raw)
	var tr struct {
		Data []struct {
			Seq     int             `json:"seq"`
			Latency json.RawMessage `json:"latency"`
		} `json:"data"`
	}
	_ = json.Unmarshal(raw, &tr)
	wantTurn := map[int]string{
		1: `null`, 2: `null`, 4: `null`,
		3: `{"endpointingMs":250,"transcriberMs":90.125,"modelMs":310,"voiceMs":150,"platformMs":12.375,"totalMs":812.5}`,
		5: `{"endpointingMs":250,"transcriberMs":70,"modelMs":200,"voiceMs":80,"platformMs":12.5,"totalMs":612.5}`,
	}
	if len(tr.Data) != len(wantTurn) {
		t.Fatalf("GET %s/transcripts = %d turns; want %d", path, len(tr.Data), len(wantTurn))
	}
	for _, tn := range tr.Data {
		if !reflect.DeepEqual(jsonOf(t, string(tn.Latency)), jsonOf(t, wantTurn[tn.Seq])) {
			t.Errorf("GET %s/transcripts turn %d latency = %s; want %s", path, tn.Seq, tn.Latency, wantTurn[tn.Seq])
		}
	}

	st, raw = b.raw("GET", "/v1/calls", "")
	if st != 200 || bytes.Contains(raw, []byte(`"latency"`)) {
		t.Errorf("GET /v1/calls = %d %s; want 200 without latency (listings do not read turns)", st, raw)
	}
	conformsTo(t, "CallListResponse", raw)
}

// TestAssistantConformsToOpenAPI: an assistant with every speech setting is
// what openapi.json's Assistant describes.
func TestAssistantConformsToOpenAPI(t *testing.T) {
	b := newAPI(t, speechProviders)
	for _, body := range []string{
		`{"name":"plain"}`,
		`{"name":"voice","voice":{"provider":"deepgram","fallback":{"provider":"local"}},
		  "transcriber":{"provider":"deepgram","fallback":{"provider":"local"}},
		  "endpointing":{"silenceMs":600},"bargeIn":{"disabled":true}}`,
	} {
		st, raw := b.raw("POST", "/v1/assistants", body)
		if st != 201 {
			t.Fatalf("POST /v1/assistants %s = %d: %s", body, st, raw)
		}
		conformsTo(t, "AssistantResponse", raw)
	}
}
