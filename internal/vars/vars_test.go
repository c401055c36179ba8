package vars

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	v := Values{
		"contact": map[string]any{"name": "Ada Lovelace", "firstName": "Ada", "metadata": map[string]any{"plan": "gold"}},
		"items":   []any{"tea", json.Number("2")},
		"empty":   "",
		"n":       json.Number("12.50"),
		"ok":      true,
		"obj":     map[string]any{"a": json.Number("1")},
	}
	for _, tc := range []struct{ in, want string }{
		{"Hi {{contact.firstName}}!", "Hi Ada!"},
		{"Hi {{ contact.firstName | there }}!", "Hi Ada!"},
		{"Hi {{nobody.firstName | there}}!", "Hi there!"},
		{"Hi {{empty|friend}}", "Hi friend"},
		{"Hi {{missing}}.", "Hi ."},
		{"{{contact.metadata.plan}} plan", "gold plan"},
		{"{{items.1}} {{items.0}} {{items.9|none}}", "2 tea none"},
		{"{{n}} {{ok}} {{obj}}", "12.50 true {\"a\":1}"},
		{"no templates", "no templates"},
		{"broken {{ and {{contact.name}}", "broken {{ and Ada Lovelace"},
		{"{{contact.name", "{{contact.name"},
		{"{{1abc}} stays", "{{1abc}} stays"},
	} {
		if got := Render(tc.in, v, nil); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"", "plain", "{{a}}", "{{ a.b.0 | fall back }}", "x {{a}} y {{b|c}}", "a } b }} c"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"Hi {{name", "byte 3: {{ is not closed"},
		{"{{}}", "names no variable"},
		{"{{ | x}}", "names no variable"},
		{"{{1a}}", `"1a" is not a variable name`},
		{"{{a..b}}", "empty path segment"},
		{"{{a.b-c}}", "neither a field name nor an array index"},
		{"{{a|{{b}}}}", "fallback may not hold {{"},
		{"ok {{a}} then {{b c}}", "byte 14"},
	} {
		err := Check(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	got := strings.Join(Names("{{a}} {{b.c}} {{a|x}} {{bad"), ",")
	if got != "a,b" {
		t.Errorf("Names = %q, want a,b", got)
	}
}

func TestRequest(t *testing.T) {
	v, ps := Request("variables", json.RawMessage(`{"plan":"gold","n":3,"deep":{"x":[1,2]}}`))
	if len(ps) != 0 || v["plan"] != "gold" || v["n"] != json.Number("3") {
		t.Fatalf("Request(ok) = %v, %v", v, ps)
	}
	if v, ps := Request("variables", nil); v != nil || ps != nil {
		t.Errorf("Request(absent) = %v, %v, want nothing", v, ps)
	}
	big := `{"a":"` + strings.Repeat("x", MaxBytes) + `"}`
	many := map[string]int{}
	for i := range MaxNames + 1 {
		many["v"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct{ raw, field, want string }{
		{`[1]`, "variables", "must be a JSON object"},
		{`"x"`, "variables", "must be a JSON object"},
		{big, "variables", "bytes of JSON"},
		{string(manyJSON), "variables", "names; at most 64"},
		{`{"call":"x"}`, "variables.call", "set by the server"},
		{`{"contact":{}}`, "variables.contact", "reserved"},
		{`{"first-name":"x"}`, "variables.first-name", "not a variable name"},
		{`{"` + strings.Repeat("n", MaxNameLen+1) + `":1}`, "variables." + strings.Repeat("n", MaxNameLen+1), "at most 64"},
	} {
		_, ps := Request("variables", json.RawMessage(tc.raw))
		found := false
		for _, p := range ps {
			if p.Field == tc.field && strings.Contains(p.Message, tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("Request(%.40s) = %+v, want %s: …%s…", tc.raw, ps, tc.field, tc.want)
		}
	}
}

func TestForCallAndClock(t *testing.T) {
	v := ForCall(Call{
		ID: "call_1", Type: "phone", Direction: "outbound", From: "+14155550100", To: "+14155550123",
		Contact:          &Contact{ID: "ct_1", Name: "Ada Lovelace", PhoneNumber: "+14155550123", Timezone: "America/Los_Angeles", Metadata: json.RawMessage(`{"plan":"gold"}`)},
		Message:          "Your plan renews soon",
		ScheduleTimezone: "America/New_York",
		Request:          Values{"plan": "x"},
	})
	for in, want := range map[string]string{
		"{{call.id}} {{call.direction}} {{call.to}}":         "call_1 outbound +14155550123",
		"{{contact.firstName}} {{contact.metadata.plan}}":    "Ada gold",
		"{{message}} / {{timezone}} / {{plan}}":              "Your plan renews soon / America/Los_Angeles / x",
		"{{today}} {{now}} {{date}} {{time}}":                "",
		"{{contact.name | there}} on {{call.from | a line}}": "Ada Lovelace on +14155550100",
	} {
		if want == "" {
			continue
		}
		if got := Render(in, v, nil); got != want {
			t.Errorf("Render(%q) = %q, want %q", in, got, want)
		}
	}
	if _, ok := v["today"]; ok {
		t.Error("ForCall set today: the clock is added when the conversation starts")
	}
	// 2026-12-01 23:30 UTC is 15:30 on the same day in Los Angeles and
	// already December 2 in Tokyo.
	at := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC)
	if got := Render("{{today}} at {{now}} ({{date}} {{time}})", v.Clock(at), nil); got != "Tuesday, December 1, 2026 at 3:30 PM (2026-12-01 15:30)" {
		t.Errorf("Clock in the contact's zone = %q", got)
	}
	tokyo := ForCall(Call{ID: "c", Type: "phone", ScheduleTimezone: "Asia/Tokyo"})
	if got := Render("{{date}} {{timezone}}", tokyo.Clock(at), nil); got != "2026-12-02 Asia/Tokyo" {
		t.Errorf("Clock in the schedule's zone (no contact) = %q", got)
	}
	web := ForCall(Call{ID: "c", Type: "web"})
	if got := Render("{{timezone}} {{call.direction|none}} {{contact.name|there}} {{message|no message}}", web, nil); got != "UTC none there no message" {
		t.Errorf("a web call's variables = %q", got)
	}
	if FirstName("  Ada  Lovelace ") != "Ada" || FirstName("") != "" {
		t.Error("FirstName")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	v := ForCall(Call{ID: "c", Type: "web", Request: Values{"n": json.Number("1.50"), "s": "<b>"}})
	back, err := Decode([]byte(v.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	if Render("{{n}} {{s}} {{call.id}}", back, nil) != "1.50 <b> c" {
		t.Errorf("round trip = %v", back)
	}
	if (Values{}).JSON() != "" {
		t.Error("no variables should store as empty")
	}
}
