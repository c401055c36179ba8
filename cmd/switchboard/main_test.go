package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), err
}

// serveOnce runs `serve` with args until it logs that it is serving, then
// stops it; it returns what serve wrote on stdout and stderr (its log).
func serveOnce(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// SIP on a free loopback port: tests run side by side, and 5060 may be taken.
	go func() { done <- run(ctx, append([]string{"serve", "--sip-addr", "127.0.0.1:0"}, args...), out, errb) }()
	// A minute: the server migrates a new database and starts its speech
	// engines first, which under -race on a loaded machine took over 10 s.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(errb.String(), `"msg":"serving"`); {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("serve: no \"serving\" log line after a minute:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestCLI: org create starts a new database (and key list refuses one
// that does not exist: TestCLIDatabase), every command then works on it,
// and org/key create print their result alone on the last line.
func TestCLI(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	if _, err := runCLI(t, "key", "list", "--org", "org_none", "--db", db); err == nil || !strings.Contains(err.Error(), "no database at") {
		t.Fatalf("key list on a database that does not exist: err = %v; want a refusal naming it", err)
	}
	out, err := runCLI(t, "org", "create", "--name", "Acme", "--db", db)
	if err != nil {
		t.Fatalf("org create: %v", err)
	}
	org := lastLine(out)
	if !strings.HasPrefix(org, "org_") || strings.Contains(org, " ") {
		t.Fatalf("org create last line = %q, want the id alone", org)
	}
	out, err = runCLI(t, "key", "create", "--org", org, "--scopes", "calls:read,phone:write", "--name", "ci", "--db", db)
	if err != nil {
		t.Fatalf("key create: %v", err)
	}
	key := lastLine(out)
	if !strings.HasPrefix(key, "sbk_") || strings.Contains(key, " ") {
		t.Fatalf("key create last line = %q, want the key alone", key)
	}
	list, err := runCLI(t, "key", "list", "--org", org, "--db", db)
	if err != nil || !strings.Contains(list, "calls:read,phone:write") {
		t.Fatalf("key list = %q, %v", list, err)
	}
	if strings.Contains(list, key) || strings.Contains(list, key[len(key)-10:]) {
		t.Errorf("key list shows the secret: %q", list)
	}
	kid := strings.Fields(strings.Split(list, "\n")[1])[0]
	if _, err := runCLI(t, "key", "revoke", kid, "--db", db); err != nil {
		t.Fatalf("key revoke %s: %v", kid, err)
	}
	if list, _ := runCLI(t, "key", "list", "--org", org, "--db", db); strings.Count(list, "\n") != 2 || strings.HasSuffix(strings.TrimSpace(list), "-") {
		t.Errorf("after revoke, key list = %q, want a revoked time", list)
	}
	if _, err := runCLI(t, "key", "create", "--org", org, "--scopes", "calls:read,admin", "--db", db); err == nil {
		t.Errorf("key create with an unknown scope succeeded")
	}
	if _, err := runCLI(t, "key", "create", "--org", "org_missing", "--scopes", "calls:read", "--db", db); err == nil {
		t.Errorf("key create for a missing org succeeded")
	}
	if _, err := runCLI(t, "migrate", "--db", "sqlite:"+filepath.Join(t.TempDir(), "m.db")); err != nil {
		t.Errorf("migrate on a new database: %v", err)
	}
	if out, err := runCLI(t, "version"); err != nil || !strings.HasPrefix(out, "switchboard ") {
		t.Errorf("version = %q, %v", out, err)
	}
	if _, err := runCLI(t, "frobnicate"); err == nil {
		t.Errorf("unknown command succeeded")
	}
}

// TestServeSpeech: serve reads the speech settings from the environment,
// starts with the providers they enable, says so in its startup log, and
// never writes a key to the log.
func TestServeSpeech(t *testing.T) {
	keys := map[string]string{
		"SWITCHBOARD_DEEPGRAM_API_KEY":      "dg-secret-3f9a71c2",
		"SWITCHBOARD_ELEVENLABS_API_KEY":    "el-secret-81b4d0e6",
		"SWITCHBOARD_SPEECH_OPENAI_API_KEY": "oa-secret-c05e2a99",
	}
	for k, v := range keys {
		t.Setenv(k, v)
	}
	t.Setenv("SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL", "http://127.0.0.1:9/v1")
	db := "sqlite:" + filepath.Join(t.TempDir(), "serve.db")
	out, logs := serveOnce(t, "--addr", "127.0.0.1:0", "--db", db)
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"speech providers"`) {
			line = l
		}
	}
	for _, want := range []string{`"transcribers":[`, `"deepgram"`, `"elevenlabs"`, `"openai_stt":"http://127.0.0.1:9/v1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("serve: speech providers log line = %q, want it to contain %s", line, want)
		}
	}
	if strings.Contains(line, `"openai_tts"`) {
		t.Errorf("serve: speech providers log line = %q: voice openai enabled although only the STT URL is set", line)
	}
	for env, key := range keys {
		if strings.Contains(logs, key) || strings.Contains(out, key) {
			t.Errorf("serve: the value of %s appears in the output:\n%s", env, logs)
		}
	}
	var sink bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--deepgram-base-url", "ftp://x"}, &sink, &sink); err == nil || !strings.Contains(err.Error(), "DeepgramBaseURL") {
		t.Errorf("serve --deepgram-base-url ftp://x: err = %v, want a refusal naming the setting", err)
	}
	t.Setenv("SWITCHBOARD_LOCAL_STT_DECODERS", "many")
	if err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, &sink, &sink); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_LOCAL_STT_DECODERS") {
		t.Errorf("serve with SWITCHBOARD_LOCAL_STT_DECODERS=many: err = %v, want one naming the variable", err)
	}
}

// lockedBuffer is a bytes.Buffer that a running server writes to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeFlagRefusals: bad SIP and analysis-model flags are refused
// naming the flag (an unconfigured provider says how to enable it); SIP
// off serves no SIP.
func TestServeFlagRefusals(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "sb.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sip-addr", "5060"}, "--sip-addr"},
		{[]string{"--sip-addr", "127.0.0.1:0", "--rtp-ports", "20000-10000"}, "--rtp-ports"},
		{[]string{"--sip-addr", "127.0.0.1:0", "--sip-public-ip", "nat.example.com"}, "--sip-public-ip"},
		{[]string{"--analysis-model", "gpt-4o-mini"}, "--analysis-model"},
		{[]string{"--analysis-model", "anthropic:claude"}, "--analysis-model: model provider \"anthropic\" is not configured on this server; "},
	} {
		var sink bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, tc.args...), &sink, &sink)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: err = %v, want a refusal naming %s", tc.args, err, tc.want)
		}
	}
	_, log := serveOnce(t, "--addr", "127.0.0.1:0", "--db", db, "--sip-addr", "off")
	if strings.Contains(log, "serving SIP") {
		t.Error("--sip-addr off served SIP")
	}
	_, log = serveOnce(t, "--addr", "127.0.0.1:0", "--db", "sqlite:"+filepath.Join(t.TempDir(), "sb2.db"))
	if !strings.Contains(log, "serving SIP") {
		t.Errorf("serve without --sip-addr off did not serve SIP:\n%s", log)
	}
}
