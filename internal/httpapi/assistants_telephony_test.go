package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"switchboard/internal/assistant"
)

// telephonyOf is the part of an assistant the phone settings are.
func telephonyOf(a map[string]any) map[string]any {
	return map[string]any{"transfer": a["transfer"], "recording": a["recording"], "voicemail": a["voicemail"]}
}

// TestAssistantTelephonySettings: transfer, recording and voicemail are
// decoded, stored, shown and patched like the other nested objects, and
// the answers are what openapi.json describes.
func TestAssistantTelephonySettings(t *testing.T) {
	b := newAPI(t, assistant.DefaultProviders())
	defaults := `{"transfer":{"destinations":[]},"recording":{"enabled":false},"voicemail":{"detect":false,"action":"hangup","message":""}}`

	st, raw := b.raw("POST", "/v1/assistants", `{"name":"Receptionist"}`)
	if st != 201 {
		t.Fatalf("POST /v1/assistants = %d: %s", st, raw)
	}
	conformsTo(t, "AssistantResponse", raw)
	a := b.must(200, "GET", "/v1/assistants/"+string(jsonOf(t, string(raw)).(map[string]any)["data"].(map[string]any)["id"].(string)), "")
	if got, want := telephonyOf(a), jsonOf(t, defaults); !reflect.DeepEqual(got, want) {
		t.Errorf("an assistant created without phone settings shows %v; want the defaults %v", got, want)
	}

	body := `{"name":"Front desk",
		"transfer":{"destinations":[
			{"destination":"+16175550123","description":"Sales desk","message":"Transferring you to sales now."},
			{"destination":"sip:support@pbx.example.com"}]},
		"recording":{"enabled":true},
		"voicemail":{"detect":true,"action":"leaveMessage","message":"Hi, this is Bright Smile Dental. Please call us back."}}`
	conformsTo(t, "AssistantCreate", []byte(body))
	st, raw = b.raw("POST", "/v1/assistants", body)
	if st != 201 {
		t.Fatalf("POST /v1/assistants %s = %d: %s", body, st, raw)
	}
	conformsTo(t, "AssistantResponse", raw)
	full := `{"transfer":{"destinations":[
			{"destination":"+16175550123","description":"Sales desk","message":"Transferring you to sales now."},
			{"destination":"sip:support@pbx.example.com","description":"","message":""}]},
		"recording":{"enabled":true},
		"voicemail":{"detect":true,"action":"leaveMessage","message":"Hi, this is Bright Smile Dental. Please call us back."}}`
	id := jsonOf(t, string(raw)).(map[string]any)["data"].(map[string]any)["id"].(string)
	path := "/v1/assistants/" + id
	if got := telephonyOf(b.must(200, "GET", path, "")); !reflect.DeepEqual(got, jsonOf(t, full)) {
		t.Errorf("GET %s = %v; want %v", path, got, jsonOf(t, full))
	}

	for _, step := range []struct{ patch, want string }{
		{`{"firstMessage":"Hi"}`, full}, // other fields keep them
		{ // a nested object sent replaces the whole object
			`{"voicemail":{"message":"Call us back."},"transfer":{"destinations":[{"destination":"sips:desk@pbx.example.com"}]}}`,
			`{"transfer":{"destinations":[{"destination":"sips:desk@pbx.example.com","description":"","message":""}]},
			  "recording":{"enabled":true},"voicemail":{"detect":false,"action":"hangup","message":"Call us back."}}`,
		},
		{`{"transfer":null,"recording":null,"voicemail":null}`, defaults}, // null resets
	} {
		conformsTo(t, "AssistantUpdate", []byte(step.patch))
		got := telephonyOf(b.must(200, "PATCH", path, step.patch))
		if want := jsonOf(t, step.want); !reflect.DeepEqual(got, want) {
			t.Errorf("PATCH %s %s: got %v; want %v", path, step.patch, got, want)
		}
		if again := telephonyOf(b.must(200, "GET", path, "")); !reflect.DeepEqual(again, got) {
			t.Errorf("GET %s after PATCH %s: got %v; want %v", path, step.patch, again, got)
		}
	}
}

// TestAssistantTelephonyErrors: bad phone settings are 400s naming each
// field, the body's shape first, then the values.
func TestAssistantTelephonyErrors(t *testing.T) {
	b := newAPI(t, assistant.DefaultProviders())
	for _, tc := range []struct {
		name, body string
		want       map[string]string
	}{
		{"shape", `{"name":"x",
			"transfer":{"destinations":[{"description":"no number"},{"destination":5,"extra":1}],"timeout":3},
			"recording":{"enabled":"yes"},
			"voicemail":{"action":1,"beep":true}}`,
			map[string]string{
				"transfer.destinations[0].destination": "is required",
				"transfer.destinations[1].destination": "must be a string",
				"transfer.destinations[1].extra":       "is not a known field",
				"transfer.timeout":                     "is not a known field",
				"recording.enabled":                    "must be true or false",
				"voicemail.action":                     "must be a string",
				"voicemail.beep":                       "is not a known field",
			}},
		{"values", `{"name":"x",
			"transfer":{"destinations":[{"destination":"617-555-0123"},{"destination":"sip:desk:pw@pbx.example.com"},{"destination":"+16175550123","message":"` + strings.Repeat("m", 1001) + `"}]},
			"voicemail":{"action":"leaveMessage"}}`,
			map[string]string{
				"transfer.destinations[0].destination": "must be a phone number in E.164 form (+16175550123) or a SIP URI (sip:desk@pbx.example.com)",
				"transfer.destinations[1].destination": "must not carry a password",
				"transfer.destinations[2].message":     "must be at most 1000 bytes",
				"voicemail.message":                    `is required and must not be blank when action is "leaveMessage"`,
			}},
		{"a flow's transfer destination", `{"name":"x","flow":{"start":"x","nodes":{"x":{"type":"transfer","destination":"+1617555012"}}}}`,
			map[string]string{"flow.nodes.x.destination": "is not a valid phone number for its country code"}},
		{"a built-in tool name", `{"name":"x","tools":[{"name":"sendDTMF","url":"ftp://tools.example.com/x"}]}`,
			map[string]string{"tools[0].name": "not a built-in tool (endCall, sendDTMF, transferCall)", "tools[0].url": "must be an http(s) URL"}},
	} {
		for _, method := range []string{"POST", "PATCH"} {
			path := "/v1/assistants"
			if method == "PATCH" {
				path += "/" + b.must(201, "POST", "/v1/assistants", `{"name":"to patch"}`)["id"].(string)
			}
			st, out := b.do(method, path, tc.body)
			if st != http.StatusBadRequest {
				t.Errorf("%s %s (%s) = %d; want 400; body %v", method, path, tc.name, st, out)
				continue
			}
			got := fieldErrors(out)
			for f, msg := range tc.want {
				if !strings.Contains(got[f], msg) {
					t.Errorf("%s %s (%s): error on %s = %q; want it to contain %q (all: %v)", method, path, tc.name, f, got[f], msg, got)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%s %s (%s): errors on %v; want exactly %d", method, path, tc.name, got, len(tc.want))
			}
		}
	}
}
