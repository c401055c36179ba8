package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeThrottleFlags: bad refusal-limit and proxy settings are refused
// naming the setting, and --metrics-addr starts the metrics listener
// without ever logging the metrics token.
func TestServeThrottleFlags(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "serve.db")
	var sink bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--trusted-proxies", "10.0.0.1,proxy.local"}, &sink, &sink); err == nil || !strings.Contains(err.Error(), "--trusted-proxies") || !strings.Contains(err.Error(), "proxy.local") {
		t.Errorf("serve --trusted-proxies 10.0.0.1,proxy.local: err = %v, want a refusal naming the flag and the entry", err)
	}
	t.Setenv("SWITCHBOARD_REFUSAL_LIMIT", "lots")
	if err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, &sink, &sink); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_REFUSAL_LIMIT") {
		t.Errorf("serve with SWITCHBOARD_REFUSAL_LIMIT=lots: err = %v, want one naming the variable", err)
	}
	t.Setenv("SWITCHBOARD_REFUSAL_LIMIT", "2")
	const token = "tok-9d1c0b7e55"
	t.Setenv("SWITCHBOARD_METRICS_TOKEN", token)
	out, logs := serveOnce(t, "--addr", "127.0.0.1:0", "--db", db, "--metrics-addr", "127.0.0.1:0", "--trusted-proxies", "127.0.0.1")
	if !strings.Contains(logs, `"msg":"serving metrics"`) || !strings.Contains(logs, `"token":true`) {
		t.Errorf("serve --metrics-addr: log lacks the metrics listener line:\n%s", logs)
	}
	if strings.Contains(logs, token) || strings.Contains(out, token) {
		t.Errorf("serve: the metrics token appears in the output")
	}
}
