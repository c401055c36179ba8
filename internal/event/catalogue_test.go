package event_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/schedule"
	"switchboard/internal/webhook"
)

// The documents the catalogue is held to: the OpenAPI document's
// webhooks (what integrators generate receivers from) and the API
// reference's "### Events" table.
const (
	openAPIPath = "../httpapi/openapi.json"
	apiDocPath  = "../../docs/api.md"
)

// TestTypesMatchDocuments: Types is the OpenAPI document's webhooks, its
// WebhookEvent enum and the rows of docs/api.md's Events table, no more
// and no fewer.
func TestTypesMatchDocuments(t *testing.T) {
	d := docs(t)
	want := slices.Sorted(slices.Values(event.Types))
	if len(slices.Compact(slices.Clone(want))) != len(event.Types) {
		t.Fatalf("event.Types %v has a type twice", event.Types)
	}
	if got := slices.Sorted(maps.Keys(d.schemas)); !slices.Equal(got, want) {
		t.Errorf("%s webhooks = %v, want event.Types %v", openAPIPath, got, want)
	}
	var enum struct{ Enum []string }
	if err := member(d.openAPI, "components.schemas.WebhookEvent", &enum); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(enum.Enum)); !slices.Equal(got, want) {
		t.Errorf("%s WebhookEvent enum = %v, want event.Types %v", openAPIPath, got, want)
	}
	if got := slices.Sorted(maps.Keys(d.table)); !slices.Equal(got, want) {
		t.Errorf("%s Events table types = %v, want event.Types %v", apiDocPath, got, want)
	}
}

// TestBuildersMatchDocuments: every builder's event, made from calls in
// the states that send it and wrapped in the delivery envelope
// (webhook.NewMessage), is valid under its webhook's body schema in the
// OpenAPI document, and its data has exactly the members docs/api.md's
// Events table lists for it. The schema is its type's alone: the same
// body under another type is refused.
func TestBuildersMatchDocuments(t *testing.T) {
	d := docs(t)
	seen := map[string]bool{}
	for _, b := range built(t) {
		seen[b.ev.Type] = true
		if err := check(t, b.ev); err != nil {
			t.Errorf("%s: %v", b.name, err)
		}
		schema := d.schemas[b.ev.Type]
		for _, other := range event.Types {
			m, err := webhook.NewMessage(other, b.ev.At, json.RawMessage(b.ev.Data))
			if err != nil {
				t.Fatalf("webhook.NewMessage(%s): %v", other, err)
			}
			if other != b.ev.Type && schema != nil && schema.Validate(unmarshal(t, m.Body)) == nil {
				t.Errorf("%s: webhook %s's schema accepts the body as %s: %s", b.name, b.ev.Type, other, m.Body)
			}
		}
	}
	for _, typ := range event.Types {
		if !seen[typ] {
			t.Errorf("no builder of the test made a %s event", typ)
		}
	}
}

// TestCheckCatchesDrift: the check of TestBuildersMatchDocuments fails a
// payload that drops a member or misnames one, so it would fail a
// builder that did.
func TestCheckCatchesDrift(t *testing.T) {
	for _, b := range built(t) {
		var data map[string]json.RawMessage
		if err := json.Unmarshal(b.ev.Data, &data); err != nil {
			t.Fatalf("%s: data %s is not a JSON object: %v", b.name, b.ev.Data, err)
		}
		for name, v := range data {
			for what, mutate := range map[string]func(map[string]json.RawMessage){
				"without " + name:                    func(m map[string]json.RawMessage) { delete(m, name) },
				"with " + name + " as " + name + "X": func(m map[string]json.RawMessage) { delete(m, name); m[name+"X"] = v },
			} {
				m := maps.Clone(data)
				mutate(m)
				ev := b.ev
				ev.Data, _ = json.Marshal(m)
				if check(t, ev) == nil {
					t.Errorf("%s %s: the check passes %s", b.name, what, ev.Data)
				}
			}
		}
	}
}

// builtEvent is one builder's event, named for failure messages.
type builtEvent struct {
	name string
	ev   event.Event
}

