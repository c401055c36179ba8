package elevenlabs

import "testing"

func TestParseError(t *testing.T) {
	tests := []struct {
		body, code, msg string
		ok              bool
	}{
		{`{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`, "invalid_api_key", "Invalid API key", true},
		{`{"detail":{"type":"rate_limit_error","code":"concurrent_limit_exceeded","message":"Too many","request_id":"r","param":null}}`, "concurrent_limit_exceeded", "Too many", true},
		{`{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`, "value_error.missing", "field required", true},
		{`{"detail":"Not Found"}`, "", "Not Found", true},
		{`{"detail":{}}`, "", "", false},
		{`{"detail":[{}]}`, "", "", false},
		{`{"message":"x"}`, "", "", false},
		{`<html>`, "", "", false},
	}
	for _, tt := range tests {
		code, msg, ok := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg || ok != tt.ok {
			t.Errorf("parseError(%s) = %q, %q, %v; want %q, %q, %v", tt.body, code, msg, ok, tt.code, tt.msg, tt.ok)
		}
	}
}

func FuzzParseError(f *testing.F) {
	f.Add(`{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`)
	f.Add(`{"detail":[{"msg":"a"},{"msg":"b","type":1}]}`)
	f.Add(`{"detail":"x"}`)
	f.Fuzz(func(t *testing.T, body string) {
		code, msg, ok := parseError([]byte(body))
		if ok && code == "" && msg == "" {
			t.Fatalf("parseError(%q) ok with neither code nor message", body)
		}
	})
}
