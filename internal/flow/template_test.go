package flow

import (
	"encoding/json"
	"testing"
)

func TestRender(t *testing.T) {
	vars := map[string]any{
		"date":  "2026-12-01",
		"time":  "15:30",
		"hour":  "15:00",
		"at":    "2026-12-01T09:05",
		"iso":   "2026-12-01", // captured by a regex: not a date
		"n":     3.0,
		"big":   1e21,
		"half":  0.5,
		"yes":   true,
		"name":  "Jane",
		"nil":   nil,
		"res":   map[string]any{"code": json.Number("0042"), "list": []any{"a", map[string]any{"b": "deep"}}, "ok": false},
		"under": "score",
	}
	kinds := map[string]valueKind{"date": dateValue, "time": timeValue, "hour": timeValue, "at": dateTimeValue}
	tests := []struct {
		in      string
		spoken  string
		literal string
	}{
		{"{{date}}", "Tuesday, December 1, 2026", "2026-12-01"},
		{"{{ date }}", "Tuesday, December 1, 2026", "2026-12-01"},
		{"{{time}} / {{hour}}", "3:30 PM / 3 PM", "15:30 / 15:00"},
		{"{{at}}", "Tuesday, December 1, 2026 at 9:05 AM", "2026-12-01T09:05"},
		{"{{iso}}", "2026-12-01", "2026-12-01"},
		{"{{n}} {{big}} {{half}}", "3 1000000000000000000000 0.5", "3 1000000000000000000000 0.5"},
		{"{{yes}}", "yes", "true"},
		{"{{res.ok}}", "no", "false"},
		{"{{res.code}}", "0042", "0042"},
		{"{{res.list.1.b}} {{res.list.0}}", "deep a", "deep a"},
		{"[{{res.list.2}}{{res.list.x}}{{res.code.x}}{{name.first}}{{nil}}{{missing}}]", "[]", "[]"},
		{"{{res.list}}", `["a",{"b":"deep"}]`, `["a",{"b":"deep"}]`},
		{"Hi {{name}}, {{name}}!", "Hi Jane, Jane!", "Hi Jane, Jane!"},
		{"{{ 1 }} {x} {{name} {{_}} {{under}}", "{{ 1 }} {x} {{name}  score", "{{ 1 }} {x} {{name}  score"},
		{"no templates", "no templates", "no templates"},
	}
	for _, tt := range tests {
		if got := render(tt.in, vars, kinds, spoken); got != tt.spoken {
			t.Errorf("render(%q, spoken) = %q; want %q", tt.in, got, tt.spoken)
		}
		if got := render(tt.in, vars, kinds, literal); got != tt.literal {
			t.Errorf("render(%q, literal) = %q; want %q", tt.in, got, tt.literal)
		}
	}
}

func TestRenderArgs(t *testing.T) {
	vars := map[string]any{"date": "2026-12-01", "n": 4.0}
	kinds := map[string]valueKind{"date": dateValue}
	args, err := decodeJSON([]byte(`{"d": "{{date}}", "n": "{{n}}", "raw": 12345678901234567890, "html": "<{{date}}> & co",
		"list": ["{{n}}", true, null, {"x": "{{missing}}"}], "{{date}}": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(renderArgs(args, vars, kinds))
	want := `{"d":"2026-12-01","html":"<2026-12-01> & co","list":["4",true,null,{"x":""}],"n":"4","raw":12345678901234567890,"{{date}}":1}`
	if got != want {
		t.Errorf("renderArgs = %s; want %s", got, want)
	}
	if got := string(renderArgs(nil, vars, kinds)); got != "{}" {
		t.Errorf("renderArgs(nil) = %s; want {}", got)
	}
}