// built are events of every builder, from realistic values: a web call
// and a phone call at each state that sends events (also a web call
// nobody joined and a busy one), a scheduled call retried, one suppressed.
func built(t *testing.T) []builtEvent {
	t.Helper()
	const base = "https://calls.example.com/"
	t0 := time.Date(2026, 11, 21, 7, 14, 18, 817e6, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	must := func(c call.Call, chs ...call.Change) call.Call {
		for _, ch := range chs {
			if err := c.Transition(ch); err != nil {
				t.Fatalf("call %s: Transition(%+v): %v", c.ID, ch, err)
			}
			c.UpdatedAt = ch.At
		}
		return c
	}
	web := call.Call{ID: "call_cgusoxqu7nybtl6ixm6yjmfnum", OrgID: "org_x", Type: call.Web, Status: call.Queued,
		AssistantID: "asst_3wdspyajob3jhmupka7zcw4t7a", CreatedAt: t0, UpdatedAt: t0}
	phone := call.Call{ID: "call_q6mceljzssqskg2sd3bvxbpymy", OrgID: "org_x", Type: call.Phone, Status: call.Queued,
		AssistantID: "asst_igsi57tfwvho4yvu53iqj3l5sy", PurchaseID: "pn_ltbmhwu3xsj4j5ruymzzzs66fe", From: "+12125550100",
		To: "+14155550001", Provider: "sandbox", Direction: call.Outbound, AttemptID: "att_64sqvqv7a63dlswloyzkdbrrxy",
		CreatedAt: t0, UpdatedAt: t0}
	webLive := must(web, call.Change{To: call.InProgress, At: at(time.Second), NodeID: "node_1"})
	webUnjoined := must(web, call.Change{To: call.Ended, At: at(5 * time.Minute), Outcome: call.Failed, Reason: call.ReasonClientNeverConnected})
	webEnded := must(webLive, call.Change{To: call.Ended, At: at(90 * time.Second), Outcome: call.Completed, Reason: call.ReasonCustomerEnded})
	ringing := must(phone, call.Change{To: call.Ringing, At: at(time.Second), ProviderCallID: "sb_1"})
	answered := must(ringing, call.Change{To: call.InProgress, At: at(3 * time.Second)})
	recorded := must(answered, call.Change{To: call.Ended, At: at(60 * time.Second), Outcome: call.Completed, Reason: call.ReasonAssistantEnded})
	recorded.Recording = "recordings/org_x/" + recorded.ID + ".wav"
	busy := must(ringing, call.Change{To: call.Ended, At: at(2 * time.Second), Outcome: call.Busy, Reason: call.ReasonCustomerBusy})

	var out []builtEvent
	for name, c := range map[string]call.Call{"web call joined": webLive, "web call ended": webEnded, "web call nobody joined": webUnjoined, "phone call answered": answered,
		"recorded scheduled call ended": recorded, "busy scheduled call": busy} {
		for _, ev := range event.ForCall(c, base) {
			out = append(out, builtEvent{"ForCall(" + name + ") " + ev.Type, ev})
		}
	}
	out = append(out,
		builtEvent{"NewAttemptRetrying(busy)", event.NewAttemptRetrying(busy, base, event.Retry{ScheduleID: "sch_xpsv5ckzqlr3cd3nkpbpqzzbua",
			AttemptID: busy.AttemptID, Try: 2, RequestedAt: at(32 * time.Minute), DueAt: at(17 * time.Hour)})},
		builtEvent{"NewAttemptSuppressed", event.NewAttemptSuppressed(phone)},
		builtEvent{"NewSchedulePaused", event.NewSchedulePaused("sch_xpsv5ckzqlr3cd3nkpbpqzzbua", at(time.Hour))},
		builtEvent{"NewScheduleResumed", event.NewScheduleResumed("sch_xpsv5ckzqlr3cd3nkpbpqzzbua", at(2*time.Hour))},
		builtEvent{"NewAnalysisReady", event.NewAnalysisReady(recorded, base, []byte(`{"summary":"Caller: At 3 pm.","sentiment":{"label":"neutral","score":0},`+
			`"successEvaluation":true,"structuredData":{"time":"15:00"},"notes":[]}`), at(61*time.Second))},
	)
	var progress schedule.Counters
	progress.Add(schedule.Dialed, false, true, string(call.Completed), 3)
	progress.Add(schedule.Dialed, false, true, string(call.Busy), 1)
	progress.Add(schedule.Suppressed, false, false, "", 1)
	progress.Add(schedule.Canceled, false, false, "", 2)
	out = append(out, builtEvent{"NewScheduleCompleted", event.NewScheduleCompleted("sch_xpsv5ckzqlr3cd3nkpbpqzzbua", at(18*time.Hour), progress)})
	slices.SortFunc(out, func(a, b builtEvent) int { return strings.Compare(a.name, b.name) })
	return out
}

// check reports how ev fails the documents: its delivery body under its
// webhook's schema, its data's members against the Events table's.
func check(t *testing.T, ev event.Event) error {
	t.Helper()
	if !json.Valid(ev.Data) {
		return fmt.Errorf("data %s is not JSON", ev.Data)
	}
	m, err := webhook.NewMessage(ev.Type, ev.At, json.RawMessage(ev.Data))
	if err != nil {
		return fmt.Errorf("webhook.NewMessage: %v", err)
	}
	d := docs(t)
	schema := d.schemas[ev.Type]
	if schema == nil {
		return fmt.Errorf("%s has no webhook %s", openAPIPath, ev.Type)
	}
	if err := schema.Validate(unmarshal(t, m.Body)); err != nil {
		return fmt.Errorf("body %s is invalid under webhook %s's schema: %v", m.Body, ev.Type, err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("data %s is not an object: %v", ev.Data, err)
	}
	got := slices.Sorted(maps.Keys(data))
	if want := d.table[ev.Type]; !slices.Equal(got, want) {
		return fmt.Errorf("data members %v, want %v (%s Events table), data %s", got, want, apiDocPath, ev.Data)
	}
	return nil
}

// documents are the OpenAPI document, each webhook's compiled body
// schema and the Events table, read once (loadDocuments).
type documents struct {
	openAPI []byte
	schemas map[string]*jsonschema.Schema // by event type
	table   map[string][]string           // event type → data members, sorted
}

var loadDocuments = sync.OnceValues(func() (*documents, error) {
	d := &documents{schemas: map[string]*jsonschema.Schema{}}
	var err error
	if d.openAPI, err = os.ReadFile(openAPIPath); err != nil {
		return nil, err
	}
	if d.table, err = eventsTable(apiDocPath); err != nil {
		return nil, err
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.openAPI))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", openAPIPath, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // date-time is a promise too
	if err := c.AddResource(docURL, res); err != nil {
		return nil, err
	}
	var hooks map[string]json.RawMessage
	if err := member(d.openAPI, "webhooks", &hooks); err != nil {
		return nil, err
	}
	for typ := range hooks {
		if d.schemas[typ], err = c.Compile(docURL + "#/webhooks/" + typ + "/post/requestBody/content/application~1json/schema"); err != nil {
			return nil, fmt.Errorf("webhook %s's body schema: %w", typ, err)
		}
	}
	return d, nil
})

// docs returns the documents, failing t when they cannot be read.
func docs(t *testing.T) *documents {
	t.Helper()
	d, err := loadDocuments()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// eventsTable reads the "### Events" table of the API reference at path:
// every type it lists, with the members of its data column (the quoted
// names: "callId", not example values such as "call_…").
func eventsTable(path string) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, table, ok := strings.Cut(string(b), "\n### Events\n")
	if !ok {
		return nil, fmt.Errorf("%s has no ### Events section", path)
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	memberName := regexp.MustCompile(`"([A-Za-z]+)"`)
	typeName := regexp.MustCompile("`([a-z.]+)`")
	out := map[string][]string{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, " | ")
		if !strings.HasPrefix(row, "| `") || len(cells) != 3 {
			continue
		}
		var names []string
		for _, m := range memberName.FindAllStringSubmatch(cells[2], -1) {
			names = append(names, m[1])
		}
		slices.Sort(names)
		for _, m := range typeName.FindAllStringSubmatch(cells[0], -1) {
			out[m[1]] = names
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rows read from the Events table", path)
	}
	return out, nil
}

// docURL names the OpenAPI document inside the schema compiler.
const docURL = "urn:switchboard:openapi.json"

// member decodes the member at path (dot-separated names) of doc into v.
func member(doc []byte, path string, v any) error {
	raw := json.RawMessage(doc)
	for _, name := range strings.Split(path, ".") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m[name] == nil {
			return fmt.Errorf("%s has no %s (%v)", openAPIPath, path, err)
		}
		raw = m[name]
	}
	return json.Unmarshal(raw, v)
}

// unmarshal decodes b as the schema validator wants it.
func unmarshal(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", b, err)
	}
	return v
}
