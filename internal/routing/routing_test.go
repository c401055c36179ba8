package routing

import (
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	const asst = "asst_k2v7q4mz3xbd5n6r7t2w4y6a3c"
	a, err := ParseAnswer([]byte(`{"assistantId":"` + asst + `","assistantOverrides":{"firstMessage":"Hi {{tier}}"},"variables":{"tier":"gold"}}`))
	if err != nil || a.AssistantID != asst || a.FirstMessage != "Hi {{tier}}" || a.Variables["tier"] != "gold" {
		t.Errorf("ParseAnswer(choice) = %+v, %v", a, err)
	}
	if a, err := ParseAnswer([]byte(`{"forward":"+1 (415) 555-0199"}`)); err != nil || a.Forward != "+14155550199" {
		t.Errorf("ParseAnswer(forward) = %+v, %v, want the number in E.164", a, err)
	}
	if a, err := ParseAnswer([]byte(`{"refuse":"busy"}`)); err != nil || a.Refuse != "busy" {
		t.Errorf("ParseAnswer(busy) = %+v, %v", a, err)
	}
	if a, err := ParseAnswer([]byte(`{}`)); err != nil || a.AssistantID != "" || a.Refuse != "" || a.Forward != "" {
		t.Errorf("ParseAnswer({}) = %+v, %v: the allocated assistant, as is", a, err)
	}
	for body, want := range map[string]string{
		``:                                    "not a JSON object",
		`[]`:                                  "not a JSON object",
		`{"assistantId": `:                    "not the documented JSON",
		`{"assistant":"x"}`:                   "unknown field",
		`{"assistantId":"nope"}`:              "is not an assistant id",
		`{"assistantOverrides":{"voice":{}}}`: "it takes firstMessage",
		`{"assistantOverrides":{"firstMessage":"{{"}}`: "template",
		`{"variables":{"call":1}}`:                     "variables.call",
		`{"refuse":"rejected"}`:                        `the only refusal is "busy"`,
		`{"forward":"not a number"}`:                   "forward:",
		`{"refuse":"busy","forward":"+14155550199"}`:   "both refuses and forwards",
		"{\"assistantId\":\"a\x00\"}":                  "text rules",
	} {
		_, err := ParseAnswer([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAnswer(%q) = %v, want an error containing %q", body, err, want)
		}
	}
}

func TestRecordJSON(t *testing.T) {
	r := Record{Source: SourceFallback, Reason: "timeout"}
	if got := string(r.JSON()); got != `{"source":"fallback","reason":"timeout"}` {
		t.Errorf("JSON = %s", got)
	}
	if back := ParseRecord(r.JSON()); back != r {
		t.Errorf("ParseRecord = %+v", back)
	}
	if (ParseRecord(nil) != Record{}) {
		t.Error("ParseRecord(nil) should be the zero Record")
	}
}
