package app

import (
	"testing"
)

// TestWebhookURLGuardIPv6 registers endpoint and tool URLs whose host is an
// IPv6 address carrying a loopback, private or metadata IPv4 address: each is
// a 400 naming the field, and nothing is created; public IPv6 stays allowed.
func TestWebhookURLGuardIPv6(t *testing.T) {
	cfg := testConfig("sqlite:" + t.TempDir() + "/g6.db")
	cfg.WebhookAllowPrivate = false
	b := start(t, cfg)
	refused := []string{
		"http://[::127.0.0.1]/hook",                          // IPv4-compatible (RFC 4291)
		"http://[64:ff9b::7f00:1]/hook",                      // NAT64 (RFC 6052)
		"http://[64:ff9b:1::7f00:1]/hook",                    // local-use NAT64 (RFC 8215)
		"http://[2002:7f00:1::1]/hook",                       // 6to4 (RFC 3056) of 127.0.0.1
		"http://[2002:a9fe:a9fe::1]/hook",                    // 6to4 of 169.254.169.254
		"http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook", // Teredo (RFC 4380), client 10.0.0.1
		"http://[::ffff:127.0.0.1]/hook",                     // IPv4-mapped
		"http://[::ffff:0:a9fe:a9fe]/hook",                   // SIIT of 169.254.169.254
	}
	for _, u := range refused {
		expectFields(t, b.req("POST", "/v1/webhooks", b.key, map[string]any{"url": u, "events": []string{"call.ended"}}), 400, "url")
		tool := map[string]any{"name": "lookup", "description": "Looks up", "url": u, "parameters": map[string]any{"type": "object"}}
		expectFields(t, b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Tools", "tools": []any{tool}}), 400, "tools[0].url")
	}
	if l := b.must(200, "GET", "/v1/webhooks", nil).list(); len(l) != 0 {
		t.Errorf("GET /v1/webhooks after %d refused registrations = %d endpoints, want 0", len(refused), len(l))
	}
	for _, u := range []string{"https://[2606:4700:4700::1111]/hook", "https://[2002:5db8:d822::1]/hook"} {
		b.must(201, "POST", "/v1/webhooks", map[string]any{"url": u, "events": []string{"call.ended"}})
	}
}
